/* test_replay_config.c -- a replay's config from the settings table
 * (jn_rp_config_from_env, replay/replay.c): the defaults, every switch
 * spelling meaning what it says (JANUS_REPLAY_STRICT=off is off), adapt off
 * under debug unless asked for, and a refused value returned with
 * jn_setting's message naming the variable.  Also what jn_rp_new refuses
 * before it loads anything: a second replay (the runtime has one capture
 * hook) and a store that does not open, with nothing left installed. */
#include <stdlib.h>

#include "jn_replay.h"
#include "jn_test.h"

static const char *const VARS[] = {"JANUS_REPLAY_STRICT", "JANUS_REPLAY_SPECULATE", "JANUS_REPLAY_DEFER",
                                   "JANUS_REPLAY_DEBUG",  "JANUS_REPLAY_ADAPT",     "JANUS_REPLAY_ADAPT_MARGIN",
                                   "JANUS_MATCH_DUMP"};

static void clear_env(void) {
    for (size_t i = 0; i < sizeof VARS / sizeof *VARS; i++) unsetenv(VARS[i]);
}

static int is_default(const jn_rp_config *c) {
    return !c->strict && !c->speculate && c->defer && !c->debug && c->adapt && c->margin == 0.10 && !c->match_dump &&
           !c->cuda_runner && !c->cuda_stream && !c->algos_device;
}

static void test_defaults_and_spellings(void) {
    jn_rp_config c;
    clear_env();
    CHECK(jn_rp_config_from_env(&c) == JN_OK && is_default(&c));
    jn_rp_config d;
    jn_rp_config_default(&d);
    CHECK(is_default(&d));
    /* off means off: "off" and "false" turned strict and quiet on before */
    setenv("JANUS_REPLAY_STRICT", "off", 1);
    setenv("JANUS_REPLAY_SPECULATE", "false", 1);
    setenv("JANUS_REPLAY_DEFER", "no", 1);
    setenv("JANUS_MATCH_DUMP", "0", 1); /* any value turned the dump on before */
    CHECK(jn_rp_config_from_env(&c) == JN_OK && !c.strict && !c.speculate && !c.defer && !c.match_dump);
    setenv("JANUS_REPLAY_STRICT", "ON", 1);
    setenv("JANUS_REPLAY_SPECULATE", "yes", 1);
    setenv("JANUS_REPLAY_DEFER", "true", 1);
    setenv("JANUS_REPLAY_ADAPT_MARGIN", "-0.5", 1);
    setenv("JANUS_MATCH_DUMP", "1", 1);
    CHECK(jn_rp_config_from_env(&c) == JN_OK && c.strict && c.speculate && c.defer && c.margin == -0.5 &&
          c.match_dump && c.adapt);
    clear_env();
}

static void test_debug_turns_adapt_off(void) {
    jn_rp_config c;
    clear_env();
    setenv("JANUS_REPLAY_DEBUG", "1", 1);
    CHECK(jn_rp_config_from_env(&c) == JN_OK && c.debug && !c.adapt);
    setenv("JANUS_REPLAY_ADAPT", "1", 1); /* asked for: timed although the prints are */
    CHECK(jn_rp_config_from_env(&c) == JN_OK && c.debug && c.adapt);
    setenv("JANUS_REPLAY_DEBUG", "off", 1);
    unsetenv("JANUS_REPLAY_ADAPT");
    CHECK(jn_rp_config_from_env(&c) == JN_OK && !c.debug && c.adapt);
    clear_env();
}

/* each refused value: JN_ERR_VALUE, the setting's message, the defaults */
static void refused(const char *var, const char *value, const char *msg) {
    clear_env();
    setenv(var, value, 1);
    jn_rp_config c;
    c.strict = 7;
    CHECK(jn_rp_config_from_env(&c) == JN_ERR_VALUE);
    CHECK(strstr(jn_errmsg(), msg) != NULL);
    if (!strstr(jn_errmsg(), msg)) fprintf(stderr, "  got: %s\n", jn_errmsg());
    CHECK(is_default(&c));
    clear_env();
}

static void test_refusals(void) {
    refused("JANUS_REPLAY_ADAPT", "maybe",
            "JANUS_REPLAY_ADAPT=maybe is not a switch: use 1/yes/true/on or 0/no/false/off");
    refused("JANUS_REPLAY_STRICT", "2", "JANUS_REPLAY_STRICT=2 is not a switch");
    refused("JANUS_REPLAY_DEBUG", "verbose", "JANUS_REPLAY_DEBUG=verbose is not a switch");
    refused("JANUS_REPLAY_DEFER", "later", "JANUS_REPLAY_DEFER=later is not a switch");
    refused("JANUS_REPLAY_SPECULATE", "maybe", "JANUS_REPLAY_SPECULATE=maybe is not a switch");
    refused("JANUS_MATCH_DUMP", "all", "JANUS_MATCH_DUMP=all is not a switch");
    refused("JANUS_REPLAY_ADAPT_MARGIN", "abc", "JANUS_REPLAY_ADAPT_MARGIN=abc is not a number");
    refused("JANUS_REPLAY_ADAPT_MARGIN", "nan", "JANUS_REPLAY_ADAPT_MARGIN=nan is not a number");
    refused("JANUS_REPLAY_ADAPT_MARGIN", "0.1x", "JANUS_REPLAY_ADAPT_MARGIN=0.1x is not a number");
    refused("JANUS_REPLAY_ADAPT_MARGIN", "-1", "JANUS_REPLAY_ADAPT_MARGIN=-1 is out of range");
}

static jn_status no_capture(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                            jn_tensor *const *out, int into) {
    (void)ctx, (void)op, (void)nin, (void)in, (void)a, (void)nout, (void)out, (void)into;
    return JN_OK;
}

static void test_new_refusals(void) {
    jn_rp_config c;
    jn_rp_config_default(&c);
    jn_replay *r = (jn_replay *)&c; /* overwritten with NULL on a refusal */
    CHECK(jn_rp_new("/nonexistent/dir/run.db", 0, &c, &r) != JN_OK && r == NULL);
    CHECK(!jn_rt_capture_hook_installed() && !jn_dispatch_hook_installed());
    /* the runtime's one capture hook is taken: a second replay is refused */
    jn_rt_capture_hook h = {.capture = no_capture, .device = JN_CPU};
    jn_rt_set_capture_hook(&h);
    CHECK(jn_rt_capture_hook_installed());
    CHECK(jn_rp_new("/nonexistent/dir/run.db", 0, &c, &r) == JN_ERR_RUNTIME && r == NULL);
    CHECK(strstr(jn_errmsg(), "a replay is already running") != NULL);
    jn_rt_set_capture_hook(NULL);
    CHECK(!jn_rt_capture_hook_installed());
    jn_rp_free(NULL); /* NULL-safe */
}

int main(void) {
    test_defaults_and_spellings();
    test_debug_turns_adapt_off();
    test_refusals();
    test_new_refusals();
    JT_DONE();
}
