/* `rktlet check`'s checks on fixtures: a /proc and a /sys/fs/cgroup made in a temporary
 * directory, CNI configurations and plugin directories, sockets, a stand-in rkt with and
 * without its build record, mirrors on loopback. What only a real node shows (systemd, the
 * real rkt, the kernel's limit) is checked by tests/integration/test_check.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/config.h"
#include "base/fileio.h"
#include "base/strv.h"
#include "check/check.h"
#include "rkt/build.h"

typedef struct fixture {
        char dir[64];
} fixture;

static int setup(void **state)
{
        fixture *f = rkl_xnew0(fixture, 1);
        snprintf(f->dir, sizeof(f->dir), "/tmp/rkl-test-check-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        assert_int_equal(rkl_rm_rf_at(AT_FDCWD, f->dir), 0);
        free(f);
        return 0;
}

static char *path_in(fixture *f, const char *rel)
{
        return rkl_xasprintf("%s/%s", f->dir, rel);
}

static void put(fixture *f, const char *rel, const char *text, mode_t mode)
{
        _cleanup_free_ char *p = path_in(f, rel);
        _cleanup_free_ char *parent = rkl_xstrdup(p);
        *strrchr(parent, '/') = 0;
        assert_int_equal(rkl_mkdir_p(parent, 0755), 0);
        FILE *fp = fopen(p, "we");
        assert_non_null(fp);
        fputs(text, fp);
        assert_int_equal(fclose(fp), 0);
        assert_int_equal(chmod(p, mode), 0);
}

static void expect(const rkl_check_result *r, rkl_check_level level, const char *text)
{
        if (r->level != level || !strstr(r->text, text))
                fail_msg("%s: level %d '%s', wanted level %d with '%s'", r->name, r->level, r->text,
                         level, text);
}

/* ---- inotify ---- */

static void test_inotify_verdict(void **state)
{
        (void)state;
        rkl_check_result r;

        /* The kernel's default: about 40 pods, not kubelet's 110. */
        rkl_check_inotify_verdict(128, 18, &r);
        expect(&r, RKL_CHECK_FAIL,
               "fs.inotify.max_user_instances = 128, 18 in use by root: "
               "room for about 36 pods");
        expect(&r, RKL_CHECK_FAIL, "sysctl -w fs.inotify.max_user_instances=8192");
        rkl_check_result_done(&r);

        rkl_check_inotify_verdict(8192, 18, &r);
        expect(&r, RKL_CHECK_OK, "room for about 2724 pods");
        rkl_check_result_done(&r);

        /* Exactly enough, and already over the limit. */
        rkl_check_inotify_verdict(RKL_CHECK_PODS * RKL_CHECK_INOTIFY_PER_POD + 7, 7, &r);
        assert_int_equal(r.level, RKL_CHECK_OK);
        rkl_check_result_done(&r);
        rkl_check_inotify_verdict(128, 200, &r);
        expect(&r, RKL_CHECK_FAIL, "room for about 0 pods");
        rkl_check_result_done(&r);
}

static void test_inotify_reads_proc(void **state)
{
        fixture *f = *state;
        _cleanup_free_ char *proc = path_in(f, "proc");
        rkl_config o = {0};
        rkl_check_config c = {.config = &o, .proc = proc};
        rkl_check_result r;

        put(f, "proc/sys/fs/inotify/max_user_instances", "8192\n", 0644);
        rkl_check_inotify(&c, &r);
        expect(&r, RKL_CHECK_OK, "= 8192, 0 in use");
        rkl_check_result_done(&r);

        put(f, "proc/sys/fs/inotify/max_user_instances", "lots\n", 0644);
        rkl_check_inotify(&c, &r);
        expect(&r, RKL_CHECK_WARN, "not a number");
        rkl_check_result_done(&r);
}

/* ---- cgroups ---- */

