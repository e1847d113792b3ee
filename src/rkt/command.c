#include "command.h"

#include <inttypes.h>
#include <stdarg.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "base/banned.h"

/* Docker's default capabilities, the base for CRI's add/drop lists. */
static const char *const default_caps[] = {
    "CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",
    "CAP_MKNOD",   "CAP_NET_RAW",      "CAP_SETGID",           "CAP_SETUID",
    "CAP_SETFCAP", "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
    "CAP_KILL",    "CAP_AUDIT_WRITE",
};

static void pushf(char ***l, const char *fmt, ...) _printf_(2, 3);
static void pushf(char ***l, const char *fmt, ...)
{
        va_list ap;
        char *s;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                rkl_oom();
        va_end(ap);
        rkl_strv_consume(l, s);
}

static const char *proto_name(rkl_protocol p)
{
        return p == RKL_PROTOCOL_UDP ? "udp" : "tcp";
}

int rkl_rkt_sandbox_args(const rkl_pod_spec *spec, const rkl_rkt_sandbox_opts *o, char ***ret,
                         const char **ret_insecure, rkl_error *reterr)
{
        _cleanup_strv_free_ char **a = NULL;

        rkl_strv_push(&a, "app");
        rkl_strv_push(&a, "sandbox");
        pushf(&a, "--uuid-file-save=%s", o->uuid_file);
        /* rkt writes each app's output to a flat file in this private dir; rktlet turns it
         * into kubelet's log format (iottymux's own format and paths break a modern
         * kubelet: docs/rkt.md, 'Output and logs'). */
        rkl_strv_push(&a, "--annotation=coreos.com/rkt/experiment/logmode=k8s-plain");
        pushf(&a, "--annotation=coreos.com/rkt/experiment/kubernetes-log-dir=%s", o->log_dir);
        if (o->stage1_name)
                pushf(&a, "--stage1-name=%s", o->stage1_name);

        if (spec->host_network) {
                /* rkt refuses other --dns flags next to --dns=host; kubelet writes the
                 * node's resolv.conf into dns_config for host-network pods anyway. */
                /* No --hosts-entry=host: rkt would bind the node's /etc/hosts over every
                 * app's, kubelet's own (hostAliases) too; rkl_rkt_app_opts.hosts_file binds
                 * it where kubelet gives none. */
                rkl_strv_push(&a, "--net=host");
                const char *h = !isempty(spec->hostname) ? spec->hostname : o->node_hostname;
                if (!isempty(h))
                        pushf(&a, "--hostname=%s", h);
        } else {
                if (!isempty(spec->hostname))
                        pushf(&a, "--hostname=%s", spec->hostname);
                /* Without a network of rkt's, the pod gets a namespace with loopback only,
                 * for rktlet's CNI to set up. */
                pushf(&a, "--net=%s", o->net ? o->net : "none");
        }
        RKL_STRV_FOREACH (s, spec->dns_servers)
                pushf(&a, "--dns=%s", *s);
        RKL_STRV_FOREACH (s, spec->dns_searches)
                pushf(&a, "--dns-search=%s", *s);
        RKL_STRV_FOREACH (s, spec->dns_options)
                pushf(&a, "--dns-opt=%s", *s);

        for (size_t i = 0; i < spec->n_ports; i++) {
                const rkl_port_mapping *p = &spec->ports[i];
                if (p->protocol == RKL_PROTOCOL_SCTP && o->net)
                        return rkl_error_set(reterr, -EINVAL,
                                             "port_mappings[%zu]: rkt's networking (--net) "
                                             "cannot forward SCTP",
                                             i);
                /* Without a host port there is nothing to forward: the port is reachable
                 * on the pod IP. Host-network pods use the host's ports directly. With CNI,
                 * host ports are the portmap plugin's (rkt refuses --port with --net=none). */
                if (spec->host_network || !o->net || p->host_port <= 0 || p->container_port <= 0)
                        continue;
                pushf(&a, "--port=%s-%" PRIi32 "-%" PRIi32 ":%s:%" PRIi32 ":%s:%" PRIi32,
                      proto_name(p->protocol), p->container_port, p->host_port,
                      proto_name(p->protocol), p->container_port,
                      isempty(p->host_ip) ? "0.0.0.0" : p->host_ip, p->host_port);
        }

        pushf(&a, "--user-annotation=%s=%s", RKL_MARK_SANDBOX_ID, o->sandbox_id);
        pushf(&a, "--user-annotation=%s=%s", RKL_MARK_POD_UID, spec->uid);
        pushf(&a, "--user-annotation=%s=%s", RKL_MARK_POD_NAME, spec->name);
        pushf(&a, "--user-annotation=%s=%s", RKL_MARK_POD_NAMESPACE, spec->namespace);

        /* rkt has no per-app switch: privileged lifts restrictions for the whole pod. Every
         * pod runs without rkt's capability restriction, which would bound the whole pod by
         * nspawn's default set (no CAP_NET_ADMIN...) and let rkt's unit choose each app's:
         * rktlet's drop-in sets each app's bound instead (rkl_rkt_app_dropin()). */
        *ret_insecure = spec->privileged ? "all-run" : "capabilities";
        *ret = TAKE_PTR(a);
        return 0;
}

