/* What the helper reads of the app's process: /proc/PID/status (a real rkt 1.30 app's, as
 * fixture), environ, PATH, and the status pipe's words. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/strv.h"
#include "exec/exec-internal.h"

static char *fixture(const char *name)
{
        _cleanup_free_ char *rel = rkl_xasprintf("exec/%s", name);
        return rkl_test_fixture_read(rel, NULL);
}

/* A root app of rkt's host stage1: the 14 capabilities of its default set, seccomp from
 * systemd's SystemCallFilter=, supplementary groups 44 and 55. */
static void test_creds_rkt_app(void **state)
{
        _cleanup_free_ char *status = fixture("status-rkt-app");
        rkl_exec_creds c;

        assert_int_equal(rkl_exec__creds_parse(status, &c), 0);
        for (int i = 0; i < 4; i++) {
                assert_int_equal(c.uid[i], 0);
                assert_int_equal(c.gid[i], 0);
        }
        assert_int_equal(c.n_groups, 2);
        assert_int_equal(c.groups[0], 44);
        assert_int_equal(c.groups[1], 55);
        assert_true(c.cap_eff == 0xa80425fb);
        assert_true(c.cap_prm == 0xa80425fb);
        assert_true(c.cap_bnd == 0xa80425fb);
        assert_true(c.cap_inh == 0);
        assert_true(c.cap_amb == 0);
        assert_false(c.no_new_privs);
        assert_int_equal(c.seccomp, 2);
        assert_true(c.has_umask);
        assert_int_equal(c.umask, 022);
        rkl_exec__creds_done(&c);
}