static void test_cgroups_v2(void **state)
{
        fixture *f = *state;
        _cleanup_free_ char *cg = path_in(f, "cgroup");
        rkl_config o = {0};
        rkl_check_config c = {.config = &o, .cgroup = cg};
        rkl_check_result r;

        put(f, "cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n", 0644);
        rkl_check_cgroups(&c, &r);
        expect(&r, RKL_CHECK_OK,
               "cgroup v2 (unified); the controllers rktlet uses: cpuset, cpu, "
               "memory, pids");
        rkl_check_result_done(&r);

        put(f, "cgroup/cgroup.controllers", "cpu io pids\n", 0644);
        rkl_check_cgroups(&c, &r);
        expect(&r, RKL_CHECK_FAIL,
               "without memory, cpuset (for memory limits, stats and OOM "
               "kills, cpuset limits); has cpu, pids; enable them");
        rkl_check_result_done(&r);
}

static void test_cgroups_v1(void **state)
{
        fixture *f = *state;
        _cleanup_free_ char *cg = path_in(f, "cgroup");
        rkl_config o = {0};
        rkl_check_config c = {.config = &o, .cgroup = cg};
        rkl_check_result r;

        put(f, "cgroup/cpu/cgroup.procs", "", 0644);
        put(f, "cgroup/memory/cgroup.procs", "", 0644);
        rkl_check_cgroups(&c, &r);
        expect(&r, RKL_CHECK_FAIL, "without systemd's hierarchy");
        rkl_check_result_done(&r);

        put(f, "cgroup/systemd/cgroup.procs", "", 0644);
        put(f, "cgroup/cpuset/cgroup.procs", "", 0644);
        put(f, "cgroup/cpuacct/cgroup.procs", "", 0644);
        rkl_check_cgroups(&c, &r);
        expect(&r, RKL_CHECK_WARN, "cgroup v1 without pids (for pod stats)");
        rkl_check_result_done(&r);

        put(f, "cgroup/pids/cgroup.procs", "", 0644);
        put(f, "cgroup/unified/cgroup.controllers", "", 0644);
        rkl_check_cgroups(&c, &r);
        expect(&r, RKL_CHECK_OK,
               "cgroup v1 with cgroup2 beside it (hybrid); the controllers "
               "rktlet uses: cpu, memory, cpuset, pids, cpuacct");
        rkl_check_result_done(&r);
}

/* ---- CNI ---- */

static const char conflist[] =
    "{\"cniVersion\": \"1.0.0\", \"name\": \"podnet\", \"plugins\": ["
    "{\"type\": \"bridge\", \"bridge\": \"cni0\", \"ipam\": {\"type\": \"host-local\", "
    "\"subnet\": \"10.88.0.0/24\"}},"
    "{\"type\": \"portmap\", \"capabilities\": {\"portMappings\": true}}]}\n";

static void test_cni(void **state)
{
        fixture *f = *state;
        _cleanup_free_ char *conf = path_in(f, "net.d"), *bin = path_in(f, "bin");
        _cleanup_free_ char *none = path_in(f, "none");
        char *bin_dirs[] = {none, bin, NULL};
        rkl_config o = {.cni_conf_dir = conf, .cni_bin_dirs = bin_dirs};
        rkl_check_config c = {.config = &o};
        rkl_check_result r;

        assert_int_equal(rkl_mkdir_p(conf, 0755), 0);
        rkl_check_cni(&c, &r);
        expect(&r, RKL_CHECK_FAIL, "no network configuration in '");
        expect(&r, RKL_CHECK_FAIL, "set cni-conf-dir");
        rkl_check_result_done(&r);

        /* The IPAM plugin counts as much as the chain's: bridge runs it. */
        put(f, "net.d/10-podnet.conflist", conflist, 0644);
        put(f, "bin/bridge", "#!/bin/sh\n", 0755);
        put(f, "bin/portmap", "#!/bin/sh\n", 0644); /* not executable */
        rkl_check_cni(&c, &r);
        expect(&r, RKL_CHECK_FAIL,
               "runs bridge, host-local, portmap, but host-local, portmap are "
               "not in ");
        rkl_check_result_done(&r);

        put(f, "bin/host-local", "#!/bin/sh\n", 0755);
        put(f, "bin/portmap", "#!/bin/sh\n", 0755);
        rkl_check_cni(&c, &r);
        expect(&r, RKL_CHECK_OK,
               "network 'podnet', CNI 1.0.0, plugins bridge, host-local, "
               "portmap found in ");
        rkl_check_result_done(&r);

        put(f, "net.d/00-broken.conf", "{\"cniVersion\": \"9.9\"}", 0644);
        rkl_check_cni(&c, &r);
        expect(&r, RKL_CHECK_FAIL, "00-broken.conf");
        rkl_check_result_done(&r);

        /* rkt's own networking: nothing of CNI is read. */
        char net[] = "default";
        o.net = net;
        rkl_check_cni(&c, &r);
        expect(&r, RKL_CHECK_OK, "rkt's own network 'default'");
        rkl_check_result_done(&r);
}

