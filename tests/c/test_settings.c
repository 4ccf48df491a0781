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
        if (r->type == JN_ST_INT) { /* both ends accepted, one past each refused (was: "1..1024" took 1..24) */
            long long lo = (long long)strtod(r->range, NULL), hi = (long long)strtod(strstr(r->range, "..") + 2, NULL);
            char t[4][32];
            snprintf(t[0], 32, "%lld", lo), snprintf(t[1], 32, "%lld", hi);
            snprintf(t[2], 32, "%lld", lo - 1), snprintf(t[3], 32, "%lld", hi + 1);
            int b;
            int64_t i = -1;
            double f;
            CHECK(jn_setting_parse((jn_setting)s, t[0], &b, &i, &f) == JN_OK && i == lo);
            CHECK(jn_setting_parse((jn_setting)s, t[1], &b, &i, &f) == JN_OK && i == hi);
            CHECK(jn_setting_parse((jn_setting)s, t[2], &b, &i, &f) == JN_ERR_VALUE && has("out of range"));
            CHECK(jn_setting_parse((jn_setting)s, t[3], &b, &i, &f) == JN_ERR_VALUE && has("out of range"));
        }
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
    buf = NULL;
    f = open_memstream(&buf, &n);
    CHECK(jn_setting_print(f, ~0u) == 1);
    fclose(f);
    CHECK(buf && strstr(buf, "JANUS_LIBCUDA") && strstr(buf, "-- test:") && strstr(buf, "-- child:"));
    free(buf);
    unsetenv("JANUS_REPLAY_QUIET");
}

/* jn_setting_check: what `import janus` and the janus command run first */
static void test_check(void) {
    CHECK(jn_setting_check(~0u) == JN_OK);
    setenv("JANUS_CACHE_MB", "lots", 1); /* a USER row */
    CHECK(jn_setting_check(JN_SETTING_CHECKED) == JN_ERR_VALUE && has("JANUS_CACHE_MB=lots"));
    CHECK(jn_setting_check(1u << JN_SK_TEST) == JN_OK); /* other kinds are not looked at */
    unsetenv("JANUS_CACHE_MB");
    setenv("JANUS_PLAN_LIVE", "2", 1); /* a TEST row */
    CHECK(jn_setting_check(JN_SETTING_CHECKED) == JN_ERR_VALUE && has("JANUS_PLAN_LIVE=2"));
    unsetenv("JANUS_PLAN_LIVE");
    setenv("JANUS_RECORD_RUN", "abc", 1); /* CHILD rows: their readers decide (the recorder runs unrecorded) */
    CHECK(jn_setting_check(JN_SETTING_CHECKED) == JN_OK);
    CHECK(jn_setting_check(1u << JN_SK_CHILD) == JN_ERR_VALUE && has("JANUS_RECORD_RUN=abc"));
    unsetenv("JANUS_RECORD_RUN");
    CHECK(!strcmp(jn_setting_kind_name(JN_SK_CHILD), "child") && !strcmp(jn_setting_type_name(JN_ST_LIST), "list"));
}

/* jn_setting_int_lazy: the value, else the row's default (0 when none) */
static void test_lazy(void) {
    setenv("JANUS_CACHE_MB", "64", 1);
    CHECK(jn_setting_int_lazy(JN_S_CACHE_MB) == 64);
    setenv("JANUS_CACHE_MB", "-5", 1); /* refused: one stderr line, the default */
    CHECK(jn_setting_int_lazy(JN_S_CACHE_MB) == 512);
    unsetenv("JANUS_CACHE_MB");
    CHECK(jn_setting_int_lazy(JN_S_CACHE_MB) == 512);
    setenv("JANUS_NUM_THREADS", "100000", 1); /* refused, no default: 0 (the reader's own) */
    CHECK(jn_setting_int_lazy(JN_S_NUM_THREADS) == 0);
    setenv("JANUS_NUM_THREADS", "abc", 1);
    CHECK(jn_setting_int_lazy(JN_S_NUM_THREADS) == 0);
    setenv("JANUS_NUM_THREADS", "3", 1);
    CHECK(jn_setting_int_lazy(JN_S_NUM_THREADS) == 3);
    unsetenv("JANUS_NUM_THREADS");
}

int main(void) {
    test_table();
    test_check();
    test_lazy();
    test_bool();
    test_numbers();
    test_text();
    test_print();
    JT_DONE();
}