/* Every capability systemd 252 knows, by number (0 to 40): a name outside this list would
 * make systemd ignore the whole CapabilityBoundingSet= line, leaving the app every one. */
static const char *const known_caps[] = {
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
};

/* "sys_admin", "CAP_SYS_ADMIN" -> "CAP_SYS_ADMIN" */
static char *cap_canonical(const char *s)
{
        char *c = strncasecmp(s, "CAP_", 4) == 0 ? rkl_xstrdup(s) : rkl_xasprintf("CAP_%s", s);
        for (char *p = c; *p; p++)
                *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        return c;
}

static bool cap_in(char *const *l, const char *cap)
{
        RKL_STRV_FOREACH (s, l) {
                const char *name = strncasecmp(*s, "CAP_", 4) == 0 ? *s + 4 : *s;
                if (strcasecmp(name, cap + 4) == 0 || strcasecmp(*s, "ALL") == 0)
                        return true;
        }
        return false;
}

static bool is_known_cap(const char *cap)
{
        for (size_t i = 0; i < ELEMENTSOF(known_caps); i++)
                if (streq(known_caps[i], cap))
                        return true;
        return false;
}

/* Docker's denylist (rkt's @docker/default-blacklist) and the capability with which Docker's
 * default profile allows each all the same (NULL: never). rkt's own default is an allowlist of
 * 2016 without statx, rseq or clone3: it kills today's programs with SIGSYS at their first
 * thread or `ls -l`, so the runtime's default is this list instead. */
static const struct {
        const char *syscall, *cap;
} default_denied[] = {
    {"acct", "CAP_SYS_PACCT"},
    {"add_key", NULL},
    {"adjtimex", "CAP_SYS_TIME"},
    {"bpf", "CAP_SYS_ADMIN"},
    {"clock_adjtime", "CAP_SYS_TIME"},
    {"clock_settime", "CAP_SYS_TIME"},
    {"create_module", "CAP_SYS_MODULE"},
    {"delete_module", "CAP_SYS_MODULE"},
    {"finit_module", "CAP_SYS_MODULE"},
    {"get_kernel_syms", NULL},
    {"get_mempolicy", "CAP_SYS_NICE"},
    {"init_module", "CAP_SYS_MODULE"},
    {"ioperm", "CAP_SYS_RAWIO"},
    {"iopl", "CAP_SYS_RAWIO"},
    {"kcmp", "CAP_SYS_PTRACE"},
    {"kexec_file_load", "CAP_SYS_BOOT"},
    {"kexec_load", "CAP_SYS_BOOT"},
    {"keyctl", NULL},
    {"lookup_dcookie", "CAP_SYS_ADMIN"},
    {"mbind", "CAP_SYS_NICE"},
    {"mount", "CAP_SYS_ADMIN"},
    {"move_pages", NULL},
    {"name_to_handle_at", "CAP_DAC_READ_SEARCH"},
    {"nfsservctl", NULL},
    {"open_by_handle_at", "CAP_DAC_READ_SEARCH"},
    {"perf_event_open", "CAP_SYS_ADMIN"},
    {"pivot_root", "CAP_SYS_ADMIN"},
    {"process_vm_readv", "CAP_SYS_PTRACE"},
    {"process_vm_writev", "CAP_SYS_PTRACE"},
    {"ptrace", "CAP_SYS_PTRACE"},
    {"query_module", "CAP_SYS_MODULE"},
    {"quotactl", "CAP_SYS_ADMIN"},
    {"reboot", "CAP_SYS_BOOT"},
    {"request_key", NULL},
    {"set_mempolicy", "CAP_SYS_NICE"},
    {"setns", "CAP_SYS_ADMIN"},
    {"settimeofday", "CAP_SYS_TIME"},
    {"stime", "CAP_SYS_TIME"},
    {"swapon", "CAP_SYS_ADMIN"},
    {"swapoff", "CAP_SYS_ADMIN"},
    {"sysfs", NULL},
    {"_sysctl", NULL},
    {"umount", "CAP_SYS_ADMIN"},
    {"umount2", "CAP_SYS_ADMIN"},
    {"unshare", "CAP_SYS_ADMIN"},
    {"uselib", NULL},
    {"userfaultfd", NULL},
    {"ustat", NULL},
    {"vm86", NULL},
    {"vm86old", NULL},
};