/* ---- the socket ---- */

static void test_socket(void **state)
{
        fixture *f = *state;
        _cleanup_free_ char *sock = path_in(f, "rktlet.sock");
        rkl_config o = {.listen_path = sock, .socket_gid = getgid()};
        rkl_check_config c = {.config = &o};
        rkl_check_result r;

        rkl_check_socket(&c, &r);
        expect(&r, RKL_CHECK_WARN, "is not there");
        rkl_check_result_done(&r);

        put(f, "rktlet.sock", "", 0600);
        rkl_check_socket(&c, &r);
        expect(&r, RKL_CHECK_FAIL, "is not a socket");
        rkl_check_result_done(&r);
        assert_int_equal(unlink(sock), 0);

        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(chmod(sock, 0660), 0);
        rkl_check_socket(&c, &r);
        expect(&r, RKL_CHECK_OK, "mode 0660");
        rkl_check_result_done(&r);

        o.socket_gid = getgid() + 1;
        rkl_check_socket(&c, &r);
        expect(&r, RKL_CHECK_WARN, "not the configured group");
        rkl_check_result_done(&r);

        assert_int_equal(chmod(sock, 0666), 0);
        rkl_check_socket(&c, &r);
        expect(&r, RKL_CHECK_FAIL, "anyone on the machine can run pods as root");
        rkl_check_result_done(&r);
        close(fd);
}

/* ---- the state directory ---- */

static void test_state(void **state)
{
        fixture *f = *state;
        _cleanup_free_ char *sd = path_in(f, "state"), *data = path_in(f, "state/data");
        rkl_config o = {.state_dir = sd, .rkt_data_dir = data};
        rkl_check_config c = {.config = &o};
        rkl_check_result r;

        rkl_check_state(&c, &r);
        assert_int_not_equal(r.level, RKL_CHECK_FAIL); /* unless /tmp is nearly full */
        assert_non_null(strstr(r.text, "(made at the daemon's first start)"));
        assert_non_null(strstr(r.text, "with it;"));
        assert_non_null(strstr(r.text, " free of "));
        rkl_check_result_done(&r);

        assert_int_equal(mkdir(sd, 0755), 0);
        rkl_check_state(&c, &r);
        expect(&r, RKL_CHECK_FAIL, "is mode 0755: its database holds every pod's environment");
        rkl_check_result_done(&r);
}

/* ---- rkt ---- */

static char *sha256_hex(const char *text)
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned n = 0;
        char *hex = rkl_xmalloc(65);
        assert_true(EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL));
        for (unsigned i = 0; i < n; i++)
                snprintf(hex + 2 * i, 3, "%02x", md[i]);
        return hex;
}

static const char fake_rkt[] = "#!/bin/sh\necho 'rkt Version: 1.30.0'\n";

