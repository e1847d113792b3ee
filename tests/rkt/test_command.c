/* argv builders: what rktlet asks rkt to do for a given CRI config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "rkt/command.h"

static bool has(char **l, const char *s)
{
        RKL_STRV_FOREACH (p, l)
                if (streq(*p, s))
                        return true;
        return false;
}

static char **strv(const char *a, const char *b, const char *c)
{
        char **l = NULL;
        if (a)
                rkl_strv_push(&l, a);
        if (b)
                rkl_strv_push(&l, b);
        if (c)
                rkl_strv_push(&l, c);
        return l;
}

static void pod(rkl_pod_spec *s)
{
        *s = (rkl_pod_spec){
            .name = rkl_xstrdup("web"),
            .uid = rkl_xstrdup("uid-1"),
            .namespace = rkl_xstrdup("default"),
            .hostname = rkl_xstrdup("web-0"),
            .dns_servers = strv("10.0.0.10", NULL, NULL),
            .dns_searches = strv("svc.cluster.local", NULL, NULL),
            .dns_options = strv("ndots:5", NULL, NULL),
        };
        s->ports = rkl_xnew0(rkl_port_mapping, 3);
        s->ports[0] = (rkl_port_mapping){RKL_PROTOCOL_TCP, 80, 8080, NULL};
        s->ports[1] = (rkl_port_mapping){RKL_PROTOCOL_UDP, 53, 5353, rkl_xstrdup("127.0.0.1")};
        s->ports[2] = (rkl_port_mapping){RKL_PROTOCOL_TCP, 9090, 0, NULL};
        s->n_ports = 3;
}

static const rkl_rkt_sandbox_opts sandbox_opts = {
    .sandbox_id = "abcd",
    .uuid_file = "/var/lib/rktlet/pods/abcd/uuid",
    .log_dir = "/var/lib/rktlet/logs/abcd",
    .net = "k8s",
    .node_hostname = "node1",
};

static void test_sandbox(void **state)
{
        rkl_pod_spec s;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **a = NULL;
        const char *insecure = "x";

        pod(&s);
        assert_int_equal(rkl_rkt_sandbox_args(&s, &sandbox_opts, &a, &insecure, &err), 0);
        assert_string_equal(a[0], "app");
        assert_string_equal(a[1], "sandbox");
        assert_true(has(a, "--uuid-file-save=/var/lib/rktlet/pods/abcd/uuid"));
        assert_true(has(a, "--hostname=web-0"));
        assert_true(has(a, "--net=k8s"));
        assert_true(has(a, "--dns=10.0.0.10"));
        assert_true(has(a, "--dns-search=svc.cluster.local"));
        assert_true(has(a, "--dns-opt=ndots:5"));
        assert_true(has(a, "--port=tcp-80-8080:tcp:80:0.0.0.0:8080"));
        assert_true(has(a, "--port=udp-53-5353:udp:53:127.0.0.1:5353"));
        assert_false(has(a, "--port=tcp-9090-0:tcp:9090:0.0.0.0:0"));
        assert_true(has(a, "--user-annotation=rktlet.io/sandbox-id=abcd"));
        assert_true(has(a, "--user-annotation=rktlet.io/pod-uid=uid-1"));
        assert_true(has(a, "--annotation=coreos.com/rkt/experiment/kubernetes-log-dir="
                           "/var/lib/rktlet/logs/abcd"));
        assert_string_equal(insecure, "capabilities");
        rkl_pod_spec_done(&s);
}

/* With rktlet's CNI: a namespace of the pod's own with loopback only, and host ports left to
 * the portmap plugin (rkt refuses --port beside --net=none). */
