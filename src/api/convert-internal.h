/* What the converters of a pod's config (convert-pod.c) and of a container's
 * (convert-container.c) share: the checks every client string passes (convert.c) and the
 * security profiles both kinds name. No one else includes it. */
#pragma once

#include "convert.h"

/* What a string may not be, beyond length and UTF-8. */
typedef enum check_flags {
        CHECK_REQUIRED = 1 << 0,
        CHECK_ABSOLUTE = 1 << 1,  /* an absolute path */
        CHECK_RELATIVE = 1 << 2,  /* a relative path */
        CHECK_NO_DOTDOT = 1 << 3, /* no ".." component: it becomes a path we create */
        CHECK_NO_COMMA = 1 << 4,  /* rkt splits the flag's value on commas */
        CHECK_NO_DASH = 1 << 5,   /* could be read as a flag */
        CHECK_NO_SPACE = 1 << 6,
} check_flags;

/* s checked against its bound, UTF-8 and f; -EINVAL naming field. */
int rkl_api__check(const char *field, const char *s, size_t max, check_flags f, rkl_error *reterr);
/* Copies a checked list; -EINVAL naming field[i] otherwise. */
int rkl_api__strv_from(const char *field, char **in, size_t n, size_t max_n, size_t max_len,
                       check_flags f, char ***ret, rkl_error *reterr);
/* Label and annotation maps: keys unique (protobuf maps keep the last), values as given. */
#define KVS_FROM(field, entries, n, ret, reterr)                                                   \
        ({                                                                                         \
                int _r = 0;                                                                        \
                if ((n) > RKL_MAX_KV)                                                              \
                        _r = rkl_error_set(reterr, -EINVAL, "%s: more than %d entries", field,     \
                                           RKL_MAX_KV);                                            \
                for (size_t _i = 0; _r == 0 && _i < (n); _i++) {                                   \
                        char _f[160];                                                              \
                        (void)snprintf(_f, sizeof(_f), "%s key '%.100s'", field,                   \
                                       (entries)[_i]->key);                                        \
                        _r = rkl_api__check(_f, (entries)[_i]->key, RKL_MAX_KEY, CHECK_REQUIRED,   \
                                            reterr);                                               \
                        if (_r == 0)                                                               \
                                _r = rkl_api__check(_f, (entries)[_i]->value, RKL_MAX_VALUE, 0,    \
                                                    reterr);                                       \
                        if (_r == 0 && rkl_kvs_get(ret, (entries)[_i]->key))                       \
                                _r = rkl_error_set(reterr, -EINVAL, "%s: duplicate key", _f);      \
                        if (_r == 0)                                                               \
                                rkl_kvs_add(ret, (entries)[_i]->key, (entries)[_i]->value);        \
                }                                                                                  \
                _r;                                                                                \
        })

/* Labels and annotations are answered in every List and Status: without a cap, a few
 * sandboxes of megabytes each made every unfiltered List larger than a client takes. */
int rkl_api__metadata_check(const char *field, const rkl_kvs *l, rkl_error *reterr);

/* SELinux options rkt cannot honour: its stage1 applies no labels. Where the machine has no
 * SELinux they label nothing on any runtime, and are taken as containerd and CRI-O take
 * them (kubelet and Kubernetes' own tests give pods a level everywhere). */
bool rkl_api__selinux_refused(const Runtime__V1__SELinuxOption *o);
/* rkt's stage1 has no AppArmor profile of its own and rktlet loads none: the runtime's default
 * and unconfined are the same here, a named profile cannot be honoured. */
int rkl_api__apparmor_check(const Runtime__V1__SecurityProfile *p, const char *path,
                            const char *field, rkl_error *reterr);
/* The profile a SecurityProfile or the deprecated *_profile_path string names:
 * RKL_SECCOMP_* and, for Localhost, the path. An absent one is unconfined (CRI's default for
 * the deprecated field, and containerd's). */
int rkl_api__seccomp_kind(const Runtime__V1__SecurityProfile *p, const char *path,
                          const char *field, rkl_seccomp *ret, const char **ret_ref,
                          rkl_error *reterr);