/* The record scripts/build-rkt would write for fake_rkt, with stage1 (NULL: none). */
static char *record(const char *stage1)
{
        _cleanup_free_ char *sum = sha256_hex(fake_rkt);
        char *text = rkl_xasprintf("rkt 1.30.0 %s\n", sum);
        if (stage1) {
                char *t = rkl_xasprintf("%sstage1 coreos.com/rkt/stage1-host:1.30.0 "
                                        "sha512-0123456789abcdef %s\n",
                                        text, stage1);
                free(text);
                text = t;
        }
        for (size_t i = 0; i < rkl_rkt_n_patches_wanted; i++) {
                char *t = rkl_xasprintf("%spatch %s %s\n", text, rkl_rkt_patches_wanted[i].sha256,
                                        rkl_rkt_patches_wanted[i].name);
                free(text);
                text = t;
        }
        return text;
}

static void test_rkt(void **state)
{
        fixture *f = *state;
        _cleanup_free_ char *rkt = path_in(f, "bin/rkt"), *data = path_in(f, "data");
        _cleanup_free_ char *stage1 = path_in(f, "bin/stage1-host.aci");
        rkl_config o = {.rkt_data_dir = data};
        rkl_check_config c = {.config = &o};
        rkl_check_result r;

        rkl_check_rkt(&c, &r);
        expect(&r, RKL_CHECK_FAIL, "no rkt: rkt-path is not set");
        rkl_check_result_done(&r);

        o.rkt_path = rkt;
        rkl_check_rkt(&c, &r);
        expect(&r, RKL_CHECK_FAIL, "No such file or directory; install the rktlet-rkt package");
        rkl_check_result_done(&r);

        /* An rkt from elsewhere: it runs, but nothing says it carries the fixes. */
        put(f, "bin/rkt", fake_rkt, 0755);
        rkl_check_rkt(&c, &r);
        expect(&r, RKL_CHECK_FAIL, "has no build record");
        rkl_check_result_done(&r);

        _cleanup_free_ char *plain = record(NULL);
        put(f, "bin/rkt.patches", plain, 0644);
        rkl_check_rkt(&c, &r);
        /* The patches in name order, without ".patch": the first of them opens the list. */
        const char *first = rkl_rkt_patches_wanted[0].name;
        _cleanup_free_ char *with =
            rkl_xasprintf("1.30.0 with %zu patches (%.*s, ", rkl_rkt_n_patches_wanted,
                          (int)(strlen(first) - strlen(".patch")), first);
        expect(&r, RKL_CHECK_OK, with);
        expect(&r, RKL_CHECK_OK, "(no stage1 recorded)");
        rkl_check_result_done(&r);

        /* A stage1 neither in rkt's store nor where the record says. */
        _cleanup_free_ char *with_stage1 = record(stage1);
        put(f, "bin/rkt.patches", with_stage1, 0644);
        rkl_check_rkt(&c, &r);
        expect(&r, RKL_CHECK_FAIL, "is not in rkt's store and its file");
        rkl_check_result_done(&r);

        put(f, "bin/stage1-host.aci", "", 0644);
        rkl_check_rkt(&c, &r);
        expect(&r, RKL_CHECK_OK,
               "stage1 coreos.com/rkt/stage1-host:1.30.0 sha512-0123456789ab... "
               "from '");
        rkl_check_result_done(&r);

        char other[] = "example.com/other-stage1:1";
        o.stage1_name = other;
        rkl_check_rkt(&c, &r);
        expect(&r, RKL_CHECK_WARN, "pods run stage1 'example.com/other-stage1:1' (stage1-name)");
        rkl_check_result_done(&r);
}

/* ---- systemd ---- */

static void test_systemd_unreachable(void **state)
{
        fixture *f = *state;
        _cleanup_free_ char *bus = rkl_xasprintf("unix:path=%s/no-such-socket", f->dir);
        rkl_config o = {.systemd_bus = bus};
        rkl_check_config c = {.config = &o};
        rkl_check_result r;

        rkl_check_systemd(&c, &r);
        expect(&r, RKL_CHECK_FAIL, "systemd is not reachable on unix:path=");
        expect(&r, RKL_CHECK_FAIL, "set systemd-bus");
        rkl_check_result_done(&r);
}

/* ---- mirrors, on loopback ---- */

typedef struct server {
        int fd;
        const char *answer; /* NULL: accept and close */
        pthread_t thread;
} server;