static void test_sandbox_cni(void **state)
{
        rkl_pod_spec s;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **a = NULL;
        const char *insecure;
        rkl_rkt_sandbox_opts o = sandbox_opts;
        o.net = NULL;

        pod(&s);
        s.ports[2].protocol = RKL_PROTOCOL_SCTP; /* portmap's to forward */
        assert_int_equal(rkl_rkt_sandbox_args(&s, &o, &a, &insecure, &err), 0);
        assert_true(has(a, "--net=none"));
        assert_true(has(a, "--dns=10.0.0.10"));
        for (char **p = a; *p; p++)
                assert_false(strncmp(*p, "--port=", 7) == 0);
        rkl_pod_spec_done(&s);
}

static void test_sandbox_host_network(void **state)
{
        rkl_pod_spec s;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **a = NULL;
        const char *insecure;

        pod(&s);
        s.host_network = true;
        s.privileged = true;
        s.hostname = mfree(s.hostname);
        assert_int_equal(rkl_rkt_sandbox_args(&s, &sandbox_opts, &a, &insecure, &err), 0);
        assert_true(has(a, "--net=host"));
        /* The node's /etc/hosts comes by app (rkl_rkt_app_opts.hosts_file), not rkt's flag,
         * which would hide kubelet's own file. */
        for (char **p = a; *p; p++)
                assert_false(strncmp(*p, "--hosts-entry", 13) == 0);
        assert_true(has(a, "--hostname=node1"));
        assert_false(has(a, "--net=k8s"));
        /* Host ports are the host's own: no forwarding. */
        assert_false(has(a, "--port=tcp-80-8080:tcp:80:0.0.0.0:8080"));
        assert_string_equal(insecure, "all-run");
        rkl_pod_spec_done(&s);
}

static void test_sandbox_sctp_refused(void **state)
{
        rkl_pod_spec s;
        rkl_error err = RKL_ERROR_INIT;
        char **a = NULL;
        const char *insecure;

        pod(&s);
        s.ports[0].protocol = RKL_PROTOCOL_SCTP;
        assert_int_equal(rkl_rkt_sandbox_args(&s, &sandbox_opts, &a, &insecure, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "port_mappings[0]"));
        assert_null(a);
        rkl_pod_spec_done(&s);
}

static const rkl_rkt_app_opts app_opts = {
    .container_id = "ffee",
    .app_name = "cffee",
    .image = "sha512-0123",
    .log_file = "cffee.log",
};