static bool has_all(char *const *l)
{
        RKL_STRV_FOREACH (s, l)
                if (strcasecmp(*s, "ALL") == 0)
                        return true;
        return false;
}

/* Docker's TweakCapabilities over the default set: drop, then add; "ALL" works in both.
 * Space-separated, for CapabilityBoundingSet=; NULL: every capability (privileged, or ALL
 * added). */
static char *caps_bound(const rkl_container_spec *spec)
{
        _cleanup_strv_free_ char **caps = NULL;
        if (spec->privileged || has_all(spec->caps_add))
                return NULL;
        if (!has_all(spec->caps_drop))
                for (size_t i = 0; i < ELEMENTSOF(default_caps); i++)
                        if (!cap_in(spec->caps_drop, default_caps[i]))
                                rkl_strv_push(&caps, default_caps[i]);
        RKL_STRV_FOREACH (s, spec->caps_add) {
                _cleanup_free_ char *c = cap_canonical(*s);
                if (!cap_in(caps, c))
                        rkl_strv_push(&caps, c);
        }
        size_t len = 1;
        RKL_STRV_FOREACH (s, caps)
                len += strlen(*s) + 1;
        char *out = rkl_xmalloc(len), *p = out;
        *p = 0;
        RKL_STRV_FOREACH (s, caps)
                p += snprintf(p, len - (size_t)(p - out), "%s%s", p == out ? "" : " ", *s);
        return out;
}

/* Whether the app holds cap, by Docker's rules (as caps_bound() makes them). */
static bool holds_cap(const rkl_container_spec *spec, const char *cap)
{
        if (spec->privileged || has_all(spec->caps_add) || cap_in(spec->caps_add, cap))
                return true;
        if (has_all(spec->caps_drop) || cap_in(spec->caps_drop, cap))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(default_caps); i++)
                if (streq(default_caps[i], cap))
                        return true;
        return false;
}

/* RuntimeDefault's denylist for this spec: prefix, then each name after sep, then suffix. */
static char *default_seccomp(const rkl_container_spec *spec, const char *prefix, char sep,
                             const char *suffix)
{
        size_t len = strlen(prefix) + strlen(suffix) + 1;
        for (size_t i = 0; i < ELEMENTSOF(default_denied); i++)
                len += strlen(default_denied[i].syscall) + 1;
        char *out = rkl_xmalloc(len), *p = out;
        bool first = true;
        p += snprintf(p, len, "%s", prefix);
        for (size_t i = 0; i < ELEMENTSOF(default_denied); i++)
                if (!default_denied[i].cap || !holds_cap(spec, default_denied[i].cap)) {
                        if (!first)
                                *p++ = sep;
                        p += snprintf(p, len - (size_t)(p - out), "%s", default_denied[i].syscall);
                        first = false;
                }
        (void)snprintf(p, len - (size_t)(p - out), "%s", suffix);
        return out;
}

char *rkl_rkt_exec_seccomp(const rkl_container_spec *spec)
{
        /* What rkl_rkt_app_add_args() and rkl_rkt_app_dropin() give the app: rkt's stage1
         * writes its --seccomp as these same lines into the app's unit. */
        if (spec->privileged || spec->seccomp == RKL_SECCOMP_UNCONFINED)
                return NULL;
        if (spec->seccomp == RKL_SECCOMP_LOCALHOST)
                return spec->seccomp_unit ? rkl_xstrdup(spec->seccomp_unit) : NULL;
        return default_seccomp(spec, "SystemCallFilter=~", ' ',
                               "\nSystemCallErrorNumber=1\n"); /* EPERM */
}

