#include "convert.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <unistd.h>

#include <fcntl.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/utf8.h"
#include "rkt/command.h"
#include "rkt/sysctl.h"
#include "base/banned.h"

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

static bool has_dotdot(const char *p)
{
        for (const char *s = p; (s = strstr(s, "..")); s += 2)
                if ((s == p || s[-1] == '/') && (s[2] == 0 || s[2] == '/'))
                        return true;
        return false;
}

static int check(const char *field, const char *s, size_t max, check_flags f, rkl_error *reterr)
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
        return check(field, s, max, required ? CHECK_REQUIRED : 0, reterr);
}

/* Copies a checked list; -EINVAL naming field[i] otherwise. */
static int strv_from(const char *field, char **in, size_t n, size_t max_n, size_t max_len,
                     check_flags f, char ***ret, rkl_error *reterr)
{
        _cleanup_strv_free_ char **l = NULL;
        if (n > max_n)
                return rkl_error_set(reterr, -EINVAL, "%s: more than %zu entries", field, max_n);
        for (size_t i = 0; i < n; i++) {
                char name[128];
                (void)snprintf(name, sizeof(name), "%s[%zu]", field, i);
                int r = check(name, in[i], max_len, f, reterr);
                if (r < 0)
                        return r;
                rkl_strv_push(&l, in[i]);
        }
        *ret = TAKE_PTR(l);
        return 0;
}

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
                        _r = check(_f, (entries)[_i]->key, RKL_MAX_KEY, CHECK_REQUIRED, reterr);   \
                        if (_r == 0)                                                               \
                                _r = check(_f, (entries)[_i]->value, RKL_MAX_VALUE, 0, reterr);    \
                        if (_r == 0 && rkl_kvs_get(ret, (entries)[_i]->key))                       \
                                _r = rkl_error_set(reterr, -EINVAL, "%s: duplicate key", _f);      \
                        if (_r == 0)                                                               \
                                rkl_kvs_add(ret, (entries)[_i]->key, (entries)[_i]->value);        \
                }                                                                                  \
                _r;                                                                                \
        })

/* Labels and annotations are answered in every List and Status: without a cap, a few
 * sandboxes of megabytes each made every unfiltered List larger than a client takes. */
static int metadata_check(const char *field, const rkl_kvs *l, rkl_error *reterr)
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

