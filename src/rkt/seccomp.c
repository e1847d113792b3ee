/* A localhost seccomp profile (the OCI/Docker JSON format) as systemd's SystemCallFilter= for
 * the app's unit: systemd compiles it with libseccomp when it starts the app. Only what maps
 * exactly is taken: one action for the listed syscalls and the other for the rest, no
 * argument conditions; anything else is refused, never approximated. */
#include "command.h"

#include <errno.h>
#include <inttypes.h>

#include "base/json.h"
#include "base/alloc.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/banned.h"

#define MAX_PROFILE (1 << 20)

typedef enum action {
        ACT_ALLOW,
        ACT_ERRNO,
        ACT_KILL,
        ACT_OTHER,
} action;

static action action_from(const char *s)
{
        if (!s)
                return ACT_OTHER;
        if (streq(s, "SCMP_ACT_ALLOW"))
                return ACT_ALLOW;
        if (streq(s, "SCMP_ACT_ERRNO"))
                return ACT_ERRNO;
        if (streq(s, "SCMP_ACT_KILL") || streq(s, "SCMP_ACT_KILL_PROCESS") ||
            streq(s, "SCMP_ACT_KILL_THREAD"))
                return ACT_KILL;
        return ACT_OTHER;
}

/* An array member, or NULL when absent; an empty object counts as absent. */
static bool has_content(json_object *o, const char *key)
{
        json_object *v = NULL;
        if (!json_object_object_get_ex(o, key, &v) || !v)
                return false;
        if (json_object_is_type(v, json_type_array))
                return json_object_array_length(v) > 0;
        if (json_object_is_type(v, json_type_object))
                return json_object_object_length(v) > 0;
        return true;
}

/* The errno an ERRNO action gives: its errnoRet, else EPERM as runc does. */
static int errno_of(json_object *o, const char *key, int64_t *ret, rkl_error *reterr)
{
        json_object *v = NULL;
        if (!json_object_object_get_ex(o, key, &v) || !v) {
                *ret = EPERM;
                return 0;
        }
        int r = rkl_json_get_int(o, key, ret, reterr);
        if (r < 0)
                return r;
        if (*ret <= 0 || *ret > RKL_MAX_ERRNO)
                return rkl_error_set(reterr, -EINVAL, "%s: %" PRIi64 " is not an errno", key, *ret);
        return 0;
}

/* What a profile says: its default action, the one other action its syscalls take, their
 * errno, their names. */
typedef struct profile {
        action dflt, listed;
        int64_t err_no;
        bool have_errno;
        char **names;
} profile;

static void profile_done(profile *p)
{
        rkl_strv_free(p->names);
}

/* The names of syscalls[i] (c): "name", then "names". */
static int rule_names(profile *p, json_object *c, size_t i, rkl_error *reterr)
{
        json_object *n = NULL;
        const char *one = NULL;
        int r = rkl_json_get_string(c, "name", 64, &one, reterr);
        if (r < 0)
                return r;
        if (one)
                rkl_strv_push(&p->names, one);
        if (!json_object_object_get_ex(c, "names", &n) || !n)
                return 0;
        if (!json_object_is_type(n, json_type_array))
                return rkl_error_set(reterr, -EINVAL, "syscalls[%zu].names: not an array", i);
        for (size_t k = 0; k < json_object_array_length(n); k++) {
                json_object *s = json_object_array_get_idx(n, k);
                if (!json_object_is_type(s, json_type_string))
                        return rkl_error_set(reterr, -EINVAL, "syscalls[%zu].names: not strings",
                                             i);
                rkl_strv_push(&p->names, json_object_get_string(s));
        }
        return 0;
}