int rkl_rkt_container_spec_check(const rkl_container_spec *spec, rkl_error *reterr)
{
        RKL_STRV_FOREACH (s, spec->caps_add) {
                if (strcasecmp(*s, "ALL") == 0)
                        continue;
                _cleanup_free_ char *c = cap_canonical(*s);
                if (!is_known_cap(c))
                        return rkl_error_set(reterr, -EINVAL,
                                             "linux.security_context.capabilities."
                                             "add_capabilities: %s is not a capability",
                                             c);
        }
        return 0;
}

char *rkl_rkt_app_dropin(const rkl_container_spec *spec)
{
        _cleanup_strv_free_ char **l = NULL;
        /* The pod runs with rkt's capability restriction off (rkl_rkt_sandbox_args()): the
         * app's bound is this one alone. The empty assignment clears any before it. */
        _cleanup_free_ char *caps = caps_bound(spec);
        if (caps)
                pushf(&l, "CapabilityBoundingSet=\nCapabilityBoundingSet=%s", caps);
        if (spec->no_new_privs)
                rkl_strv_push(&l, "NoNewPrivileges=yes");
        /* A privileged container ignores its profile, as with runc. */
        if (spec->seccomp == RKL_SECCOMP_LOCALHOST && spec->seccomp_unit && !spec->privileged)
                rkl_strv_push(&l, spec->seccomp_unit);
        if (!l)
                return NULL;
        size_t len = sizeof("[Service]\n");
        RKL_STRV_FOREACH (s, l)
                len += strlen(*s) + 1;
        char *out = rkl_xmalloc(len), *p = out;
        p += snprintf(p, len, "[Service]\n");
        RKL_STRV_FOREACH (s, l)
                p += snprintf(p, len - (size_t)(p - out), "%s\n", *s);
        return out;
}

/* s with every '%' doubled (taken over). */
static char *percent_doubled(char *s)
{
        size_t n = 0;
        for (const char *p = s; *p; p++)
                n += *p == '%';
        if (n == 0)
                return s;
        char *d = rkl_xmalloc(strlen(s) + n + 1), *q = d;
        for (const char *p = s; *p; p++) {
                *q++ = *p;
                if (*p == '%')
                        *q++ = '%';
        }
        *q = 0;
        free(s);
        return d;
}

/* The app's user, group and supplementary groups: the image's for the user when known
 * (ids), else the spec's. */
static void push_identity(char ***a, const rkl_container_spec *spec, const rkl_rkt_ids *ids)
{
        if (ids) {
                pushf(a, "--user=%" PRIi64, ids->uid);
                pushf(a, "--group=%" PRIi64, ids->gid);
        } else if (!isempty(spec->run_as_username))
                pushf(a, "--user=%s", spec->run_as_username);
        else if (spec->has_run_as_user)
                pushf(a, "--user=%" PRIi64, spec->run_as_user);
        if (!ids && spec->has_run_as_group)
                pushf(a, "--group=%" PRIi64, spec->run_as_group);
        /* The spec's groups, then the image's for the user (as containerd adds them). */
        size_t n_image = ids ? ids->n_groups : 0;
        if (spec->n_supplemental_groups + n_image > 0) {
                char buf[8192];
                size_t n = 0;
                for (size_t i = 0;
                     i < spec->n_supplemental_groups + n_image && n < sizeof(buf) - 32; i++)
                        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%" PRIi64, i ? "," : "",
                                              i < spec->n_supplemental_groups
                                                  ? spec->supplemental_groups[i]
                                                  : ids->groups[i - spec->n_supplemental_groups]);
                pushf(a, "--supplementary-gids=%s", buf);
        }
}

/* The app's command line: rkt keeps exec[0] and replaces the rest with our args
 * (stage0/app_add.go), so argv is always passed whole: command + args, or the image's
 * entrypoint + args, as Docker would run it. */
static void push_exec(char ***a, const rkl_container_spec *spec, const rkl_rkt_app_opts *o)
{
        _cleanup_strv_free_ char **argv = NULL;
        RKL_STRV_FOREACH (s, spec->command ? spec->command : o->image_entrypoint)
                rkl_strv_push(&argv, *s);
        RKL_STRV_FOREACH (s, spec->args)
                rkl_strv_push(&argv, *s);
        /* rkt writes them into the app's ExecStart= quoted but with '%' as is, and systemd
         * expands '%' specifiers there: "date +%s" would run with the unit's name in it,
         * and "%0" fails the unit. Doubled, systemd gives back the one '%'. */
        for (char **s = argv; s && *s; s++)
                *s = percent_doubled(*s);
        if (argv) {
                pushf(a, "--exec=%s", argv[0]);
                if (argv[1]) {
                        rkl_strv_push(a, "--");
                        for (char **s = argv + 1; *s; s++)
                                rkl_strv_push(a, *s);
                        rkl_strv_push(a, "---");
                }
        }
}