static void *serve(void *userdata)
{
        server *s = userdata;
        int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
        if (c >= 0) {
                char buf[512];
                (void)!read(c, buf, sizeof(buf));
                if (s->answer)
                        (void)!write(c, s->answer, strlen(s->answer));
                close(c);
        }
        return NULL;
}

static unsigned server_start(server *s, const char *answer)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(sa);
        s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        s->answer = answer;
        assert_int_equal(bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(s->fd, 4), 0);
        assert_int_equal(getsockname(s->fd, (struct sockaddr *)&sa, &len), 0);
        assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
        return ntohs(sa.sin_port);
}

static void server_stop(server *s)
{
        pthread_join(s->thread, NULL);
        close(s->fd);
}

static void check_mirror(const char *answer, const char *scheme, rkl_check_level level,
                         const char *text)
{
        rkl_config o = {0};
        rkl_check_config c = {.config = &o, .timeout_usec = 5000000};
        rkl_check_result r;
        server s;
        unsigned port = server_start(&s, answer);
        _cleanup_free_ char *spec = rkl_xasprintf("docker.io=%s127.0.0.1:%u", scheme, port);
        rkl_check_mirror(&c, spec, &r);
        server_stop(&s);
        expect(&r, level, text);
        rkl_check_result_done(&r);
}

static void test_mirrors(void **state)
{
        (void)state;
        check_mirror("HTTP/1.1 200 OK\r\n\r\n{}", "http://", RKL_CHECK_OK,
                     "a registry answers GET /v2/ (HTTP/1.1 200 OK)");
        check_mirror("HTTP/1.1 401 Unauthorized\r\n\r\n", "http://", RKL_CHECK_OK, "401");
        check_mirror("HTTP/1.0 404 Not Found\r\n\r\n", "http://", RKL_CHECK_WARN,
                     "not a registry's 200 or 401");
        check_mirror("SSH-2.0-OpenSSH\r\n", "http://", RKL_CHECK_WARN, "does not answer HTTP");
        check_mirror(NULL, "https://", RKL_CHECK_OK, "accepts connections (TLS not checked)");

        /* A port nothing listens on any more. */
        server s;
        unsigned port = server_start(&s, NULL);
        int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                 .sin_port = htons((uint16_t)port)};
        assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
        close(c);
        server_stop(&s);
        rkl_config o = {0};
        rkl_check_config cfg = {.config = &o, .timeout_usec = 5000000};
        rkl_check_result r;
        _cleanup_free_ char *spec = rkl_xasprintf("docker.io=http://127.0.0.1:%u", port);
        rkl_check_mirror(&cfg, spec, &r);
        expect(&r, RKL_CHECK_WARN, "Connection refused; pulls go to the registry itself");
        rkl_check_result_done(&r);
}

static void test_format(void **state)
{
        (void)state;
        rkl_check_result r = {.level = RKL_CHECK_FAIL, .name = "inotify", .text = (char *)"x"};
        _cleanup_free_ char *line = rkl_check_format(&r);
        assert_string_equal(line, "FAIL inotify: x");
        r.level = RKL_CHECK_OK;
        _cleanup_free_ char *ok = rkl_check_format(&r);
        assert_string_equal(ok, "ok   inotify: x");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_inotify_verdict),
            cmocka_unit_test_setup_teardown(test_inotify_reads_proc, setup, teardown),
            cmocka_unit_test_setup_teardown(test_cgroups_v2, setup, teardown),
            cmocka_unit_test_setup_teardown(test_cgroups_v1, setup, teardown),
            cmocka_unit_test_setup_teardown(test_cni, setup, teardown),
            cmocka_unit_test_setup_teardown(test_socket, setup, teardown),
            cmocka_unit_test_setup_teardown(test_state, setup, teardown),
            cmocka_unit_test_setup_teardown(test_rkt, setup, teardown),
            cmocka_unit_test_setup_teardown(test_systemd_unreachable, setup, teardown),
            cmocka_unit_test(test_mirrors),
            cmocka_unit_test(test_format),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
