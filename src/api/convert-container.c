/* A ContainerConfig into the model's rkl_container_spec (identity, capabilities, seccomp,
 * mounts, environment, resources), and UpdateContainerResources' resources, each field
 * checked (convert.h). */
#include "convert-internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/parse.h"
#include "base/strv.h"
#include "rkt/command.h"
#include "base/banned.h"

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
        int r = rkl_api__seccomp_kind(sc->seccomp, sc->seccomp_profile_path,
                                      "linux.security_context", &s->seccomp, &ref, reterr);
        if (r < 0 || s->seccomp != RKL_SECCOMP_LOCALHOST)
                return r;
        r = rkl_api__check("linux.security_context.seccomp.localhost_ref", ref, RKL_MAX_PATH,
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
        int r = rkl_api__check("linux.security_context.run_as_username", sc->run_as_username, 256,
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
        int r = rkl_api__strv_from("linux.security_context.capabilities.add_capabilities",
                                   c->add_capabilities, c->n_add_capabilities, 64, 64,
                                   CHECK_REQUIRED, &s->caps_add, reterr);
        if (r >= 0)
                r = rkl_api__strv_from("linux.security_context.capabilities.drop_capabilities",
                                       c->drop_capabilities, c->n_drop_capabilities, 64, 64,
                                       CHECK_REQUIRED, &s->caps_drop, reterr);
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
        if ((r = rkl_api__strv_from("linux.security_context.masked_paths", sc->masked_paths,
                                    sc->n_masked_paths, RKL_MAX_MOUNTS, RKL_MAX_PATH,
                                    CHECK_REQUIRED | CHECK_ABSOLUTE | CHECK_NO_DOTDOT |
                                        CHECK_NO_SPACE,
                                    &s->masked_paths, reterr)) < 0 ||
            (r = rkl_api__strv_from("linux.security_context.readonly_paths", sc->readonly_paths,
                                    sc->n_readonly_paths, RKL_MAX_MOUNTS, RKL_MAX_PATH,
                                    CHECK_REQUIRED | CHECK_ABSOLUTE | CHECK_NO_DOTDOT |
                                        CHECK_NO_SPACE,
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
            (r = rkl_api__apparmor_check(sc->apparmor, sc->apparmor_profile,
                                         "linux.security_context", reterr)) < 0 ||
            (sc->namespace_options && (r = namespaces_check(sc->namespace_options, reterr)) < 0))
                return r;
        if (rkl_api__selinux_refused(sc->selinux_options))
                return rkl_error_set(reterr, -EINVAL,
                                     "linux.security_context.selinux_options: rkt's stage1 "
                                     "applies no SELinux labels, and this machine enforces "
                                     "them");
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
                if ((r = rkl_api__check(field, m->container_path, RKL_MAX_PATH, f, reterr)) < 0)
                        return r;
                (void)snprintf(field, sizeof(field), "mounts[%zu].host_path", i);
                if (m->image && !isempty(m->image->image))
                        return rkl_error_set(reterr, -EINVAL,
                                             "mounts[%zu].image: rkt cannot mount images", i);
                if ((r = rkl_api__check(field, m->host_path, RKL_MAX_PATH, f, reterr)) < 0)
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
                int r = rkl_api__check(field, c->envs[i]->key, RKL_MAX_KEY, CHECK_REQUIRED, reterr);
                if (r >= 0 && strchr(c->envs[i]->key, '='))
                        r = rkl_error_set(reterr, -EINVAL, "%s: contains '='", field);
                if (r >= 0) {
                        (void)snprintf(field, sizeof(field), "config.envs[%zu].value", i);
                        r = rkl_api__check(field, c->envs[i]->value, RKL_MAX_ARG, 0, reterr);
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
        r = rkl_api__check("config.metadata.name", c->metadata->name, RKL_MAX_NAME, CHECK_REQUIRED,
                           reterr);
        if (r < 0)
                return r;
        s.name = rkl_xstrdup(c->metadata->name);
        s.attempt = c->metadata->attempt;

        if (!c->image)
                return rkl_error_set(reterr, -EINVAL, "config.image: required");
        r = rkl_api__check("config.image.image", c->image->image, RKL_MAX_PATH,
                           CHECK_REQUIRED | CHECK_NO_DASH | CHECK_NO_SPACE, reterr);
        if (r < 0)
                return r;
        s.image = rkl_xstrdup(c->image->image);
        /* kubelet names the image by its ID here, and the pod's spec's name beside it: the
         * one it shows as the container's image is what ContainerStatus answers. */
        r = rkl_api__check("config.image.user_specified_image", c->image->user_specified_image,
                           RKL_MAX_PATH, CHECK_NO_SPACE, reterr);
        if (r < 0)
                return r;
        if (!isempty(c->image->user_specified_image))
                s.user_image = rkl_xstrdup(c->image->user_specified_image);

        if ((r = rkl_api__strv_from("config.command", c->command, c->n_command, RKL_MAX_ARGS,
                                    RKL_MAX_ARG, 0, &s.command, reterr)) < 0 ||
            (r = rkl_api__strv_from("config.args", c->args, c->n_args, RKL_MAX_ARGS, RKL_MAX_ARG, 0,
                                    &s.args, reterr)) < 0)
                return r;
        /* Empty arguments are valid; an empty program name is not. */
        if (s.command && isempty(s.command[0]))
                return rkl_error_set(reterr, -EINVAL, "config.command[0]: required");
        r = rkl_api__check("config.working_dir", c->working_dir, RKL_MAX_PATH, CHECK_ABSOLUTE,
                           reterr);
        if (r < 0)
                return r;
        s.working_dir = isempty(c->working_dir) ? NULL : rkl_xstrdup(c->working_dir);

        if ((r = envs_from(c, &s, reterr)) < 0 || (r = mounts_from(c, &s, reterr)) < 0)
                return r;
        if (c->n_devices > 0 || c->n_cdi_devices > 0)
                return rkl_error_set(reterr, -EINVAL, "config.devices: rkt cannot pass devices");
        r = KVS_FROM("config.labels", c->labels, c->n_labels, &s.labels, reterr);
        if (r >= 0)
                r = rkl_api__metadata_check("config.labels", &s.labels, reterr);
        if (r < 0)
                return r;
        r = KVS_FROM("config.annotations", c->annotations, c->n_annotations, &s.annotations,
                     reterr);
        if (r >= 0)
                r = rkl_api__metadata_check("config.annotations", &s.annotations, reterr);
        if (r < 0)
                return r;
        r = rkl_api__check("config.log_path", c->log_path, RKL_MAX_PATH,
                           CHECK_RELATIVE | CHECK_NO_DOTDOT, reterr);
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
        s.seccomp = RKL_SECCOMP_UNCONFINED; /* no profile at all (rkl_api__seccomp_kind()) */
        if (c->linux && c->linux->security_context) {
                r = security_from(c->linux->security_context, &s, reterr);
                if (r < 0)
                        return r;
        }
        *ret = s;
        s = (rkl_container_spec){0};
        return 0;
}