/* Paths as one annotation, separated by spaces (the API refuses a path with white space). */
static void push_paths(char ***a, const char *name, char *const *paths)
{
        if (!paths || !*paths)
                return;
        _cleanup_free_ char *v = rkl_strv_join(paths, " ");
        pushf(a, "--annotation=coreos.com/rkt/experiment/%s=%s", name, v);
}

int rkl_rkt_app_add_args(const char *uuid, const rkl_container_spec *spec,
                         const rkl_rkt_app_opts *o, char ***ret, rkl_error *reterr)
{
        _cleanup_strv_free_ char **a = NULL;

        rkl_strv_push(&a, "app");
        rkl_strv_push(&a, "add");
        rkl_strv_push(&a, uuid);
        rkl_strv_push(&a, o->image);
        pushf(&a, "--name=%s", o->app_name);
        pushf(&a, "--annotation=coreos.com/rkt/experiment/kubernetes-log-path=%s", o->log_file);
        pushf(&a, "--stdin=%s", spec->tty ? "tty" : spec->stdin_open ? "stream" : "null");
        /* packaging/rkt/stdin-once.patch: the app's stdin ends with its first attach. */
        if (!spec->tty && spec->stdin_open && spec->stdin_once)
                rkl_strv_push(&a, "--annotation=coreos.com/rkt/experiment/stdin-once=true");
        pushf(&a, "--stdout=%s", spec->tty ? "tty" : "stream");
        pushf(&a, "--stderr=%s", spec->tty ? "tty" : "stream");
        pushf(&a, "--user-annotation=%s=%s", RKL_MARK_CONTAINER_ID, o->container_id);
        /* packaging/rkt/stage1-path-masks.patch: prepare-app mounts them beside rkt's own. */
        push_paths(&a, "masked-paths", spec->masked_paths);
        push_paths(&a, "readonly-paths", spec->readonly_paths);

        for (size_t i = 0; i < spec->envs.n; i++)
                pushf(&a, "--environment=%s=%s", spec->envs.items[i].key,
                      spec->envs.items[i].value);
        if (!isempty(spec->working_dir))
                pushf(&a, "--working-dir=%s", spec->working_dir);
        if (spec->readonly_rootfs)
                rkl_strv_push(&a, "--readonly-rootfs=true");

        push_identity(&a, spec, o->ids && o->ids->set ? o->ids : NULL);

        if (spec->cpu_shares > 0)
                pushf(&a, "--cpu-shares=%" PRIi64, spec->cpu_shares);
        if (spec->cpu_quota > 0 && spec->cpu_period > 0)
                pushf(&a, "--cpu=%" PRIi64 "m", spec->cpu_quota * 1000 / spec->cpu_period);
        if (spec->memory_limit > 0)
                pushf(&a, "--memory=%" PRIi64, spec->memory_limit);
        if (spec->oom_score_adj != 0)
                pushf(&a, "--oom-score-adj=%" PRIi64, spec->oom_score_adj);

        int r = rkl_rkt_container_spec_check(spec, reterr);
        if (r < 0)
                return r;
        /* No filter of rkt's: unconfined, or the localhost profile alone (rktlet's drop-in). */
        if (spec->privileged || spec->seccomp != RKL_SECCOMP_RUNTIME_DEFAULT)
                rkl_strv_push(&a, "--seccomp=mode=retain,@appc.io/all");
        else
                rkl_strv_consume(
                    &a, default_seccomp(spec, "--seccomp=mode=remove,errno=EPERM,", ',', ""));

        bool hosts_mounted = false;
        for (size_t i = 0; i < spec->n_mounts; i++) {
                const rkl_mount *m = &spec->mounts[i];
                pushf(&a, "--mnt-volume=name=vol-%zu,kind=host,source=%s,target=%s,readOnly=%s", i,
                      m->host_path, m->container_path, m->readonly ? "true" : "false");
                if (streq(m->container_path, "/etc/hosts"))
                        hosts_mounted = true;
        }
        if (o->hosts_file && !hosts_mounted)
                pushf(&a,
                      "--mnt-volume=name=etc-hosts,kind=host,source=%s,target=/etc/hosts,"
                      "readOnly=true",
                      o->hosts_file);

        push_exec(&a, spec, o);
        *ret = TAKE_PTR(a);
        return 0;
}