static bool is_ip(const char *s)
{
        unsigned char buf[16];
        return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static int ports_from(const Runtime__V1__PodSandboxConfig *c, rkl_pod_spec *s, rkl_error *reterr)
{
        if (c->n_port_mappings > RKL_MAX_PORTS)
                return rkl_error_set(reterr, -EINVAL, "port_mappings: more than %d entries",
                                     RKL_MAX_PORTS);
        s->ports = rkl_xnew0(rkl_port_mapping, c->n_port_mappings);
        for (size_t i = 0; i < c->n_port_mappings; i++) {
                const Runtime__V1__PortMapping *p = c->port_mappings[i];
                if ((int)p->protocol < 0 || (int)p->protocol >= (int)_RKL_PROTOCOL_MAX)
                        return rkl_error_set(reterr, -EINVAL,
                                             "port_mappings[%zu].protocol: unknown value %d", i,
                                             (int)p->protocol);
                if (p->container_port < 0 || p->container_port > RKL_MAX_PORT || p->host_port < 0 ||
                    p->host_port > RKL_MAX_PORT)
                        return rkl_error_set(reterr, -EINVAL,
                                             "port_mappings[%zu]: ports are 0 to %d", i,
                                             RKL_MAX_PORT);
                if (!isempty(p->host_ip) && !is_ip(p->host_ip))
                        return rkl_error_set(reterr, -EINVAL,
                                             "port_mappings[%zu].host_ip: '%.64s' is not an IP "
                                             "address",
                                             i, p->host_ip);
                s->ports[s->n_ports++] = (rkl_port_mapping){
                    .protocol = (rkl_protocol)p->protocol,
                    .container_port = p->container_port,
                    .host_port = p->host_port,
                    .host_ip = isempty(p->host_ip) ? NULL : rkl_xstrdup(p->host_ip),
                };
        }
        return 0;
}

static bool selinux_set(const Runtime__V1__SELinuxOption *o)
{
        return o &&
               (!isempty(o->user) || !isempty(o->role) || !isempty(o->type) || !isempty(o->level));
}

/* rkt's stage1 has no AppArmor profile of its own and rktlet loads none: the runtime's default
 * and unconfined are the same here, a named profile cannot be honoured. */
static int apparmor_check(const Runtime__V1__SecurityProfile *p, const char *path,
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

/* The profile a SecurityProfile or the deprecated *_profile_path string names:
 * RKL_SECCOMP_* and, for Localhost, the path. An absent one is unconfined (CRI's default for
 * the deprecated field, and containerd's). */
static int seccomp_kind(const Runtime__V1__SecurityProfile *p, const char *path, const char *field,
                        rkl_seccomp *ret, const char **ret_ref, rkl_error *reterr)
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

/* Only what a pod's own namespaces hold (rkt/sysctl.c sets them there), by plain names. */
static int sysctls_check(const rkl_kvs *l, rkl_error *reterr)
{
        for (size_t i = 0; i < l->n; i++) {
                const char *k = l->items[i].key, *v = l->items[i].value;
                bool plain = *k && k[0] != '.' && !strstr(k, "..") && k[strlen(k) - 1] != '.';
                for (const char *p = k; *p && plain; p++)
                        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.';
                if (!plain)
                        return rkl_error_set(reterr, -EINVAL,
                                             "config.linux.sysctls: '%.64s' is not a sysctl name",
                                             k);
                if (!rkl_rkt_sysctl_is_namespaced(k))
                        return rkl_error_set(reterr, -EINVAL,
                                             "config.linux.sysctls: '%.64s' is not namespaced: a "
                                             "pod cannot set it",
                                             k);
                if (strpbrk(v, "\n") || strlen(v) > 4096)
                        return rkl_error_set(reterr, -EINVAL,
                                             "config.linux.sysctls: the value of '%.64s' is not "
                                             "one line",
                                             k);
        }
        return 0;
}

static int pod_dns_from(const Runtime__V1__DNSConfig *d, rkl_pod_spec *s, rkl_error *reterr)
{
        const check_flags f = CHECK_REQUIRED | CHECK_NO_COMMA | CHECK_NO_DASH | CHECK_NO_SPACE;
        int r;
        if ((r = strv_from("config.dns_config.servers", d->servers, d->n_servers, RKL_MAX_DNS,
                           RKL_MAX_NAME, f, &s->dns_servers, reterr)) < 0 ||
            (r = strv_from("config.dns_config.searches", d->searches, d->n_searches, RKL_MAX_DNS,
                           RKL_MAX_NAME, f, &s->dns_searches, reterr)) < 0 ||
            (r = strv_from("config.dns_config.options", d->options, d->n_options, RKL_MAX_DNS,
                           RKL_MAX_NAME, f, &s->dns_options, reterr)) < 0)
                return r;
        RKL_STRV_FOREACH (p, s->dns_servers)
                if (!is_ip(*p))
                        return rkl_error_set(reterr, -EINVAL,
                                             "config.dns_config.servers: '%s' is not an IP "
                                             "address",
                                             *p);
        return 0;
}

/* The labels and annotations, and the bandwidth annotations' values. */
static int pod_metadata_from(const Runtime__V1__PodSandboxConfig *c, rkl_pod_spec *s,
                             rkl_error *reterr)
{
        int r = KVS_FROM("config.labels", c->labels, c->n_labels, &s->labels, reterr);
        if (r >= 0)
                r = metadata_check("config.labels", &s->labels, reterr);
        if (r < 0)
                return r;
        r = KVS_FROM("config.annotations", c->annotations, c->n_annotations, &s->annotations,
                     reterr);
        if (r >= 0)
                r = metadata_check("config.annotations", &s->annotations, reterr);
        if (r < 0)
                return r;
        uint64_t ingress, egress;
        const char *key = NULL;
        if (rkl_pod_bandwidth(&s->annotations, &ingress, &egress, &key) < 0)
                return rkl_error_set(reterr, -EINVAL,
                                     "config.annotations: '%s' = '%.64s' is not a bandwidth from "
                                     "1k to 1P bits per second (e.g. 10M)",
                                     key, rkl_kvs_get(&s->annotations, key));
        return 0;
}

/* The namespaces a pod may have: its own PID and IPC namespaces (rkt's app sandbox cannot
 * share the host's: refused rather than pretended), its own network or the host's. */
static int pod_namespaces_from(const Runtime__V1__NamespaceOption *ns, rkl_pod_spec *s,
                               rkl_error *reterr)
{
        s->host_network = ns->network == RUNTIME__V1__NAMESPACE_MODE__NODE;
        for (size_t i = 0; s->host_network && i < s->sysctls.n; i++)
                if (strncmp(s->sysctls.items[i].key, "net.", 4) == 0)
                        return rkl_error_set(reterr, -EINVAL,
                                             "config.linux.sysctls: '%.64s' would be the host's: "
                                             "the pod uses the host's network",
                                             s->sysctls.items[i].key);
        if (ns->pid == RUNTIME__V1__NAMESPACE_MODE__NODE)
                return rkl_error_set(reterr, -EINVAL,
                                     "config.linux.security_context.namespace_options.pid: rkt "
                                     "cannot run a pod in the host's PID namespace");
        if (ns->ipc == RUNTIME__V1__NAMESPACE_MODE__NODE)
                return rkl_error_set(reterr, -EINVAL,
                                     "config.linux.security_context.namespace_options.ipc: rkt "
                                     "cannot run a pod in the host's IPC namespace");
        return 0;
}

static int pod_security_from(const Runtime__V1__LinuxSandboxSecurityContext *sc, rkl_pod_spec *s,
                             rkl_error *reterr)
{
        int r;
        s->privileged = sc->privileged;
        /* The sandbox's own profiles are for an infra container rkt does not have: checked,
         * nothing to apply. */
        rkl_seccomp kind;
        const char *ref;
        if ((r = seccomp_kind(sc->seccomp, sc->seccomp_profile_path,
                              "config.linux.security_context", &kind, &ref, reterr)) < 0 ||
            (r = apparmor_check(sc->apparmor, NULL, "config.linux.security_context", reterr)) < 0)
                return r;
        if (selinux_set(sc->selinux_options))
                return rkl_error_set(reterr, -EINVAL,
                                     "config.linux.security_context.selinux_options: rkt's "
                                     "stage1 applies no SELinux labels");
        return sc->namespace_options ? pod_namespaces_from(sc->namespace_options, s, reterr) : 0;
}

static int pod_linux_from(const Runtime__V1__LinuxPodSandboxConfig *l, rkl_pod_spec *s,
                          rkl_error *reterr)
{
        int r = check("config.linux.cgroup_parent", l->cgroup_parent, RKL_MAX_PATH, CHECK_NO_DOTDOT,
                      reterr);
        if (r < 0)
                return r;
        s->cgroup_parent = isempty(l->cgroup_parent) ? NULL : rkl_xstrdup(l->cgroup_parent);
        r = KVS_FROM("config.linux.sysctls", l->sysctls, l->n_sysctls, &s->sysctls, reterr);
        if (r < 0)
                return r;
        r = sysctls_check(&s->sysctls, reterr);
        if (r < 0)
                return r;
        return l->security_context ? pod_security_from(l->security_context, s, reterr) : 0;
}

int rkl_api_pod_spec_from_pb(const Runtime__V1__PodSandboxConfig *c, rkl_pod_spec *ret,
                             rkl_error *reterr)
{
        _cleanup_(rkl_pod_spec_done) rkl_pod_spec s = {0};
        int r;

        if (!c)
                return rkl_error_set(reterr, -EINVAL, "config: required");
        if (!c->metadata)
                return rkl_error_set(reterr, -EINVAL, "config.metadata: required");
        const Runtime__V1__PodSandboxMetadata *m = c->metadata;
        if ((r = check("config.metadata.name", m->name, RKL_MAX_NAME, CHECK_REQUIRED, reterr)) <
                0 ||
            (r = check("config.metadata.uid", m->uid, RKL_MAX_NAME, CHECK_REQUIRED, reterr)) < 0 ||
            (r = check("config.metadata.namespace", m->namespace_, RKL_MAX_NAME, CHECK_REQUIRED,
                       reterr)) < 0)
                return r;
        s.name = rkl_xstrdup(m->name);
        s.uid = rkl_xstrdup(m->uid);
        s.namespace = rkl_xstrdup(m->namespace_);
        s.attempt = m->attempt;

        r = check("config.hostname", c->hostname, RKL_MAX_NAME,
                  CHECK_NO_DASH | CHECK_NO_SPACE | CHECK_NO_COMMA, reterr);
        if (r < 0)
                return r;
        s.hostname = isempty(c->hostname) ? NULL : rkl_xstrdup(c->hostname);
        r = check("config.log_directory", c->log_directory, RKL_MAX_PATH,
                  CHECK_ABSOLUTE | CHECK_NO_DOTDOT, reterr);
        if (r < 0)
                return r;
        s.log_directory = isempty(c->log_directory) ? NULL : rkl_xstrdup(c->log_directory);

        if ((c->dns_config && (r = pod_dns_from(c->dns_config, &s, reterr)) < 0) ||
            (r = ports_from(c, &s, reterr)) < 0 || (r = pod_metadata_from(c, &s, reterr)) < 0 ||
            (c->linux && (r = pod_linux_from(c->linux, &s, reterr)) < 0))
                return r;
        *ret = s;
        s = (rkl_pod_spec){0};
        return 0;
}

static bool is_cap_name(const char *s)
{
        if (strcasecmp(s, "ALL") == 0)
                return true;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_' ||
                      (*p >= '0' && *p <= '9')))
                        return false;
        return *s != 0;
}

