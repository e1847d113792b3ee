/* CNI: which configuration a directory gives, and ADD, CHECK and DEL through the standard
 * plugins (Debian's containernetworking-plugins) against a real network namespace. The test
 * runs in a network namespace of its own (it unshares one first), so the bridge, the veths
 * and the iptables rules the plugins make never reach the machine's. A plugin that fails,
 * hangs or answers garbage is a script: those are the faults real plugins do not show on
 * demand. */
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/spawn.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "cni/cni.h"

#define PLUGINS "/usr/lib/cni"

static bool own_netns; /* the test could unshare a network namespace: real plugins may run */

typedef struct fixture {
        char dir[64];
        char conf_dir[96], bin_dir[96], data_dir[96], log[96];
        pid_t holder; /* holds the pod's network namespace */
        char netns[64];
} fixture;

static void write_file(const char *path, const char *text, mode_t mode)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
}

static void writef(const char *dir, const char *name, mode_t mode, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *text = NULL;
        assert_true(vasprintf(&text, fmt, ap) >= 0);
        va_end(ap);
        _cleanup_free_ char *path = rkl_xasprintf("%s/%s", dir, name);
        write_file(path, text, mode);
}

/* A plugin in the test's bin dir that notes what it was given (command, CNI_ARGS, stdin) in
 * the log, then runs the real one. */
static void recording_plugin(fixture *f, const char *type)
{
        writef(f->bin_dir, type, 0755,
               "#!/bin/sh\n"
               "in=$(cat)\n"
               "printf '%%s %s %%s %%s\\n' \"$CNI_COMMAND\" \"$CNI_ARGS\" \"$in\" >>%s\n"
               "printf '%%s' \"$in\" | exec %s/%s\n",
               type, f->log, PLUGINS, type);
}

static int setup(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        snprintf(f->dir, sizeof(f->dir), "/tmp/rktlet-test-cni-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->conf_dir, sizeof(f->conf_dir), "%s/net.d", f->dir);
        snprintf(f->bin_dir, sizeof(f->bin_dir), "%s/bin", f->dir);
        snprintf(f->data_dir, sizeof(f->data_dir), "%s/ipam", f->dir);
        snprintf(f->log, sizeof(f->log), "%s/calls", f->dir);
        assert_int_equal(mkdir(f->conf_dir, 0755), 0);
        assert_int_equal(mkdir(f->bin_dir, 0755), 0);
        if (own_netns) {
                f->holder = fork();
                assert_true(f->holder >= 0);
                if (f->holder == 0) {
                        if (unshare(CLONE_NEWNET) < 0)
                                _exit(1);
                        pause();
                        _exit(0);
                }
                snprintf(f->netns, sizeof(f->netns), "/proc/%d/ns/net", (int)f->holder);
                /* Until the child has unshared, its path names the test's own namespace. */
                struct stat mine, its;
                assert_int_equal(stat("/proc/self/ns/net", &mine), 0);
                for (int i = 0; i < 1000; i++) {
                        assert_int_equal(stat(f->netns, &its), 0);
                        if (its.st_ino != mine.st_ino)
                                break;
                        usleep(1000);
                }
                assert_int_not_equal(its.st_ino, mine.st_ino);
        }
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        if (f->holder > 0) {
                kill(f->holder, SIGKILL);
                waitpid(f->holder, NULL, 0);
        }
        if (!getenv("KEEP"))
                (void)rkl_rm_rf_at(AT_FDCWD, f->dir);
        free(f);
        return 0;
}

/* ---- The configuration ---- */

static void test_config_none(void **state)
{
        fixture *f = *state;
        rkl_cni_config *c = NULL;
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_cni_config_load_dir(f->conf_dir, &c, &err), -ENOENT);
        assert_non_null(strstr(err.msg, f->conf_dir));
        writef(f->conf_dir, "README", 0644, "not a config");
        writef(f->conf_dir, ".hidden.conf", 0644, "{}");
        assert_int_equal(rkl_cni_config_load_dir(f->conf_dir, &c, &err), -ENOENT);
        _cleanup_free_ char *missing = rkl_xasprintf("%s/nope", f->dir);
        assert_int_equal(rkl_cni_config_load_dir(missing, &c, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "nope"));
}

