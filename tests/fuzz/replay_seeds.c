/* replay_seeds.c -- a main() for a libFuzzer harness without libFuzzer:
 * runs LLVMFuzzerTestOneInput once on every file of the directories (or
 * files) on the command line, so the normal build and its sanitizer build
 * check that each harness compiles and passes its committed seed corpus
 * (tests/fuzz/<target>/seeds/, crash reproducers included) without clang's
 * fuzzer runtime.  scripts/fuzz.sh links the same harness with libFuzzer
 * instead.  A harness that finds a bug aborts (sanitizer or assert), so the
 * ctest fails; an empty or missing corpus fails too.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path);
        return 0;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) return 0;
    /* an exact-size copy, so a read past the end is caught */
    uint8_t *exact = malloc(n ? n : 1);
    if (exact) memcpy(exact, buf, n);
    free(buf);
    if (!exact) return 0;
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int files = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "%s: no such file or directory\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            files += run_file(argv[i]);
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) continue;
        char **names = NULL;
        size_t nn = 0;
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            char **nv = realloc(names, (nn + 1) * sizeof *names);
            if (!nv) break;
            names = nv;
            names[nn++] = strdup(e->d_name);
        }
        closedir(d);
        qsort(names, nn, sizeof *names, cmp_str); /* a fixed order */
        for (size_t k = 0; k < nn; k++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], names[k]);
            files += run_file(p);
            free(names[k]);
        }
        free(names);
    }
    printf("%s: %d inputs ran\n", argc > 1 ? argv[1] : "(none)", files);
    return files > 0 ? 0 : 1;
}