static int seccomp_from(const Runtime__V1__LinuxContainerSecurityContext *sc, rkl_container_spec *s,
                        rkl_error *reterr)
{
        const char *ref;
        int r = seccomp_kind(sc->seccomp, sc->seccomp_profile_path, "linux.security_context",
                             &s->seccomp, &ref, reterr);
        if (r < 0 || s->seccomp != RKL_SECCOMP_LOCALHOST)
                return r;
        r = check("linux.security_context.seccomp.localhost_ref", ref, RKL_MAX_PATH,
                  CHECK_REQUIRED | CHECK_ABSOLUTE | CHECK_NO_DOTDOT, reterr);
        if (r < 0)
                return r;
        s->seccomp_localhost_ref = rkl_xstrdup(ref);
        /* Read now: a profile that cannot be used fails CreateContainer, not the start. */
        _cleanup_free_ char *json = NULL;
        size_t n = 0;
        r = rkl_read_file_at(AT_FDCWD, ref, 1 << 20, &json, &n);
        if (r < 0)
                return rkl_error_set(reterr, -EINVAL,
                                     "linux.security_context.seccomp.localhost_ref: %.256s: %s",
                                     ref, strerror(-r));
        r = rkl_rkt_seccomp_profile_to_unit(json, n, &s->seccomp_unit, reterr);
        if (r < 0)
                return rkl_error_prefix(
                    reterr, "linux.security_context.seccomp.localhost_ref: %.256s", ref);
        return 0;
}