static void test_config_order(void **state)
{
        fixture *f = *state;
        _cleanup_(rkl_cni_config_freep) rkl_cni_config *c = NULL;
        rkl_error err = RKL_ERROR_INIT;
        writef(f->conf_dir, "99-last.conflist", 0644,
               "{\"cniVersion\":\"1.0.0\",\"name\":\"last\",\"plugins\":[{\"type\":\"bridge\"}]}");
        writef(
            f->conf_dir, "10-first.conf", 0644,
            "{\"cniVersion\":\"0.3.1\",\"name\":\"first\",\"type\":\"bridge\",\"bridge\":\"b0\"}");
        assert_int_equal(rkl_cni_config_load_dir(f->conf_dir, &c, &err), 0);
        assert_string_equal(rkl_cni_config_name(c), "first");
        assert_string_equal(rkl_cni_config_version(c), "0.3.1");
        assert_string_equal(rkl_cni_config_types(c), "bridge");
        assert_non_null(strstr(rkl_cni_config_source(c), "10-first.conf"));
        /* A .conf becomes the list of itself: what a sandbox keeps parses again. */
        const char *json = rkl_cni_config_json(c);
        assert_non_null(strstr(json, "\"plugins\":[{"));
        _cleanup_(rkl_cni_config_freep) rkl_cni_config *again = NULL;
        assert_int_equal(rkl_cni_config_parse(json, strlen(json), "stored", &again, &err), 0);
        assert_string_equal(rkl_cni_config_json(again), json);
}

static void expect_invalid(fixture *f, const char *text, const char *needle)
{
        rkl_cni_config *c = NULL;
        rkl_error err = RKL_ERROR_INIT;
        writef(f->conf_dir, "10-net.conflist", 0644, "%s", text);
        assert_int_equal(rkl_cni_config_load_dir(f->conf_dir, &c, &err), -EINVAL);
        assert_null(c);
        if (!strstr(err.msg, needle) || !strstr(err.msg, "10-net.conflist"))
                fail_msg("'%s' does not name the file and say '%s'", err.msg, needle);
}