static void test_app_add(void **state)
{
        rkl_container_spec c = {
            .command = strv("/bin/sh", "-c", NULL),
            .args = strv("echo hi; sleep 1", NULL, NULL),
            .working_dir = rkl_xstrdup("/srv"),
            .readonly_rootfs = true,
            .has_run_as_user = true,
            .run_as_user = 1000,
            .has_run_as_group = true,
            .run_as_group = 50,
            .cpu_quota = 50000,
            .cpu_period = 100000,
            .cpu_shares = 512,
            .memory_limit = 64 << 20,
            .oom_score_adj = 500,
            .caps_add = strv("SYS_ADMIN", NULL, NULL),
            .caps_drop = strv("CAP_CHOWN", "kill", NULL),
        };
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **a = NULL;

        rkl_kvs_add(&c.envs, "PATH", "/bin");
        rkl_kvs_add(&c.envs, "LIST", "a,b=c");
        c.supplemental_groups = rkl_xnew0(int64_t, 2);
        c.supplemental_groups[0] = 10;
        c.supplemental_groups[1] = 20;
        c.n_supplemental_groups = 2;
        c.mounts = rkl_xnew0(rkl_mount, 1);
        c.mounts[0] = (rkl_mount){rkl_xstrdup("/data"), rkl_xstrdup("/srv/data"), true};
        c.n_mounts = 1;

        assert_int_equal(rkl_rkt_app_add_args("uuid-1", &c, &app_opts, &a, &err), 0);
        assert_string_equal(a[0], "app");
        assert_string_equal(a[1], "add");
        assert_string_equal(a[2], "uuid-1");
        assert_string_equal(a[3], "sha512-0123");
        assert_true(has(a, "--name=cffee"));
        assert_true(has(a, "--stdin=null"));
        assert_true(has(a, "--stdout=stream"));
        assert_true(has(a, "--environment=PATH=/bin"));
        assert_true(has(a, "--environment=LIST=a,b=c"));
        assert_true(has(a, "--working-dir=/srv"));
        assert_true(has(a, "--readonly-rootfs=true"));
        assert_true(has(a, "--user=1000"));
        assert_true(has(a, "--group=50"));
        assert_true(has(a, "--supplementary-gids=10,20"));
        assert_true(has(a, "--cpu=500m"));
        assert_true(has(a, "--cpu-shares=512"));
        assert_true(has(a, "--memory=67108864"));
        assert_true(has(a, "--oom-score-adj=500"));
        assert_true(has(a, "--mnt-volume=name=vol-0,kind=host,source=/srv/data,target=/data,"
                           "readOnly=true"));
        assert_true(has(a, "--user-annotation=rktlet.io/container-id=ffee"));
        for (char **p = a; *p; p++)
                assert_null(strstr(*p, "target=/etc/hosts"));
        /* Docker's defaults, minus the drops, plus the adds: the drop-in's bound alone. */
        RKL_STRV_FOREACH (p, a)
                assert_true(strncmp(*p, "--caps-", 7) != 0);
        _cleanup_free_ char *dropin = rkl_rkt_app_dropin(&c);
        const char *bound = strstr(dropin, "CapabilityBoundingSet=\nCapabilityBoundingSet=");
        assert_non_null(bound);
        bound += strlen("CapabilityBoundingSet=\nCapabilityBoundingSet=");
        _cleanup_free_ char *line = rkl_xstrndup(bound, strcspn(bound, "\n"));
        assert_null(strstr(line, "CAP_CHOWN"));
        assert_null(strstr(line, "CAP_KILL"));
        assert_non_null(strstr(line, "CAP_SYS_ADMIN"));
        assert_non_null(strstr(line, "CAP_SETUID"));

        /* The whole argv follows --exec, framed by -- and ---. */
        size_t n = rkl_strv_length(a);
        assert_string_equal(a[n - 5], "--exec=/bin/sh");
        assert_string_equal(a[n - 4], "--");
        assert_string_equal(a[n - 3], "-c");
        assert_string_equal(a[n - 2], "echo hi; sleep 1");
        assert_string_equal(a[n - 1], "---");
        rkl_container_spec_done(&c);
}

static void test_app_add_hosts_file(void **state)
{
        rkl_container_spec c = {.command = strv("/bin/true", NULL, NULL)};
        rkl_rkt_app_opts o = app_opts;
        rkl_error err = RKL_ERROR_INIT;
        const char *node = "--mnt-volume=name=etc-hosts,kind=host,source=/etc/hosts,"
                           "target=/etc/hosts,readOnly=true";

        o.hosts_file = "/etc/hosts";
        _cleanup_strv_free_ char **a = NULL;
        assert_int_equal(rkl_rkt_app_add_args("uuid-1", &c, &o, &a, &err), 0);
        assert_true(has(a, node));

        /* kubelet's file (hostAliases on a host-network pod) wins over the node's. */
        c.mounts = rkl_xnew0(rkl_mount, 1);
        c.mounts[0] = (rkl_mount){rkl_xstrdup("/etc/hosts"), rkl_xstrdup("/k/etc-hosts"), false};
        c.n_mounts = 1;
        _cleanup_strv_free_ char **b = NULL;
        assert_int_equal(rkl_rkt_app_add_args("uuid-1", &c, &o, &b, &err), 0);
        assert_false(has(b, node));
        assert_true(has(b, "--mnt-volume=name=vol-0,kind=host,source=/k/etc-hosts,"
                           "target=/etc/hosts,readOnly=false"));
        rkl_container_spec_done(&c);
}

