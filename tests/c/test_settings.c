/* test_settings.c -- the JANUS_* settings table and its one parser
 * (runtime/jn_settings.h): defaults, every accepted spelling of a switch,
 * ranges, choices, and a refusal that names the variable for each kind of
 * bad value. */
#include <stdlib.h>

#include "jn_settings.h"
#include "jn_test.h"

static void test_table(void) {
    CHECK(jn_setting_find("JANUS_REPLAY_STRICT") == JN_S_REPLAY_STRICT);
    CHECK(jn_setting_find("REPLAY_STRICT") == JN_S_REPLAY_STRICT);
    CHECK(jn_setting_find("JANUS_NO_SUCH") == -1);
    for (int s = 0; s < JN_S__COUNT; s++) {
        const jn_setting_info *r = jn_setting_info_of((jn_setting)s);
        CHECK(!strncmp(r->name, "JANUS_", 6) && *r->doc && *r->readers);
        /* a default must parse as its own row */
        if (*r->dflt) {
            int b;
            int64_t i;
            double f;
            CHECK(jn_setting_parse((jn_setting)s, r->dflt, &b, &i, &f) == JN_OK);
        }
        if (r->type == JN_ST_INT || r->type == JN_ST_FLOAT) CHECK(strstr(r->range, "..") != NULL);
        if (r->type == JN_ST_CHOICE) CHECK(*r->range);
    }
}

static void test_bool(void) {
    int b = -1;
    unsetenv("JANUS_REPLAY_STRICT");
    CHECK(jn_setting_bool(JN_S_REPLAY_STRICT, &b) == JN_OK && b == 0);
    setenv("JANUS_REPLAY_STRICT", "", 1); /* empty: the default */
    CHECK(jn_setting_bool(JN_S_REPLAY_STRICT, &b) == JN_OK && b == 0);
    const char *on[] = {"1", "yes", "TRUE", "On"}, *off[] = {"0", "No", "false", "OFF"};
    for (int k = 0; k < 4; k++) {
        setenv("JANUS_REPLAY_STRICT", on[k], 1);
        CHECK(jn_setting_bool(JN_S_REPLAY_STRICT, &b) == JN_OK && b == 1);
        setenv("JANUS_REPLAY_STRICT", off[k], 1); /* off means off (was: any value turned strict on) */
        CHECK(jn_setting_bool(JN_S_REPLAY_STRICT, &b) == JN_OK && b == 0);
    }
    setenv("JANUS_REPLAY_STRICT", "maybe", 1);
    CHECK(jn_setting_bool(JN_S_REPLAY_STRICT, &b) == JN_ERR_VALUE);
    CHECK(has("JANUS_REPLAY_STRICT=maybe") && has("1/yes/true/on"));
    unsetenv("JANUS_REPLAY_STRICT");
    CHECK(jn_setting_bool(JN_S_REPLAY_DEFER, &b) == JN_OK && b == 1); /* default on */
}

static void test_numbers(void) {
    int64_t i = -1;
    double f = -1;
    unsetenv("JANUS_CACHE_MB");
    CHECK(jn_setting_int(JN_S_CACHE_MB, &i) == JN_OK && i == 512);
    setenv("JANUS_CACHE_MB", "64", 1);
    CHECK(jn_setting_int(JN_S_CACHE_MB, &i) == JN_OK && i == 64);
    const char *bad[] = {"abc", "12x", " 5", "1.5", "-1", "99999999999999999999999"};
    for (int k = 0; k < 6; k++) {
        setenv("JANUS_CACHE_MB", bad[k], 1);
        CHECK(jn_setting_int(JN_S_CACHE_MB, &i) == JN_ERR_VALUE);
        CHECK(has("JANUS_CACHE_MB="));
    }
    CHECK(has("0..1048576") || has("whole number"));
    unsetenv("JANUS_CACHE_MB");
    unsetenv("JANUS_NUM_THREADS"); /* no default: the reader decides (0 here) */
    CHECK(jn_setting_int(JN_S_NUM_THREADS, &i) == JN_OK && i == 0);
    setenv("JANUS_NUM_THREADS", "0", 1);
    CHECK(jn_setting_int(JN_S_NUM_THREADS, &i) == JN_ERR_VALUE && has("out of range") && has("1..1024"));
    unsetenv("JANUS_NUM_THREADS");
    CHECK(jn_setting_float(JN_S_REPLAY_ADAPT_MARGIN, &f) == JN_OK && f == 0.10);
    setenv("JANUS_REPLAY_ADAPT_MARGIN", "-1", 1);
    CHECK(jn_setting_float(JN_S_REPLAY_ADAPT_MARGIN, &f) == JN_ERR_VALUE && has("JANUS_REPLAY_ADAPT_MARGIN=-1"));
    setenv("JANUS_REPLAY_ADAPT_MARGIN", "nan", 1);
    CHECK(jn_setting_float(JN_S_REPLAY_ADAPT_MARGIN, &f) == JN_ERR_VALUE);
    setenv("JANUS_REPLAY_ADAPT_MARGIN", "0.25", 1);
    CHECK(jn_setting_float(JN_S_REPLAY_ADAPT_MARGIN, &f) == JN_OK && f == 0.25);
    unsetenv("JANUS_REPLAY_ADAPT_MARGIN");
}

static void test_text(void) {
    const char *v = NULL;
    unsetenv("JANUS_AN_SELFCHECK");
    CHECK(jn_setting_str(JN_S_AN_SELFCHECK, &v) == JN_OK && !strcmp(v, ""));
    setenv("JANUS_AN_SELFCHECK", "all", 1);
    CHECK(jn_setting_str(JN_S_AN_SELFCHECK, &v) == JN_OK && !strcmp(v, "all"));
    setenv("JANUS_AN_SELFCHECK", "al", 1);
    CHECK(jn_setting_str(JN_S_AN_SELFCHECK, &v) == JN_ERR_VALUE && has("JANUS_AN_SELFCHECK=al is not one of all"));
    unsetenv("JANUS_AN_SELFCHECK");
    setenv("JANUS_SKIP_PASSES", "fuse,plan", 1);
    CHECK(jn_setting_str(JN_S_SKIP_PASSES, &v) == JN_OK && !strcmp(v, "fuse,plan"));
    unsetenv("JANUS_SKIP_PASSES");
}

static void test_print(void) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    setenv("JANUS_REPLAY_QUIET", "perhaps", 1);
    int bad = jn_setting_print(f, 1u << JN_SK_USER);
    fclose(f);
    CHECK(bad == 1);
    CHECK(buf && strstr(buf, "JANUS_NUM_THREADS") && strstr(buf, "now: perhaps -- REFUSED"));
    CHECK(buf && !strstr(buf, "JANUS_LIBCUDA")); /* a test hook: not a user setting */
    free(buf);
    unsetenv("JANUS_REPLAY_QUIET");
}

int main(void) {
    test_table();
    test_bool();
    test_numbers();
    test_text();
    test_print();
    JT_DONE();
}