/* Who the app runs as: user, group, supplemental groups and their policy. */
static int identity_from(const Runtime__V1__LinuxContainerSecurityContext *sc,
                         rkl_container_spec *s, rkl_error *reterr)
{
        if (sc->run_as_user) {
                if (sc->run_as_user->value < 0 || sc->run_as_user->value > UINT32_MAX - 1)
                        return rkl_error_set(reterr, -EINVAL,
                                             "linux.security_context.run_as_user: out of range");
                s->has_run_as_user = true;
                s->run_as_user = sc->run_as_user->value;
        }
        int r = check("linux.security_context.run_as_username", sc->run_as_username, 256,
                      CHECK_NO_DASH | CHECK_NO_COMMA | CHECK_NO_SPACE, reterr);
        if (r < 0)
                return r;
        if (!isempty(sc->run_as_username)) {
                if (s->has_run_as_user)
                        return rkl_error_set(reterr, -EINVAL,
                                             "linux.security_context: run_as_user and "
                                             "run_as_username are exclusive");
                s->run_as_username = rkl_xstrdup(sc->run_as_username);
        }
        if (sc->run_as_group) {
                if (!s->has_run_as_user && !s->run_as_username)
                        return rkl_error_set(reterr, -EINVAL,
                                             "linux.security_context.run_as_group: needs "
                                             "run_as_user or run_as_username");
                if (sc->run_as_group->value < 0 || sc->run_as_group->value > UINT32_MAX - 1)
                        return rkl_error_set(reterr, -EINVAL,
                                             "linux.security_context.run_as_group: out of range");
                s->has_run_as_group = true;
                s->run_as_group = sc->run_as_group->value;
        }
        if (sc->n_supplemental_groups > 256)
                return rkl_error_set(reterr, -EINVAL,
                                     "linux.security_context.supplemental_groups: too many");
        s->supplemental_groups = rkl_xnew0(int64_t, sc->n_supplemental_groups);
        for (size_t i = 0; i < sc->n_supplemental_groups; i++) {
                if (sc->supplemental_groups[i] < 0 || sc->supplemental_groups[i] > UINT32_MAX - 1)
                        return rkl_error_set(reterr, -EINVAL,
                                             "linux.security_context.supplemental_groups[%zu]: "
                                             "out of range",
                                             i);
                s->supplemental_groups[s->n_supplemental_groups++] = sc->supplemental_groups[i];
        }
        if (sc->supplemental_groups_policy == RUNTIME__V1__SUPPLEMENTAL_GROUPS_POLICY__Strict)
                s->supplemental_groups_strict = true;
        else if (sc->supplemental_groups_policy != RUNTIME__V1__SUPPLEMENTAL_GROUPS_POLICY__Merge)
                return rkl_error_set(reterr, -EINVAL,
                                     "linux.security_context.supplemental_groups_policy: unknown "
                                     "value %d",
                                     (int)sc->supplemental_groups_policy);
        return 0;
}