static void test_app_add_stdin_once(void **state)
{
        const char *once = "--annotation=coreos.com/rkt/experiment/stdin-once=true";
        rkl_container_spec c = {
            .command = strv("/bin/sh", NULL, NULL), .stdin_open = true, .stdin_once = true};
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **a = NULL, **b = NULL, **t = NULL;

        assert_int_equal(rkl_rkt_app_add_args("u", &c, &app_opts, &a, &err), 0);
        assert_true(has(a, "--stdin=stream"));
        assert_true(has(a, once));
        /* stdin without stdin_once stays open; a terminal is rkt's ttymux, not iomux. */
        c.stdin_once = false;
        assert_int_equal(rkl_rkt_app_add_args("u", &c, &app_opts, &b, &err), 0);
        assert_false(has(b, once));
        c.stdin_once = c.tty = true;
        assert_int_equal(rkl_rkt_app_add_args("u", &c, &app_opts, &t, &err), 0);
        assert_false(has(t, once));
        rkl_container_spec_done(&c);
}

static void test_app_add_args_only_uses_entrypoint(void **state)
{
        rkl_container_spec c = {.args = strv("60", NULL, NULL), .tty = true};
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **a = NULL;
        _cleanup_strv_free_ char **ep = strv("/bin/sleep", NULL, NULL);
        rkl_rkt_app_opts o = app_opts;
        o.image_entrypoint = ep;

        assert_int_equal(rkl_rkt_app_add_args("u", &c, &o, &a, &err), 0);
        assert_true(has(a, "--stdin=tty"));
        assert_true(has(a, "--stdout=tty"));
        assert_false(has(a, "--annotation=coreos.com/rkt/experiment/stdin-once=true"));
        size_t n = rkl_strv_length(a);
        assert_string_equal(a[n - 4], "--exec=/bin/sleep");
        assert_string_equal(a[n - 2], "60");
        rkl_container_spec_done(&c);
}

/* systemd expands '%' in ExecStart=, which rkt does not escape: "date +%s" must reach the
 * app as it was given. */
static void test_app_add_percent_doubled(void **state)
{
        rkl_container_spec c = {.command = strv("/bin/da%te", NULL, NULL),
                                .args = strv("+%s", "100%%", NULL)};
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **a = NULL;

        assert_int_equal(rkl_rkt_app_add_args("u", &c, &app_opts, &a, &err), 0);
        size_t n = rkl_strv_length(a);
        assert_string_equal(a[n - 5], "--exec=/bin/da%%te");
        assert_string_equal(a[n - 3], "+%%s");
        assert_string_equal(a[n - 2], "100%%%%");
        rkl_container_spec_done(&c);
}

static void test_app_add_security(void **state)
{
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **a = NULL, **b = NULL;
        char **none = NULL;
        rkl_container_spec c = {.seccomp = RKL_SECCOMP_UNCONFINED,
                                .caps_drop = strv("ALL", NULL, NULL)};

        assert_int_equal(rkl_rkt_app_add_args("u", &c, &app_opts, &a, &err), 0);
        assert_true(has(a, "--seccomp=mode=retain,@appc.io/all"));
        /* Everything dropped: an empty bound. */
        _cleanup_free_ char *none_bound = rkl_rkt_app_dropin(&c);
        assert_string_equal(none_bound,
                            "[Service]\nCapabilityBoundingSet=\nCapabilityBoundingSet=\n");

        /* A localhost profile alone: no filter of rkt's, the profile's in the drop-in. */
        rkl_container_spec l = {.seccomp = RKL_SECCOMP_LOCALHOST,
                                .seccomp_unit = rkl_xstrdup("SystemCallFilter=~chmod")};
        assert_int_equal(rkl_rkt_app_add_args("u", &l, &app_opts, &none, &err), 0);
        assert_true(has(none, "--seccomp=mode=retain,@appc.io/all"));
        _cleanup_free_ char *dropin = rkl_rkt_app_dropin(&l);
        assert_non_null(strstr(dropin, "\nSystemCallFilter=~chmod\n"));
        rkl_strv_free(none);
        rkl_container_spec_done(&l);

        /* Privileged, or "ALL" added: no bound at all, drops or not. */
        rkl_container_spec p = {.privileged = true, .caps_drop = strv("ALL", NULL, NULL)};
        assert_int_equal(rkl_rkt_app_add_args("u", &p, &app_opts, &b, &err), 0);
        assert_null(rkl_rkt_app_dropin(&p));

        /* Any capability the kernel has; a name systemd would not know is refused. */
        rkl_container_spec n = {.caps_add = strv("net_admin", NULL, NULL)};
        assert_int_equal(rkl_rkt_container_spec_check(&n, &err), 0);
        rkl_strv_free(n.caps_add);
        n.caps_add = strv("CAP_NOT_ONE", NULL, NULL);
        assert_int_equal(rkl_rkt_container_spec_check(&n, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "add_capabilities"));
        rkl_container_spec_done(&c);
        rkl_container_spec_done(&p);
        rkl_container_spec_done(&n);
}