static void test_config_invalid(void **state)
{
        fixture *f = *state;
        expect_invalid(f, "{\"cniVersion\":\"1.0.0\",", "invalid JSON");
        expect_invalid(f, "[]", "not a JSON object");
        expect_invalid(f, "{\"name\":\"n\",\"plugins\":[{\"type\":\"bridge\"}]}", "cniVersion");
        expect_invalid(f,
                       "{\"cniVersion\":\"0.2.0\",\"name\":\"n\",\"plugins\":[{\"type\":\"b\"}]}",
                       "'0.2.0' is not supported");
        expect_invalid(f,
                       "{\"cniVersion\":\"1.0.0\",\"name\":\"-n\",\"plugins\":[{\"type\":\"b\"}]}",
                       "not a network name");
        expect_invalid(f, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[]}", "0 plugins");
        expect_invalid(
            f, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[{\"type\":\"../sh\"}]}",
            "not a plugin name");
        expect_invalid(f, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[{\"t\":1}]}",
                       "plugins[0]: no \"type\"");
        expect_invalid(f, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":7}", "type");
}

/* ---- Runs ---- */

static char *bin_dirs[3];

static rkl_cni_exec exec_of(fixture *f, uint64_t timeout_usec)
{
        bin_dirs[0] = f->bin_dir;
        bin_dirs[1] = (char *)PLUGINS;
        bin_dirs[2] = NULL;
        return (rkl_cni_exec){.bin_dirs = bin_dirs, .timeout_usec = timeout_usec};
}

/* Each test its own bridge: one left by an earlier test holds another subnet. */
static rkl_cni_config *network(fixture *f, const char *version, const char *subnet, bool portmap)
{
        _cleanup_free_ char *text = rkl_xasprintf(
            "{\"cniVersion\":\"%s\",\"name\":\"podnet\",\"plugins\":["
            "{\"type\":\"bridge\",\"bridge\":\"br%.4s\",\"isGateway\":true,\"ipMasq\":false,"
            "\"ipam\":{\"type\":\"host-local\",\"subnet\":\"%s\",\"dataDir\":\"%s\","
            "\"routes\":[{\"dst\":\"0.0.0.0/0\"}]}},"
            "%s{\"type\":\"bandwidth\",\"capabilities\":{\"bandwidth\":true}}]}",
            version, version, subnet, f->data_dir,
            portmap ? "{\"type\":\"portmap\",\"capabilities\":{\"portMappings\":true}}," : "");
        rkl_cni_config *c = NULL;
        rkl_error err = RKL_ERROR_INIT;
        if (rkl_cni_config_parse(text, strlen(text), "test", &c, &err) < 0)
                fail_msg("%s", err.msg);
        return c;
}

static void pod_runtime(fixture *f, const char *id, rkl_cni_runtime *ret)
{
        static rkl_port_mapping ports[] = {
            {.protocol = RKL_PROTOCOL_TCP, .container_port = 80, .host_port = 8080},
            {.protocol = RKL_PROTOCOL_UDP, .container_port = 53, .host_port = 0},
        };
        rkl_cni_pod pod = {
            .sandbox_id = id,
            .netns = f->netns,
            .namespace = "ns1",
            .name = "web",
            .uid = "uid-1",
            .ports = ports,
            .n_ports = ELEMENTSOF(ports),
            .dns_servers = RKL_STRV("10.96.0.10"),
            .ingress_bps = 1000000,
        };
        rkl_cni_runtime_for_pod(&pod, ret);
}

static char *ip_in_netns(fixture *f)
{
        rkl_spawn_result res = {0};
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *net = rkl_xasprintf("--net=%s", f->netns);
        assert_int_equal(rkl_spawn_run(RKL_STRV("/usr/bin/nsenter", net, "/usr/sbin/ip", "-4", "-o",
                                                "addr", "show", "eth0"),
                                       NULL, &res, &err),
                         0);
        char *out = res.exit_code == 0 ? rkl_xstrdup(res.out) : NULL;
        rkl_spawn_result_done(&res);
        return out;
}

static size_t count_lines(const char *path, const char *needle)
{
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        if (rkl_read_file_at(AT_FDCWD, path, 1 << 22, &text, NULL) < 0)
                return 0;
        for (char *l = text; (l = strstr(l, needle)); l++)
                n++;
        return n;
}

static void skip_without_plugins(void)
{
        if (!own_netns || access(PLUGINS "/bridge", X_OK) < 0)
                skip();
}

static void test_add_check_del(void **state)
{
        fixture *f = *state;
        skip_without_plugins();
        _cleanup_(rkl_cni_config_freep) rkl_cni_config *c =
            network(f, "1.0.0", "10.99.1.0/24", true);
        rkl_cni_exec x = exec_of(f, 30 * USEC_PER_SEC);
        rkl_cni_runtime rt;
        rkl_error err = RKL_ERROR_INIT;
        const char *id = "aaaa000000000000000000000000000000000000000000000000000000000001";
        recording_plugin(f, "bridge");
        recording_plugin(f, "portmap");
        recording_plugin(f, "bandwidth");
        pod_runtime(f, id, &rt);

        _cleanup_free_ char *result = NULL;
        if (rkl_cni_add(c, &x, &rt, &result, &err) < 0)
                fail_msg("ADD: %s", err.msg);
        _cleanup_strv_free_ char **ips = NULL;
        assert_int_equal(rkl_cni_result_ips(result, &ips, &err), 0);
        assert_int_equal(rkl_strv_length(ips), 1);
        assert_true(!strncmp(ips[0], "10.99.1.", 8));
        _cleanup_free_ char *shown = ip_in_netns(f);
        assert_non_null(shown);
        assert_non_null(strstr(shown, ips[0]));
        _cleanup_free_ char *lease = rkl_xasprintf("%s/podnet/%s", f->data_dir, ips[0]);
        assert_int_equal(access(lease, F_OK), 0);

        /* What each plugin was given: CNI_ARGS, the list's name and version, the capabilities
         * it declares and only those, its predecessor's result. */
        assert_int_equal(count_lines(f->log, " IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;"
                                             "K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=aaaa"),
                         3);
        assert_int_equal(count_lines(f->log, "\"name\":\"podnet\",\"cniVersion\":\"1.0.0\""), 3);
        assert_int_equal(count_lines(f->log, "\"runtimeConfig\":{\"portMappings\":[{\"hostPort\":"
                                             "8080,\"containerPort\":80,\"protocol\":\"tcp\""),
                         1);
        assert_int_equal(count_lines(f->log, "\"runtimeConfig\":{\"bandwidth\":{\"ingressRate\":"
                                             "1000000,"),
                         1);
        /* bridge declares no capability, and none declares dns. */
        assert_int_equal(count_lines(f->log, "\"runtimeConfig\""), 2);
        assert_int_equal(count_lines(f->log, "ADD"), 3);
        assert_int_equal(count_lines(f->log, "\"prevResult\""), 2);

        if (rkl_cni_del(c, &x, &rt, result, &err) < 0)
                fail_msg("DEL: %s", err.msg);
        assert_int_equal(access(lease, F_OK), -1);
        _cleanup_free_ char *gone = ip_in_netns(f);
        assert_null(gone);
        /* Reverse order, each with the result. */
        _cleanup_free_ char *log = NULL;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, f->log, 1 << 22, &log, NULL), 0);
        char *d1 = strstr(log, "DEL bandwidth"), *d2 = strstr(log, "DEL portmap"),
             *d3 = strstr(log, "DEL bridge");
        assert_true(d1 && d2 && d3 && d1 < d2 && d2 < d3);
        assert_non_null(strstr(d3, "\"prevResult\""));

        /* Again, and with no result at all (an ADD that never finished): both succeed. */
        if (rkl_cni_del(c, &x, &rt, result, &err) < 0)
                fail_msg("second DEL: %s", err.msg);
        if (rkl_cni_del(c, &x, &rt, NULL, &err) < 0)
                fail_msg("DEL without a result: %s", err.msg);
        rkl_cni_runtime_done(&rt);
}

static void test_version_031(void **state)
{
        fixture *f = *state;
        skip_without_plugins();
        _cleanup_(rkl_cni_config_freep) rkl_cni_config *c =
            network(f, "0.3.1", "10.99.2.0/24", true);
        rkl_cni_exec x = exec_of(f, 30 * USEC_PER_SEC);
        rkl_cni_runtime rt;
        rkl_error err = RKL_ERROR_INIT;
        recording_plugin(f, "bridge");
        pod_runtime(f, "bbbb000000000000000000000000000000000000000000000000000000000002", &rt);
        _cleanup_free_ char *result = NULL;
        if (rkl_cni_add(c, &x, &rt, &result, &err) < 0)
                fail_msg("ADD: %s", err.msg);
        _cleanup_strv_free_ char **ips = NULL;
        assert_int_equal(rkl_cni_result_ips(result, &ips, &err), 0);
        assert_true(ips && !strncmp(ips[0], "10.99.2.", 8));
        /* 0.3.x has no CHECK, and DEL gets no prevResult. */
        assert_int_equal(rkl_cni_check(c, &x, &rt, result, &err), -EOPNOTSUPP);
        if (rkl_cni_del(c, &x, &rt, result, &err) < 0)
                fail_msg("DEL: %s", err.msg);
        _cleanup_free_ char *log = NULL;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, f->log, 1 << 22, &log, NULL), 0);
        char *del = strstr(log, "DEL bridge");
        assert_non_null(del);
        assert_null(strstr(del, "prevResult"));
        rkl_cni_runtime_done(&rt);
}

