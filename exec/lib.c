/* lib.c -- loading a shared object of generated kernels from bytes (a
 * bundle's JN_CG_SEC_SO section) and looking its kernels up.
 *
 * The bytes go into an anonymous memory file (memfd_create) that dlopen
 * reads through /proc/self/fd/N, so nothing is left on disk; where memfd
 * is missing, a private temporary file is written, opened and unlinked at
 * once.  An object is refused unless it exports jn_kabi_version equal to
 * JN_KABI_VERSION and jn_kmodule_hash equal to the hash of the module the
 * caller runs (jn_cg_module_hash): kernels made for another module index
 * their operands differently and would read garbage.  RTLD_LOCAL keeps two
 * loaded objects (two bundles) from resolving each other's symbols.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jn_exec.h"

struct jn_ex_lib {
    void *handle;
};

/* Writes all of so to fd. */
static int write_all(int fd, const void *so, size_t len) {
    const char *p = so;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* dlopen of the bytes; NULL with *why set on failure. */
static void *open_bytes(const void *so, size_t len, const char **why) {
    char path[64];
    void *h = NULL;
#ifdef MFD_CLOEXEC
    int fd = memfd_create("janus-kernels", MFD_CLOEXEC);
    if (fd >= 0) {
        if (write_all(fd, so, len) == 0) {
            snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (!h) *why = dlerror();
        } else {
            *why = strerror(errno);
        }
        close(fd);
        if (h || *why) return h;
    }
#endif
    /* no memfd: a private file, gone from the directory before dlopen returns */
    const char *dir = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/janus-kernels-XXXXXX", dir && *dir ? dir : "/tmp");
    int tfd = mkstemp(tmpl);
    if (tfd < 0) {
        *why = strerror(errno);
        return NULL;
    }
    if (write_all(tfd, so, len) == 0) {
        h = dlopen(tmpl, RTLD_NOW | RTLD_LOCAL);
        if (!h) *why = dlerror();
    } else {
        *why = strerror(errno);
    }
    close(tfd);
    unlink(tmpl);
    return h;
}

jn_status jn_ex_lib_open(const void *so, size_t len, uint64_t module_hash, const char *origin,
                              jn_ex_lib **out) {
    *out = NULL;
    if (!origin) origin = "the kernel object";
    if (!so || len < 4 || memcmp(so, "\177ELF", 4) != 0)
        return jn_error(JN_ERR_VALUE, "compiled kernels of %s are not a shared object (%zu bytes, no ELF header): "
                        "re-run `janus optimize` to rebuild them", origin, len);
    const char *why = NULL;
    void *h = open_bytes(so, len, &why);
    if (!h)
        return jn_error(JN_ERR_VALUE, "compiled kernels of %s do not load (%s): re-run `janus optimize` on this "
                        "machine to rebuild them", origin, why ? why : "unknown reason");
    const int *abi = dlsym(h, "jn_kabi_version");
    const unsigned long long *hash = dlsym(h, "jn_kmodule_hash");
    jn_status st = JN_OK;
    if (!abi || !hash)
        st = jn_error(JN_ERR_VALUE, "compiled kernels of %s lack %s, so they were not made by janus's emitter: "
                      "re-run `janus optimize`", origin, !abi ? "jn_kabi_version" : "jn_kmodule_hash");
    else if (*abi != JN_KABI_VERSION)
        st = jn_error(JN_ERR_VALUE, "compiled kernels of %s use kernel ABI %d, this janus uses %d: re-run `janus "
                      "optimize` with this janus", origin, *abi, JN_KABI_VERSION);
    else if ((uint64_t)*hash != module_hash)
        st = jn_error(JN_ERR_VALUE, "compiled kernels of %s were built for another module (hash %016llx, the graphs "
                      "hash to %016llx): re-run `janus optimize` to rebuild them together", origin, *hash,
                      (unsigned long long)module_hash);
    jn_ex_lib *lib = st == JN_OK ? calloc(1, sizeof *lib) : NULL;
    if (st == JN_OK && !lib) st = jn_error(JN_ERR_NOMEM, "out of memory loading the kernels of %s", origin);
    if (st != JN_OK) {
        dlclose(h);
        return st;
    }
    lib->handle = h;
    *out = lib;
    return JN_OK;
}

void jn_ex_lib_close(jn_ex_lib *lib) {
    if (!lib) return;
    if (lib->handle) dlclose(lib->handle);
    free(lib);
}

jn_kfn jn_ex_lib_kernel(const jn_ex_lib *lib, int32_t gi, int32_t k) {
    if (!lib || !lib->handle) return NULL;
    char name[48];
    snprintf(name, sizeof name, "jn_k%d_%d", gi, k);
    void *p = dlsym(lib->handle, name);
    jn_kfn f;
    memcpy(&f, &p, sizeof f); /* object -> function pointer without a cast ISO C forbids */
    return f;
}
