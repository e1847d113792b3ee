/* The checks every client string of a CRI config passes (CONTRIBUTING.md, 'Validation'), and
 * the security profiles a pod and a container both name; the pod's config is converted in
 * convert-pod.c, the container's in convert-container.c (convert-internal.h). */
#include "convert-internal.h"

#include "base/alloc.h"
#include "base/strv.h"
#include "base/utf8.h"
#include "base/selinux.h"
#include "base/banned.h"

static bool has_dotdot(const char *p)
{
        for (const char *s = p; (s = strstr(s, "..")); s += 2)
                if ((s == p || s[-1] == '/') && (s[2] == 0 || s[2] == '/'))
                        return true;
        return false;
}

int rkl_api__check(const char *field, const char *s, size_t max, check_flags f, rkl_error *reterr)
{
        size_t n = s ? strlen(s) : 0;
        if (n == 0)
                return (f & CHECK_REQUIRED) ? rkl_error_set(reterr, -EINVAL, "%s: required", field)
                                            : 0;
        if (n > max)
                return rkl_error_set(reterr, -EINVAL, "%s: longer than %zu bytes", field, max);
        if (!rkl_utf8_is_valid(s, n))
                return rkl_error_set(reterr, -EINVAL, "%s: not valid UTF-8", field);
        if ((f & CHECK_ABSOLUTE) && s[0] != '/')
                return rkl_error_set(reterr, -EINVAL, "%s: '%s' is not an absolute path", field, s);
        if ((f & CHECK_RELATIVE) && s[0] == '/')
                return rkl_error_set(reterr, -EINVAL, "%s: '%s' must be a relative path", field, s);
        if ((f & CHECK_NO_DOTDOT) && has_dotdot(s))
                return rkl_error_set(reterr, -EINVAL, "%s: '%s' contains '..'", field, s);
        if ((f & CHECK_NO_COMMA) && strchr(s, ','))
                return rkl_error_set(reterr, -EINVAL, "%s: '%s' contains ','", field, s);
        if ((f & CHECK_NO_DASH) && s[0] == '-')
                return rkl_error_set(reterr, -EINVAL, "%s: '%s' starts with '-'", field, s);
        if ((f & CHECK_NO_SPACE) && strpbrk(s, " \t\r\n"))
                return rkl_error_set(reterr, -EINVAL, "%s: '%s' contains white space", field, s);
        for (const char *p = s; *p; p++)
                if ((unsigned char)*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r' &&
                    !(f & CHECK_NO_SPACE))
                        return rkl_error_set(reterr, -EINVAL, "%s: contains control characters",
                                             field);
        return 0;
}

int rkl_api_check_string(const char *field, const char *s, size_t max, bool required,
                         rkl_error *reterr)
{
        return rkl_api__check(field, s, max, required ? CHECK_REQUIRED : 0, reterr);
}

int rkl_api__strv_from(const char *field, char **in, size_t n, size_t max_n, size_t max_len,
                       check_flags f, char ***ret, rkl_error *reterr)
{
        _cleanup_strv_free_ char **l = NULL;
        if (n > max_n)
                return rkl_error_set(reterr, -EINVAL, "%s: more than %zu entries", field, max_n);
        for (size_t i = 0; i < n; i++) {
                char name[128];
                (void)snprintf(name, sizeof(name), "%s[%zu]", field, i);
                int r = rkl_api__check(name, in[i], max_len, f, reterr);
                if (r < 0)
                        return r;
                rkl_strv_push(&l, in[i]);
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int rkl_api__metadata_check(const char *field, const rkl_kvs *l, rkl_error *reterr)
{
        size_t n = 0;
        for (size_t i = 0; i < l->n; i++)
                n += strlen(l->items[i].key) + strlen(l->items[i].value);
        if (n > RKL_MAX_KV_BYTES)
                return rkl_error_set(reterr, -EINVAL,
                                     "%s: %zu bytes of keys and values, more than %d (256 KiB, "
                                     "Kubernetes' limit on an object's annotations)",
                                     field, n, RKL_MAX_KV_BYTES);
        return 0;
}

bool rkl_api__selinux_refused(const Runtime__V1__SELinuxOption *o)
{
        return o &&
               (!isempty(o->user) || !isempty(o->role) || !isempty(o->type) ||
                !isempty(o->level)) &&
               rkl_selinux_enabled();
}

int rkl_api__apparmor_check(const Runtime__V1__SecurityProfile *p, const char *path,
                            const char *field, rkl_error *reterr)
{
        if (p) {
                if (p->profile_type ==
                        RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault ||
                    p->profile_type == RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined)
                        return 0;
                return rkl_error_set(reterr, -EINVAL,
                                     "%s.apparmor: rktlet applies no AppArmor profile (only "
                                     "RuntimeDefault and Unconfined, which are the same here)",
                                     field);
        }
        if (isempty(path) || streq(path, "runtime/default") || streq(path, "unconfined"))
                return 0;
        return rkl_error_set(reterr, -EINVAL,
                             "%s.apparmor_profile: '%.64s': rktlet applies no AppArmor profile "
                             "(only runtime/default and unconfined)",
                             field, path);
}

int rkl_api__seccomp_kind(const Runtime__V1__SecurityProfile *p, const char *path,
                          const char *field, rkl_seccomp *ret, const char **ret_ref,
                          rkl_error *reterr)
{
        *ret_ref = NULL;
        if (p) {
                switch (p->profile_type) {
                case RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault:
                        *ret = RKL_SECCOMP_RUNTIME_DEFAULT;
                        return 0;
                case RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined:
                        *ret = RKL_SECCOMP_UNCONFINED;
                        return 0;
                case RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost:
                        *ret = RKL_SECCOMP_LOCALHOST;
                        *ret_ref = p->localhost_ref;
                        return 0;
                default:
                        return rkl_error_set(reterr, -EINVAL,
                                             "%s.seccomp.profile_type: unknown value %d", field,
                                             (int)p->profile_type);
                }
        }
        if (isempty(path) || streq(path, "unconfined")) {
                *ret = RKL_SECCOMP_UNCONFINED;
                return 0;
        }
        if (streq(path, "runtime/default") || streq(path, "docker/default")) {
                *ret = RKL_SECCOMP_RUNTIME_DEFAULT;
                return 0;
        }
        if (strncmp(path, "localhost/", 10) == 0) {
                *ret = RKL_SECCOMP_LOCALHOST;
                *ret_ref = path + 10;
                return 0;
        }
        return rkl_error_set(reterr, -EINVAL,
                             "%s.seccomp_profile_path: '%.64s' is none of runtime/default, "
                             "docker/default, unconfined, localhost/<absolute path>",
                             field, path);
}