/* CHECK finds what ADD made, and says what is missing once it is gone. (Debian's portmap
 * 1.1.1 fails CHECK for a pod without IPv6 while ip6tables works, so it is left out here.) */
static void test_check(void **state)
{
        fixture *f = *state;
        skip_without_plugins();
        _cleanup_(rkl_cni_config_freep) rkl_cni_config *c =
            network(f, "0.4.0", "10.99.3.0/24", false);
        rkl_cni_exec x = exec_of(f, 30 * USEC_PER_SEC);
        rkl_cni_runtime rt;
        rkl_error err = RKL_ERROR_INIT;
        pod_runtime(f, "cccc000000000000000000000000000000000000000000000000000000000003", &rt);
        _cleanup_free_ char *result = NULL;
        if (rkl_cni_add(c, &x, &rt, &result, &err) < 0)
                fail_msg("ADD: %s", err.msg);
        if (rkl_cni_check(c, &x, &rt, result, &err) < 0)
                fail_msg("CHECK: %s", err.msg);
        _cleanup_free_ char *net = rkl_xasprintf("--net=%s", f->netns);
        rkl_spawn_result res = {0};
        assert_int_equal(
            rkl_spawn_run(RKL_STRV("/usr/bin/nsenter", net, "/usr/sbin/ip", "link", "del", "eth0"),
                          NULL, &res, &err),
            0);
        assert_int_equal(res.exit_code, 0);
        rkl_spawn_result_done(&res);
        assert_int_equal(rkl_cni_check(c, &x, &rt, result, &err), -EIO);
        assert_non_null(strstr(err.msg, "plugin 'bridge' (CHECK)"));
        if (rkl_cni_del(c, &x, &rt, result, &err) < 0)
                fail_msg("DEL: %s", err.msg);
        rkl_cni_runtime_done(&rt);
}