static void test_creds_variants(void **state)
{
        rkl_exec_creds c;
        const char *nonroot = "Name:\tsleep\nUmask:\t0027\nUid:\t1000\t1001\t1002\t1003\n"
                              "Gid:\t1234\t1234\t1234\t1234\nGroups:\t\nCapInh:\t0000000000000400\n"
                              "CapPrm:\t0000000000000400\nCapEff:\t0000000000000400\n"
                              "CapBnd:\t000001ffffdfffff\nCapAmb:\t0000000000000400\n"
                              "NoNewPrivs:\t1\nSeccomp:\t0\n";
        assert_int_equal(rkl_exec__creds_parse(nonroot, &c), 0);
        assert_int_equal(c.uid[0], 1000);
        assert_int_equal(c.uid[3], 1003);
        assert_int_equal(c.gid[2], 1234);
        assert_int_equal(c.n_groups, 0);
        assert_true(c.cap_amb == 0x400);
        assert_true(c.cap_bnd == UINT64_C(0x1ffffdfffff));
        assert_true(c.no_new_privs);
        assert_int_equal(c.umask, 027);
        rkl_exec__creds_done(&c);

        /* An old kernel's: no CapAmb, NoNewPrivs, Seccomp or Umask; defaults stand. */
        const char *old = "Uid:\t5\t5\t5\t5\nGid:\t6\t6\t6\t6\nGroups:\t7\nCapInh:\t0\n"
                          "CapPrm:\t0\nCapEff:\t0\nCapBnd:\tffffffffff\n";
        assert_int_equal(rkl_exec__creds_parse(old, &c), 0);
        assert_int_equal(c.n_groups, 1);
        assert_true(c.cap_amb == 0);
        assert_false(c.has_umask);
        rkl_exec__creds_done(&c);

        static const char *const bad[] = {
            "Gid:\t0\t0\t0\t0\nGroups:\t\nCapInh:\t0\nCapPrm:\t0\nCapEff:\t0\nCapBnd:\t0\n",
            "Uid:\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapInh:\t0\nCapPrm:\t0\nCapEff:\t0\n"
            "CapBnd:\t0\n",
            "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\tx\nCapInh:\t0\nCapPrm:\t0\n"
            "CapEff:\t0\nCapBnd:\t0\n",
            "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapInh:\tzz\nCapPrm:\t0\n"
            "CapEff:\t0\nCapBnd:\t0\n",
            "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapInh:\t0\nCapPrm:\t0\n"
            "CapEff:\t0\n",
            "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t1 2\nCapInh:\t0\nCapPrm:\t0\n"
            "CapEff:\t0\nCapBnd:\t0\nNoNewPrivs:\t7\n",
            "",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(rkl_exec__creds_parse(bad[i], &c), -EBADMSG);
}

static void test_environ(void **state)
{
        static const char text[] = "PATH=/bin\0FOO=bar\0LISTEN_FDS=2\0LISTEN_PID=55\0"
                                   "NOTIFY_SOCKET=/run/x\0junk\0=x\0EMPTY=\0\0INVOCATION_ID=1\0"
                                   "LAST=unterminated";
        _cleanup_strv_free_ char **env = rkl_exec__environ_parse(text, sizeof(text) - 1);
        assert_int_equal(rkl_strv_length(env), 5);
        assert_string_equal(env[0], "PATH=/bin");
        assert_string_equal(env[1], "FOO=bar");
        assert_string_equal(env[2], "EMPTY=");
        assert_string_equal(env[3], "INVOCATION_ID=1");
        assert_string_equal(env[4], "LAST=unterminated");
        assert_string_equal(rkl_exec__path_of(env), "/bin");

        _cleanup_strv_free_ char **none = rkl_exec__environ_parse("", 0);
        assert_non_null(none);
        assert_null(none[0]);
        assert_string_equal(rkl_exec__path_of(none),
                            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
}

static void test_limits(void **state)
{
        _cleanup_free_ char *text = fixture("limits-rkt-app");
        struct rlimit l[RLIM_NLIMITS];
        bool has[RLIM_NLIMITS];

        assert_int_equal(rkl_exec__limits_parse(text, l, has), 0);
        for (int i = 0; i < RLIM_NLIMITS; i++)
                assert_true(has[i]);
        assert_true(l[RLIMIT_NOFILE].rlim_cur == 1024 && l[RLIMIT_NOFILE].rlim_max == 20000);
        assert_true(l[RLIMIT_STACK].rlim_cur == 8388608 &&
                    l[RLIMIT_STACK].rlim_max == RLIM_INFINITY);
        assert_true(l[RLIMIT_CPU].rlim_cur == RLIM_INFINITY);
        assert_true(l[RLIMIT_NICE].rlim_max == 0);

        assert_int_equal(rkl_exec__limits_parse("Limit  Soft Limit\n", l, has), 0);
        assert_false(has[RLIMIT_NOFILE]);
        assert_int_equal(rkl_exec__limits_parse("Max open files     12    \n", l, has), -EBADMSG);
        assert_int_equal(rkl_exec__limits_parse("Max open files  x  y  files\n", l, has), -EBADMSG);
}

static void test_status_words(void **state)
{
        char msg[64];
        assert_int_equal(rkl_exec__status_parse("3 process 12 is gone\n", msg, sizeof(msg)),
                         -ESRCH);
        assert_string_equal(msg, "process 12 is gone");
        assert_int_equal(rkl_exec__status_parse("95 user namespace", msg, sizeof(msg)),
                         -EOPNOTSUPP);
        assert_int_equal(rkl_exec__status_parse("", msg, sizeof(msg)), -EBADMSG);
        assert_int_equal(rkl_exec__status_parse("x y", msg, sizeof(msg)), -EBADMSG);
        assert_int_equal(rkl_exec__status_parse("0 zero", msg, sizeof(msg)), -EBADMSG);
        assert_int_equal(rkl_exec__status_parse("-5 negative", msg, sizeof(msg)), -EBADMSG);
        assert_int_equal(rkl_exec__status_parse("12", msg, sizeof(msg)), -EBADMSG);
}

/* The unit lines rktlet writes for an app (src/rkt/command.c, seccomp.c), as the helper
 * reads them. */
static void test_filter(void **state)
{
        rkl_exec_filter f;
        assert_int_equal(rkl_exec__filter_parse("SystemCallFilter=\nSystemCallFilter=~chmod "
                                                "fchmodat sethostname\nSystemCallErrorNumber=1\n",
                                                &f),
                         0);
        assert_true(f.active);
        assert_false(f.allow_list);
        assert_int_equal(f.errno_ret, 1);
        assert_int_equal(rkl_strv_length(f.names), 3);
        assert_string_equal(f.names[2], "sethostname");
        rkl_exec__filter_done(&f);

        /* An allow list that kills (no error number), over two lines. */
        assert_int_equal(rkl_exec__filter_parse("SystemCallFilter=read exit\n\n"
                                                "SystemCallFilter=write\n",
                                                &f),
                         0);
        assert_true(f.active && f.allow_list);
        assert_int_equal(f.errno_ret, 0);
        assert_int_equal(rkl_strv_length(f.names), 3);
        rkl_exec__filter_done(&f);

        /* Cleared last, or nothing but an error number: no filter. */
        static const char *const none[] = {"SystemCallFilter=~mount\nSystemCallFilter=\n",
                                           "SystemCallErrorNumber=1\n", "", "\n"};
        for (size_t i = 0; i < ELEMENTSOF(none); i++) {
                assert_int_equal(rkl_exec__filter_parse(none[i], &f), 0);
                assert_false(f.active);
                assert_null(f.names);
        }

        static const char *const bad[] = {
            "SystemCallFilter=~mount\nSystemCallFilter=read\n", /* both modes */
            "SystemCallFilter=@default\n",
            "SystemCallFilter=~Mount\n",
            "SystemCallErrorNumber=0\n",
            "SystemCallErrorNumber=4096\n",
            "SystemCallErrorNumber=EPERM\n",
            "SystemCallArchitectures=native\n",
            " SystemCallFilter=~mount\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (rkl_exec__filter_parse(bad[i], &f) != -EBADMSG)
                        fail_msg("'%s' was taken", bad[i]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_creds_rkt_app), cmocka_unit_test(test_creds_variants),
            cmocka_unit_test(test_environ),       cmocka_unit_test(test_limits),
            cmocka_unit_test(test_status_words),  cmocka_unit_test(test_filter),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