static void test_app_dropin(void **state)
{
        rkl_container_spec c = {.privileged = true};
        assert_null(rkl_rkt_app_dropin(&c));
        c.no_new_privs = true;
        c.masked_paths = strv("/proc/kcore", "/sys/firmware", NULL);
        _cleanup_free_ char *d = rkl_rkt_app_dropin(&c);
        /* The paths go to rkt as annotations (test_app_paths), not into the unit. */
        assert_string_equal(d, "[Service]\n"
                               "NoNewPrivileges=yes\n");
        rkl_container_spec_done(&c);
}

static void test_app_paths(void **state)
{
        rkl_error err = RKL_ERROR_INIT;
        char **a = NULL;
        rkl_container_spec c = {0};
        assert_int_equal(rkl_rkt_app_add_args("u", &c, &app_opts, &a, &err), 0);
        RKL_STRV_FOREACH (s, a)
                assert_null(strstr(*s, "-paths="));
        rkl_strv_free(a);
        a = NULL;
        c.masked_paths = strv("/proc/kcore", "/sys/firmware", NULL);
        c.readonly_paths = strv("/proc/sys", NULL, NULL);
        assert_int_equal(rkl_rkt_app_add_args("u", &c, &app_opts, &a, &err), 0);
        assert_true(has(a, "--annotation=coreos.com/rkt/experiment/masked-paths="
                           "/proc/kcore /sys/firmware"));
        assert_true(has(a, "--annotation=coreos.com/rkt/experiment/readonly-paths=/proc/sys"));
        rkl_strv_free(a);
        rkl_container_spec_done(&c);
}

static void test_default_seccomp(void **state)
{
        rkl_error err = RKL_ERROR_INIT;
        char **a = NULL;
        const char *flag = NULL;
        rkl_container_spec c = {.caps_add = strv("SYS_ADMIN", NULL, NULL)};
        assert_int_equal(rkl_rkt_app_add_args("u", &c, &app_opts, &a, &err), 0);
        RKL_STRV_FOREACH (s, a)
                if (strncmp(*s, "--seccomp=", 10) == 0)
                        flag = *s;
        /* Docker's denylist, less what CAP_SYS_ADMIN lets Docker's profile do. */
        assert_non_null(flag);
        assert_true(strncmp(flag, "--seccomp=mode=remove,errno=EPERM,acct,add_key,", 47) == 0);
        assert_non_null(strstr(flag, ",ptrace,"));
        assert_null(strstr(flag, ",mount,"));
        assert_null(strstr(flag, ",unshare,"));
        rkl_strv_free(a);
        rkl_container_spec_done(&c);
}

