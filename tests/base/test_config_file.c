/* The configuration parser: pairs in order, comments and blank lines skipped, and every
 * error names the file and the line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config-file.h"
#include "base/macro.h"

typedef struct seen {
        char buf[512];
} seen;

static int collect(const char *key, const char *value, void *userdata, rkl_error *reterr)
{
        seen *s = userdata;
        if (streq(key, "bad-value"))
                return rkl_error_set(reterr, -EINVAL, "%s takes a number, not '%s'", key, value);
        if (streq(key, "unknown"))
                return rkl_error_set(reterr, -EINVAL, "unknown key '%s'", key);
        size_t n = strlen(s->buf);
        snprintf(s->buf + n, sizeof(s->buf) - n, "[%s=%s]", key, value);
        return 0;
}

static void test_pairs(void **state)
{
        (void)state;
        seen s = {{0}};
        rkl_error err = RKL_ERROR_INIT;
        const char *text = "# a comment\n"
                           "\n"
                           "listen = /run/x.sock\n"
                           "  max-actions=8  \r\n"
                           "\t# indented comment\n"
                           "net =\n"
                           "registry-mirror = docker.io=http://127.0.0.1:5000\n"
                           "sync-full = true"; /* no final newline */
        assert_int_equal(rkl_config_file_parse("f.conf", text, collect, &s, &err), 0);
        assert_string_equal(s.buf, "[listen=/run/x.sock][max-actions=8][net=]"
                                   "[registry-mirror=docker.io=http://127.0.0.1:5000]"
                                   "[sync-full=true]");
}

static void expect_error(const char *text, int code, const char *msg)
{
        seen s = {{0}};
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_config_file_parse("/etc/rktlet/rktlet.conf", text, collect, &s, &err),
                         code);
        assert_int_equal(err.code, code);
        if (!streq(err.msg, msg))
                fail_msg("got '%s', want '%s'", err.msg, msg);
}

static void test_errors_name_the_line(void **state)
{
        (void)state;
        expect_error("listen = /a\n\n# c\nbad-value = x\n", -EINVAL,
                     "/etc/rktlet/rktlet.conf:4: bad-value takes a number, not 'x'");
        expect_error("listen = /a\nunknown = 1\n", -EINVAL,
                     "/etc/rktlet/rktlet.conf:2: unknown key 'unknown'");
        expect_error("\n\n\nno equals sign\n", -EINVAL,
                     "/etc/rktlet/rktlet.conf:4: expected 'key = value', not 'no equals sign'");
        expect_error("--listen = /a\n", -EINVAL,
                     "/etc/rktlet/rktlet.conf:1: invalid key '--listen' (lowercase letters, "
                     "digits and '-', as the flags without their '--')");
        expect_error("= x\n", -EINVAL,
                     "/etc/rktlet/rktlet.conf:1: invalid key '' (lowercase letters, digits and "
                     "'-', as the flags without their '--')");
}

static void test_load(void **state)
{
        (void)state;
        rkl_error err = RKL_ERROR_INIT;
        seen s = {{0}};
        char path[] = "/tmp/test_config_file.XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "a = 1\nb = 2\n", 12), 12);
        close(fd);
        assert_int_equal(rkl_config_file_load(path, collect, &s, &err), 0);
        assert_string_equal(s.buf, "[a=1][b=2]");
        unlink(path);
        assert_int_equal(rkl_config_file_load(path, collect, &s, &err), -ENOENT);
        assert_non_null(strstr(err.msg, path));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_pairs),
            cmocka_unit_test(test_errors_name_the_line),
            cmocka_unit_test(test_load),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