/* ---- Faults ---- */

/* What the fault plugins are run against: no namespace of a pod's. */
static rkl_cni_runtime fault_runtime(void)
{
        return (rkl_cni_runtime){.container_id = (char *)"c1",
                                 .netns = (char *)"/nonexistent",
                                 .ifname = (char *)"eth0",
                                 .args = (char *)"IgnoreUnknown=1",
                                 .capabilities = (char *)"{}"};
}

static rkl_cni_config *one_plugin(const char *type)
{
        _cleanup_free_ char *text = rkl_xasprintf(
            "{\"cniVersion\":\"1.0.0\",\"name\":\"faulty\",\"plugins\":[{\"type\":\"%s\"}]}", type);
        rkl_cni_config *c = NULL;
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_cni_config_parse(text, strlen(text), "test", &c, &err), 0);
        return c;
}

static int run_add(fixture *f, const char *type, uint64_t timeout_usec, rkl_error *err)
{
        _cleanup_(rkl_cni_config_freep) rkl_cni_config *c = one_plugin(type);
        rkl_cni_exec x = exec_of(f, timeout_usec);
        rkl_cni_runtime rt = fault_runtime();
        _cleanup_free_ char *result = NULL;
        int r = rkl_cni_add(c, &x, &rt, &result, err);
        if (r == 0)
                fail_msg("ADD of '%s' succeeded: %s", type, result);
        return r;
}

static void test_missing_plugin(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(run_add(f, "flannel-not-here", USEC_PER_SEC, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "plugin 'flannel-not-here' not found in"));
        assert_non_null(strstr(err.msg, f->bin_dir));
}