static int capabilities_from(const Runtime__V1__Capability *c, rkl_container_spec *s,
                             rkl_error *reterr)
{
        int r =
            strv_from("linux.security_context.capabilities.add_capabilities", c->add_capabilities,
                      c->n_add_capabilities, 64, 64, CHECK_REQUIRED, &s->caps_add, reterr);
        if (r >= 0)
                r = strv_from("linux.security_context.capabilities.drop_capabilities",
                              c->drop_capabilities, c->n_drop_capabilities, 64, 64, CHECK_REQUIRED,
                              &s->caps_drop, reterr);
        if (r < 0)
                return r;
        for (size_t k = 0; k < 2; k++)
                RKL_STRV_FOREACH (p, k ? s->caps_drop : s->caps_add)
                        if (!is_cap_name(*p))
                                return rkl_error_set(reterr, -EINVAL,
                                                     "linux.security_context.capabilities: '%s' "
                                                     "is not a capability",
                                                     *p);
        return 0;
}

/* masked_paths and readonly_paths go into a systemd unit (rkt/command.c): a plain path,
 * nothing systemd would read as a quote, a separator or a specifier. */
static int paths_from(const Runtime__V1__LinuxContainerSecurityContext *sc, rkl_container_spec *s,
                      rkl_error *reterr)
{
        int r;
        if ((r = strv_from("linux.security_context.masked_paths", sc->masked_paths,
                           sc->n_masked_paths, RKL_MAX_MOUNTS, RKL_MAX_PATH,
                           CHECK_REQUIRED | CHECK_ABSOLUTE | CHECK_NO_DOTDOT | CHECK_NO_SPACE,
                           &s->masked_paths, reterr)) < 0 ||
            (r = strv_from("linux.security_context.readonly_paths", sc->readonly_paths,
                           sc->n_readonly_paths, RKL_MAX_MOUNTS, RKL_MAX_PATH,
                           CHECK_REQUIRED | CHECK_ABSOLUTE | CHECK_NO_DOTDOT | CHECK_NO_SPACE,
                           &s->readonly_paths, reterr)) < 0)
                return r;
        for (size_t k = 0; k < 2; k++)
                RKL_STRV_FOREACH (p, k ? s->readonly_paths : s->masked_paths)
                        if (strpbrk(*p, "\\\"'%;"))
                                return rkl_error_set(reterr, -EINVAL,
                                                     "linux.security_context.%s: '%.64s' has a "
                                                     "character rkt's units cannot take",
                                                     k ? "readonly_paths" : "masked_paths", *p);
        return 0;
}