/* syscalls[i] (c), whose action must be the one every listed syscall takes. */
static int rule_add(profile *p, json_object *c, size_t i, rkl_error *reterr)
{
        const char *act = NULL;
        int64_t e;
        int r;

        if (!json_object_is_type(c, json_type_object))
                return rkl_error_set(reterr, -EINVAL, "syscalls[%zu]: not an object", i);
        r = rkl_json_get_string(c, "action", 64, &act, reterr);
        if (r < 0)
                return r;
        action a = action_from(act);
        if (a == ACT_OTHER || a == p->dflt || (p->listed != ACT_OTHER && a != p->listed))
                return rkl_error_set(reterr, -EINVAL,
                                     "syscalls[%zu]: action '%s' next to the others is not "
                                     "supported",
                                     i, act ? act : "");
        p->listed = a;
        if (has_content(c, "args") || has_content(c, "includes") || has_content(c, "excludes"))
                return rkl_error_set(reterr, -EINVAL,
                                     "syscalls[%zu]: conditions (args, includes, excludes) are "
                                     "not supported",
                                     i);
        if (a == ACT_ERRNO) {
                r = errno_of(c, "errnoRet", &e, reterr);
                if (r < 0)
                        return r;
                if (p->have_errno && e != p->err_no)
                        return rkl_error_set(reterr, -EINVAL,
                                             "syscalls[%zu]: one errno for all is supported", i);
                p->err_no = e, p->have_errno = true;
        }
        return rule_names(p, c, i, reterr);
}

/* The unit's lines for a profile that names syscalls. The empty assignment drops any
 * filter before it; "~" lists what is refused. */
static char *unit_lines(const profile *p)
{
        size_t size = 256;
        RKL_STRV_FOREACH (s, p->names)
                size += strlen(*s) + 1;
        char *out = rkl_xmalloc(size), *q = out;
        q += snprintf(q, size, "SystemCallFilter=\nSystemCallFilter=%s",
                      p->dflt == ACT_ALLOW ? "~" : "");
        RKL_STRV_FOREACH (s, p->names)
                q += snprintf(q, size - (size_t)(q - out), "%s%s", s == p->names ? "" : " ", *s);
        q += snprintf(q, size - (size_t)(q - out), "\n");
        if (p->have_errno)
                (void)snprintf(q, size - (size_t)(q - out), "SystemCallErrorNumber=%" PRIi64 "\n",
                               p->err_no);
        return out;
}

int rkl_rkt_seccomp_profile_to_unit(const char *json, size_t len, char **ret, rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_(profile_done) profile p = {.err_no = EPERM};
        const char *def = NULL;
        int r;

        r = rkl_json_parse(json, len, MAX_PROFILE, &o, reterr);
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_object))
                return rkl_error_set(reterr, -EINVAL, "not a JSON object");
        r = rkl_json_get_string(o, "defaultAction", 64, &def, reterr);
        if (r < 0)
                return r;
        p.dflt = action_from(def);
        if (p.dflt == ACT_OTHER)
                return rkl_error_set(reterr, -EINVAL, "defaultAction '%s' is not supported",
                                     def ? def : "");
        if (has_content(o, "flags") || has_content(o, "listenerPath"))
                return rkl_error_set(reterr, -EINVAL, "flags and listeners are not supported");
        if (p.dflt == ACT_ERRNO) {
                r = errno_of(o, "defaultErrnoRet", &p.err_no, reterr);
                if (r < 0)
                        return r;
                p.have_errno = true;
        }
        /* The listed syscalls take the one action that is not the default's. */
        p.listed = p.dflt == ACT_ALLOW ? ACT_OTHER : ACT_ALLOW;

        json_object *calls = NULL;
        if (json_object_object_get_ex(o, "syscalls", &calls) && calls) {
                if (!json_object_is_type(calls, json_type_array))
                        return rkl_error_set(reterr, -EINVAL, "syscalls: not an array");
                for (size_t i = 0; i < json_object_array_length(calls); i++) {
                        r = rule_add(&p, json_object_array_get_idx(calls, i), i, reterr);
                        if (r < 0)
                                return r;
                }
        }
        if (p.dflt != ACT_ALLOW && !p.names)
                return rkl_error_set(reterr, -EINVAL,
                                     "a profile that allows no syscall cannot run anything");
        RKL_STRV_FOREACH (s, p.names)
                if (!rkl_syscall_name_is_valid(*s))
                        return rkl_error_set(reterr, -EINVAL, "'%.64s' is not a syscall name", *s);

        /* No name: it allows everything, no filter at all. */
        *ret = p.names ? unit_lines(&p) : rkl_xstrdup("SystemCallFilter=\n");
        return 0;
}