static void test_plugin_error(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        writef(f->bin_dir, "fails", 0755,
               "#!/bin/sh\ncat >/dev/null\n"
               "echo '{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"no IP left\","
               "\"details\":\"10.0.0.0/30 is full\"}'\necho noise >&2\nexit 1\n");
        assert_int_equal(run_add(f, "fails", USEC_PER_SEC * 5, &err), -EIO);
        assert_string_equal(err.msg,
                            "plugin 'fails' (ADD): no IP left: 10.0.0.0/30 is full (CNI error 11)");

        writef(f->bin_dir, "crashes", 0755,
               "#!/bin/sh\necho 'panic: runtime error' >&2\necho 'goroutine 1' >&2\nexit 2\n");
        assert_int_equal(run_add(f, "crashes", USEC_PER_SEC * 5, &err), -EIO);
        assert_string_equal(err.msg, "plugin 'crashes' (ADD) failed with exit status 2: "
                                     "goroutine 1");

        writef(f->bin_dir, "garbage", 0755, "#!/bin/sh\necho 'not json'\n");
        assert_int_equal(run_add(f, "garbage", USEC_PER_SEC * 5, &err), -EBADMSG);
        assert_non_null(strstr(err.msg, "plugin 'garbage' (ADD) answered no result"));

        writef(f->bin_dir, "notexec", 0644, "#!/bin/sh\n");
        assert_int_equal(run_add(f, "notexec", USEC_PER_SEC, &err), -ENOENT);
}

static void test_plugin_hangs(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *pidfile = rkl_xasprintf("%s/child.pid", f->dir);
        /* It and a child of its own ignore SIGTERM: the deadline's SIGKILL takes both. */
        writef(f->bin_dir, "hangs", 0755,
               "#!/bin/sh\ntrap '' TERM\nsleep 1000 &\necho $! >%s\nwait\n", pidfile);
        int64_t t0 = rkl_now_usec(CLOCK_MONOTONIC);
        assert_int_equal(run_add(f, "hangs", 300 * USEC_PER_MSEC, &err), -ETIMEDOUT);
        assert_non_null(strstr(err.msg, "plugin 'hangs' (ADD) did not finish within"));
        assert_true(rkl_now_usec(CLOCK_MONOTONIC) - t0 < 20 * (int64_t)USEC_PER_SEC);
        _cleanup_free_ char *pid = NULL;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, pidfile, 64, &pid, NULL), 0);
        int child = atoi(pid);
        for (int i = 0; i < 200 && kill(child, 0) == 0; i++)
                usleep(10000);
        assert_int_equal(kill(child, 0), -1);
}

static void test_del_goes_on(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *ran = rkl_xasprintf("%s/ran", f->dir);
        writef(f->bin_dir, "first", 0755, "#!/bin/sh\ncat >/dev/null\ntouch %s\n", ran);
        writef(f->bin_dir, "second", 0755, "#!/bin/sh\necho broken >&2\nexit 3\n");
        const char *text = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":["
                           "{\"type\":\"first\"},{\"type\":\"second\"}]}";
        _cleanup_(rkl_cni_config_freep) rkl_cni_config *c = NULL;
        assert_int_equal(rkl_cni_config_parse(text, strlen(text), "t", &c, &err), 0);
        rkl_cni_exec x = exec_of(f, 5 * USEC_PER_SEC);
        rkl_cni_runtime rt = fault_runtime();
        assert_int_equal(rkl_cni_del(c, &x, &rt, NULL, &err), -EIO);
        assert_non_null(strstr(err.msg, "plugin 'second' (DEL) failed with exit status 3"));
        assert_int_equal(access(ran, F_OK), 0); /* the first still ran */
}