/* What the exec helper is told: the filter the app runs under, in the unit's lines. */
static void test_exec_seccomp(void **state)
{
        rkl_container_spec c = {.caps_add = strv("SYS_ADMIN", NULL, NULL)};
        _cleanup_free_ char *def = rkl_rkt_exec_seccomp(&c);
        assert_non_null(def);
        assert_true(strncmp(def, "SystemCallFilter=~acct add_key ", 31) == 0);
        assert_non_null(strstr(def, " ptrace "));
        assert_null(strstr(def, " mount "));
        const char *tail = strstr(def, " vm86old\n");
        assert_non_null(tail);
        assert_string_equal(tail, " vm86old\nSystemCallErrorNumber=1\n");
        rkl_container_spec_done(&c);

        rkl_container_spec l = {.seccomp = RKL_SECCOMP_LOCALHOST,
                                .seccomp_unit = rkl_xstrdup("SystemCallFilter=~chmod\n")};
        _cleanup_free_ char *local = rkl_rkt_exec_seccomp(&l);
        assert_string_equal(local, "SystemCallFilter=~chmod\n");
        /* A privileged container ignores its profile; unconfined has none. */
        l.privileged = true;
        assert_null(rkl_rkt_exec_seccomp(&l));
        rkl_container_spec_done(&l);
        rkl_container_spec u = {.seccomp = RKL_SECCOMP_UNCONFINED};
        assert_null(rkl_rkt_exec_seccomp(&u));
}

static void test_seccomp_profile(void **state)
{
        rkl_error err = RKL_ERROR_INIT;
        char *u = NULL;
        static const char block[] =
            "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"chmod\", "
            "\"fchmodat\"], \"action\": \"SCMP_ACT_ERRNO\"}, {\"name\": \"sethostname\", "
            "\"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1}]}";
        assert_int_equal(rkl_rkt_seccomp_profile_to_unit(block, strlen(block), &u, &err), 0);
        assert_string_equal(u, "SystemCallFilter=\nSystemCallFilter=~chmod fchmodat sethostname\n"
                               "SystemCallErrorNumber=1\n");
        free(u);
        static const char allow[] =
            "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38, \"syscalls\": "
            "[{\"names\": [\"read\", \"exit\"], \"action\": \"SCMP_ACT_ALLOW\"}]}";
        assert_int_equal(rkl_rkt_seccomp_profile_to_unit(allow, strlen(allow), &u, &err), 0);
        assert_string_equal(u, "SystemCallFilter=\nSystemCallFilter=read exit\n"
                               "SystemCallErrorNumber=38\n");
        free(u);
        static const char *const refused[] = {
            "{\"defaultAction\": \"SCMP_ACT_TRACE\"}",
            ("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"kill\"], "
             "\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 1, \"value\": 9, "
             "\"op\": \"SCMP_CMP_EQ\"}]}]}"),
            ("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"a\"], "
             "\"action\": \"SCMP_ACT_ERRNO\"}, {\"names\": [\"b\"], \"action\": "
             "\"SCMP_ACT_KILL\"}]}"),
            "{\"defaultAction\": \"SCMP_ACT_ERRNO\"}",
            ("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"x y\"], "
             "\"action\": \"SCMP_ACT_ERRNO\"}]}"),
            "not json",
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                assert_int_equal(
                    rkl_rkt_seccomp_profile_to_unit(refused[i], strlen(refused[i]), &u, &err),
                    i == ELEMENTSOF(refused) - 1 ? -EBADMSG : -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_sandbox),
            cmocka_unit_test(test_sandbox_cni),
            cmocka_unit_test(test_sandbox_host_network),
            cmocka_unit_test(test_sandbox_sctp_refused),
            cmocka_unit_test(test_app_add),
            cmocka_unit_test(test_app_add_hosts_file),
            cmocka_unit_test(test_app_add_stdin_once),
            cmocka_unit_test(test_app_add_args_only_uses_entrypoint),
            cmocka_unit_test(test_app_add_percent_doubled),
            cmocka_unit_test(test_app_dropin),
            cmocka_unit_test(test_app_paths),
            cmocka_unit_test(test_default_seccomp),
            cmocka_unit_test(test_seccomp_profile),
            cmocka_unit_test(test_exec_seccomp),
            cmocka_unit_test(test_app_add_security),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