static int namespaces_check(const Runtime__V1__NamespaceOption *ns, rkl_error *reterr)
{
        /* Every app of a rkt pod shares the pod's PID namespace (the pod's systemd is its PID
         * 1): CONTAINER, kubelet's default, runs as POD does (docs/security.md). */
        if (ns->pid == RUNTIME__V1__NAMESPACE_MODE__NODE ||
            ns->pid == RUNTIME__V1__NAMESPACE_MODE__TARGET)
                return rkl_error_set(reterr, -EINVAL,
                                     "linux.security_context.namespace_options.pid: "
                                     "a rkt app has its pod's PID namespace only");
        /* NODE is the pod's too when the pod is on the host's network: checked against the
         * sandbox by CreateContainer (rkl_api_create_container). */
        if (ns->network != RUNTIME__V1__NAMESPACE_MODE__POD &&
            ns->network != RUNTIME__V1__NAMESPACE_MODE__CONTAINER &&
            ns->network != RUNTIME__V1__NAMESPACE_MODE__NODE)
                return rkl_error_set(reterr, -EINVAL,
                                     "linux.security_context.namespace_options.network: "
                                     "a rkt app has its pod's network namespace only");
        if (ns->ipc != RUNTIME__V1__NAMESPACE_MODE__POD &&
            ns->ipc != RUNTIME__V1__NAMESPACE_MODE__CONTAINER)
                return rkl_error_set(reterr, -EINVAL,
                                     "linux.security_context.namespace_options.ipc: "
                                     "a rkt app has its pod's IPC namespace only");
        if (ns->userns_options && ns->userns_options->mode != RUNTIME__V1__NAMESPACE_MODE__NODE)
                return rkl_error_set(reterr, -EINVAL,
                                     "linux.security_context.namespace_options."
                                     "userns_options: rktlet runs no user namespaces");
        return 0;
}

static int security_from(const Runtime__V1__LinuxContainerSecurityContext *sc,
                         rkl_container_spec *s, rkl_error *reterr)
{
        int r;
        s->privileged = sc->privileged;
        s->readonly_rootfs = sc->readonly_rootfs;
        s->no_new_privs = sc->no_new_privs;
        if ((r = identity_from(sc, s, reterr)) < 0 ||
            (sc->capabilities && (r = capabilities_from(sc->capabilities, s, reterr)) < 0) ||
            (r = paths_from(sc, s, reterr)) < 0 || (r = seccomp_from(sc, s, reterr)) < 0 ||
            (r = apparmor_check(sc->apparmor, sc->apparmor_profile, "linux.security_context",
                                reterr)) < 0 ||
            (sc->namespace_options && (r = namespaces_check(sc->namespace_options, reterr)) < 0))
                return r;
        if (selinux_set(sc->selinux_options))
                return rkl_error_set(reterr, -EINVAL,
                                     "linux.security_context.selinux_options: rkt's stage1 "
                                     "applies no SELinux labels");
        return 0;
}

static int mounts_from(const Runtime__V1__ContainerConfig *c, rkl_container_spec *s,
                       rkl_error *reterr)
{
        if (c->n_mounts > RKL_MAX_MOUNTS)
                return rkl_error_set(reterr, -EINVAL, "mounts: more than %d entries",
                                     RKL_MAX_MOUNTS);
        s->mounts = rkl_xnew0(rkl_mount, c->n_mounts);
        for (size_t i = 0; i < c->n_mounts; i++) {
                const Runtime__V1__Mount *m = c->mounts[i];
                char field[64];
                int r;
                /* rkt's --mnt-volume is a comma-separated list of key=value pairs. */
                const check_flags f =
                    CHECK_REQUIRED | CHECK_ABSOLUTE | CHECK_NO_DOTDOT | CHECK_NO_COMMA;
                (void)snprintf(field, sizeof(field), "mounts[%zu].container_path", i);
                if ((r = check(field, m->container_path, RKL_MAX_PATH, f, reterr)) < 0)
                        return r;
                (void)snprintf(field, sizeof(field), "mounts[%zu].host_path", i);
                if (m->image && !isempty(m->image->image))
                        return rkl_error_set(reterr, -EINVAL,
                                             "mounts[%zu].image: rkt cannot mount images", i);
                if ((r = check(field, m->host_path, RKL_MAX_PATH, f, reterr)) < 0)
                        return r;
                if (m->propagation != RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_PRIVATE)
                        return rkl_error_set(reterr, -EINVAL,
                                             "mounts[%zu].propagation: rkt volumes support "
                                             "only private propagation",
                                             i);
                s->mounts[s->n_mounts++] = (rkl_mount){
                    .container_path = rkl_xstrdup(m->container_path),
                    .host_path = rkl_xstrdup(m->host_path),
                    .readonly = m->readonly,
                    .selinux_relabel = m->selinux_relabel,
                    .propagation = RKL_PROPAGATION_PRIVATE,
                };
        }
        return 0;
}

