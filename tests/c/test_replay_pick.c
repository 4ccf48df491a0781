/* test_replay_pick.c -- which CUDA bundle replay loads for a device
 * (jn_rt_replay_pick_cuda, runtime/exec/replay.c): the device's own arch
 * over every other, else the newest CUDA target, never a cpu one.  The
 * messages around it (no driver, stub, other arch) are checked end to end
 * by tests/python/test_replay_gpu.py. */
#include <string.h>

#include "jn_replay.h"
#include "jn_test.h"

int main(void) {
    const char *pick = NULL;
    const char *t1[] = {"cpu", "cuda:sm_80", "cuda:sm_90", "cuda:sm_100"};
    CHECK(jn_rt_replay_pick_cuda(t1, 4, 9, 0, &pick) == JN_OK && pick && !strcmp(pick, "cuda:sm_90"));
    CHECK(jn_rt_replay_pick_cuda(t1, 4, 8, 0, &pick) == JN_OK && pick && !strcmp(pick, "cuda:sm_80"));
    CHECK(jn_rt_replay_pick_cuda(t1, 4, 10, 0, &pick) == JN_OK && pick && !strcmp(pick, "cuda:sm_100"));
    /* no exact one: the newest (the list is oldest first) */
    CHECK(jn_rt_replay_pick_cuda(t1, 4, 8, 9, &pick) == JN_OK && pick && !strcmp(pick, "cuda:sm_100"));
    const char *t2[] = {"cuda:sm_90", "cpu"};
    CHECK(jn_rt_replay_pick_cuda(t2, 2, 12, 0, &pick) == JN_OK && pick && !strcmp(pick, "cuda:sm_90"));
    /* cpu only, or nothing: none */
    const char *t3[] = {"cpu"};
    CHECK(jn_rt_replay_pick_cuda(t3, 1, 9, 0, &pick) != JN_OK && pick == NULL);
    CHECK(jn_rt_replay_pick_cuda(t3, 0, 9, 0, &pick) != JN_OK && pick == NULL);
    JT_DONE();
}