/* A plugin no longer installed holds nothing DEL could release: skipped, counted, named. */
static void test_del_skips_missing(void **state)
{
        fixture *f = *state;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *ran = rkl_xasprintf("%s/ran", f->dir);
        writef(f->bin_dir, "first", 0755, "#!/bin/sh\ncat >/dev/null\ntouch %s\n", ran);
        const char *text = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":["
                           "{\"type\":\"first\"},{\"type\":\"gone\"}]}";
        _cleanup_(rkl_cni_config_freep) rkl_cni_config *c = NULL;
        assert_int_equal(rkl_cni_config_parse(text, strlen(text), "t", &c, &err), 0);
        rkl_cni_exec x = exec_of(f, 5 * USEC_PER_SEC);
        rkl_cni_runtime rt = fault_runtime();
        assert_int_equal(rkl_cni_del(c, &x, &rt, NULL, &err), 1);
        assert_string_equal(err.msg, "not installed, skipped: gone");
        assert_int_equal(access(ran, F_OK), 0);
}

static void test_result_ips(void **state)
{
        (void)state;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_strv_free_ char **ips = NULL;
        assert_int_equal(rkl_cni_result_ips("{\"ips\":[{\"address\":\"fd00::5/64\"},"
                                            "{\"address\":\"10.1.0.5/24\"},{\"gateway\":\"x\"}]}",
                                            &ips, &err),
                         0);
        assert_int_equal(rkl_strv_length(ips), 2);
        assert_string_equal(ips[0], "10.1.0.5");
        assert_string_equal(ips[1], "fd00::5");
        _cleanup_strv_free_ char **none = NULL;
        assert_int_equal(rkl_cni_result_ips("{\"cniVersion\":\"1.0.0\"}", &none, &err), 0);
        assert_null(none);
        assert_int_equal(rkl_cni_result_ips("[1]", &none, &err), -EBADMSG);
        assert_int_equal(rkl_cni_result_ips(NULL, &none, &err), -EBADMSG);
}

static void test_runtime_args(void **state)
{
        (void)state;
        rkl_cni_pod pod = {
            .sandbox_id = "s1", .netns = "/ns", .namespace = "a;b", .name = "n", .uid = "u"};
        rkl_cni_runtime rt;
        rkl_cni_runtime_for_pod(&pod, &rt);
        /* A value that would split CNI_ARGS is left out. */
        assert_string_equal(rt.args, "IgnoreUnknown=1;K8S_POD_NAME=n;K8S_POD_INFRA_CONTAINER_ID=s1;"
                                     "K8S_POD_UID=u");
        assert_string_equal(rt.capabilities, "{}");
        assert_string_equal(rt.ifname, "eth0");
        rkl_cni_runtime_done(&rt);
}

int main(void)
{
        /* Plugins make bridges, veths and iptables rules where they run: here, never in the
         * machine's namespace. Without the privilege, the tests of real plugins skip. */
        own_netns = geteuid() == 0 && unshare(CLONE_NEWNET) == 0;
        if (own_netns)
                (void)system("ip link set lo up");
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_config_none, setup, teardown),
            cmocka_unit_test_setup_teardown(test_config_order, setup, teardown),
            cmocka_unit_test_setup_teardown(test_config_invalid, setup, teardown),
            cmocka_unit_test_setup_teardown(test_add_check_del, setup, teardown),
            cmocka_unit_test_setup_teardown(test_version_031, setup, teardown),
            cmocka_unit_test_setup_teardown(test_check, setup, teardown),
            cmocka_unit_test_setup_teardown(test_missing_plugin, setup, teardown),
            cmocka_unit_test_setup_teardown(test_plugin_error, setup, teardown),
            cmocka_unit_test_setup_teardown(test_plugin_hangs, setup, teardown),
            cmocka_unit_test_setup_teardown(test_del_goes_on, setup, teardown),
            cmocka_unit_test_setup_teardown(test_del_skips_missing, setup, teardown),
            cmocka_unit_test(test_result_ips),
            cmocka_unit_test(test_runtime_args),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