/* Whether a cpuset list ("0-2,4") names only CPUs this machine has. */
static bool cpuset_valid(const char *list, long n_cpus)
{
        const char *p = list;
        if (!*p)
                return false;
        for (;;) {
                char *end;
                if (*p < '0' || *p > '9')
                        return false;
                unsigned long a = strtoul(p, &end, 10), b = a;
                p = end;
                if (*p == '-') {
                        if (p[1] < '0' || p[1] > '9')
                                return false;
                        b = strtoul(p + 1, &end, 10);
                        p = end;
                }
                if (a > b || b >= (unsigned long)n_cpus)
                        return false;
                if (!*p)
                        return true;
                if (*p++ != ',')
                        return false;
        }
}

int rkl_api_resources_from_pb(const Runtime__V1__LinuxContainerResources *res, rkl_resources *ret,
                              rkl_error *reterr)
{
        if (res->cpu_period < 0 || res->cpu_quota < -1 || res->cpu_shares < 0 ||
            res->memory_limit_in_bytes < 0)
                return rkl_error_set(reterr, -EINVAL, "negative values are invalid");
        if (res->oom_score_adj < -RKL_MAX_OOM_SCORE_ADJ ||
            res->oom_score_adj > RKL_MAX_OOM_SCORE_ADJ)
                return rkl_error_set(reterr, -EINVAL, "oom_score_adj: %d to %d",
                                     -RKL_MAX_OOM_SCORE_ADJ, RKL_MAX_OOM_SCORE_ADJ);
        /* The kernel's own bounds (CFS: a quota of at least 1 ms, a period of 1 ms to 1 s). */
        if (res->cpu_quota > 0 && res->cpu_quota < RKL_MIN_CPU_QUOTA_USEC)
                return rkl_error_set(reterr, -EINVAL, "cpu_quota: at least %d (1 ms)",
                                     RKL_MIN_CPU_QUOTA_USEC);
        if (res->cpu_period != 0 && (res->cpu_period < RKL_MIN_CPU_PERIOD_USEC ||
                                     res->cpu_period > RKL_MAX_CPU_PERIOD_USEC))
                return rkl_error_set(reterr, -EINVAL, "cpu_period: %d to %d",
                                     RKL_MIN_CPU_PERIOD_USEC, RKL_MAX_CPU_PERIOD_USEC);
        if (res->cpu_shares > RKL_MAX_CPU_SHARES)
                return rkl_error_set(reterr, -EINVAL, "cpu_shares: at most %d", RKL_MAX_CPU_SHARES);
        if (!isempty(res->cpuset_cpus) &&
            (strlen(res->cpuset_cpus) > 1024 ||
             !cpuset_valid(res->cpuset_cpus, sysconf(_SC_NPROCESSORS_CONF))))
                return rkl_error_set(reterr, -EINVAL,
                                     "cpuset_cpus: '%.64s' is not a list of this machine's CPUs",
                                     res->cpuset_cpus);
        *ret = (rkl_resources){
            .cpu_period = res->cpu_period,
            .cpu_quota = res->cpu_quota > 0 ? res->cpu_quota : 0,
            .cpu_shares = res->cpu_shares,
            .memory_limit = res->memory_limit_in_bytes,
            .oom_score_adj = res->oom_score_adj,
            .cpuset_cpus = isempty(res->cpuset_cpus) ? NULL : res->cpuset_cpus,
        };
        return 0;
}

static int envs_from(const Runtime__V1__ContainerConfig *c, rkl_container_spec *s,
                     rkl_error *reterr)
{
        if (c->n_envs > RKL_MAX_ENVS)
                return rkl_error_set(reterr, -EINVAL, "config.envs: more than %d entries",
                                     RKL_MAX_ENVS);
        for (size_t i = 0; i < c->n_envs; i++) {
                char field[48];
                (void)snprintf(field, sizeof(field), "config.envs[%zu].key", i);
                int r = check(field, c->envs[i]->key, RKL_MAX_KEY, CHECK_REQUIRED, reterr);
                if (r >= 0 && strchr(c->envs[i]->key, '='))
                        r = rkl_error_set(reterr, -EINVAL, "%s: contains '='", field);
                if (r >= 0) {
                        (void)snprintf(field, sizeof(field), "config.envs[%zu].value", i);
                        r = check(field, c->envs[i]->value, RKL_MAX_ARG, 0, reterr);
                }
                if (r < 0)
                        return r;
                rkl_kvs_add(&s->envs, c->envs[i]->key, c->envs[i]->value);
        }
        return 0;
}

int rkl_api_container_spec_from_pb(const Runtime__V1__ContainerConfig *c, rkl_container_spec *ret,
                                   rkl_error *reterr)
{
        _cleanup_(rkl_container_spec_done) rkl_container_spec s = {0};
        int r;

        if (!c)
                return rkl_error_set(reterr, -EINVAL, "config: required");
        if (!c->metadata)
                return rkl_error_set(reterr, -EINVAL, "config.metadata: required");
        r = check("config.metadata.name", c->metadata->name, RKL_MAX_NAME, CHECK_REQUIRED, reterr);
        if (r < 0)
                return r;
        s.name = rkl_xstrdup(c->metadata->name);
        s.attempt = c->metadata->attempt;

        if (!c->image)
                return rkl_error_set(reterr, -EINVAL, "config.image: required");
        r = check("config.image.image", c->image->image, RKL_MAX_PATH,
                  CHECK_REQUIRED | CHECK_NO_DASH | CHECK_NO_SPACE, reterr);
        if (r < 0)
                return r;
        s.image = rkl_xstrdup(c->image->image);

        if ((r = strv_from("config.command", c->command, c->n_command, RKL_MAX_ARGS, RKL_MAX_ARG, 0,
                           &s.command, reterr)) < 0 ||
            (r = strv_from("config.args", c->args, c->n_args, RKL_MAX_ARGS, RKL_MAX_ARG, 0, &s.args,
                           reterr)) < 0)
                return r;
        /* Empty arguments are valid; an empty program name is not. */
        if (s.command && isempty(s.command[0]))
                return rkl_error_set(reterr, -EINVAL, "config.command[0]: required");
        r = check("config.working_dir", c->working_dir, RKL_MAX_PATH, CHECK_ABSOLUTE, reterr);
        if (r < 0)
                return r;
        s.working_dir = isempty(c->working_dir) ? NULL : rkl_xstrdup(c->working_dir);

        if ((r = envs_from(c, &s, reterr)) < 0 || (r = mounts_from(c, &s, reterr)) < 0)
                return r;
        if (c->n_devices > 0 || c->n_cdi_devices > 0)
                return rkl_error_set(reterr, -EINVAL, "config.devices: rkt cannot pass devices");
        r = KVS_FROM("config.labels", c->labels, c->n_labels, &s.labels, reterr);
        if (r >= 0)
                r = metadata_check("config.labels", &s.labels, reterr);
        if (r < 0)
                return r;
        r = KVS_FROM("config.annotations", c->annotations, c->n_annotations, &s.annotations,
                     reterr);
        if (r >= 0)
                r = metadata_check("config.annotations", &s.annotations, reterr);
        if (r < 0)
                return r;
        r = check("config.log_path", c->log_path, RKL_MAX_PATH, CHECK_RELATIVE | CHECK_NO_DOTDOT,
                  reterr);
        if (r < 0)
                return r;
        s.log_path = isempty(c->log_path) ? NULL : rkl_xstrdup(c->log_path);
        s.stdin_open = c->stdin;
        s.stdin_once = c->stdin_once;
        s.tty = c->tty;

        if (c->linux && c->linux->resources) {
                rkl_resources res;
                r = rkl_api_resources_from_pb(c->linux->resources, &res, reterr);
                if (r < 0)
                        return rkl_error_prefix(reterr, "linux.resources");
                s.cpu_period = res.cpu_period;
                s.cpu_quota = res.cpu_quota;
                s.cpu_shares = res.cpu_shares;
                s.memory_limit = res.memory_limit;
                s.oom_score_adj = res.oom_score_adj;
                s.cpuset_cpus = res.cpuset_cpus ? rkl_xstrdup(res.cpuset_cpus) : NULL;
        }
        s.seccomp = RKL_SECCOMP_UNCONFINED; /* no profile at all (seccomp_kind()) */
        if (c->linux && c->linux->security_context) {
                r = security_from(c->linux->security_context, &s, reterr);
                if (r < 0)
                        return r;
        }
        *ret = s;
        s = (rkl_container_spec){0};
        return 0;
}
