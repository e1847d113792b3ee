/* error, parse, utf8, strv, fileio, model string tables. */
#include <fcntl.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/error.h"
#include "base/fileio.h"
#include "base/model.h"
#include "base/parse.h"
#include "base/json.h"
#include "base/strv.h"
#include "base/utf8.h"

static void test_error_prefix(void **state)
{
        rkl_error e = RKL_ERROR_INIT;
        assert_int_equal(rkl_error_set(&e, -ENOENT, "pod '%s' not found", "x"), -ENOENT);
        assert_int_equal(rkl_error_prefix(&e, "status"), -ENOENT);
        assert_string_equal(e.msg, "status: pod 'x' not found");
        assert_int_equal(rkl_error_set(NULL, -EIO, "ignored"), -EIO);

        /* A long message is truncated at its tail, never overflowing. */
        char big[600];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        rkl_error_set(&e, -EIO, "%s", big);
        rkl_error_prefix(&e, "ctx");
        assert_int_equal(strlen(e.msg), sizeof(e.msg) - 1);
        assert_memory_equal(e.msg, "ctx: aaa", 8);
}

static void test_parse(void **state)
{
        uint64_t u;
        int i;
        assert_int_equal(rkl_safe_atou64("18446744073709551615", &u), 0);
        assert_true(u == UINT64_MAX);
        assert_int_equal(rkl_safe_atou64("18446744073709551616", &u), -ERANGE);
        assert_int_equal(rkl_safe_atou64("-1", &u), -EINVAL);
        assert_int_equal(rkl_safe_atou64(" 1", &u), -EINVAL);
        assert_int_equal(rkl_safe_atou64("1x", &u), -EINVAL);
        assert_int_equal(rkl_safe_atou64("", &u), -EINVAL);
        assert_int_equal(rkl_safe_atoi("-42", &i), 0);
        assert_int_equal(i, -42);
        assert_true(rkl_syscall_name_is_valid("sethostname"));
        assert_true(rkl_syscall_name_is_valid("_llseek"));
        assert_false(rkl_syscall_name_is_valid(""));
        assert_false(rkl_syscall_name_is_valid("@default"));
        assert_false(rkl_syscall_name_is_valid("Chmod"));
        assert_false(rkl_syscall_name_is_valid(
            "a123456789a123456789a123456789a123456789a123456789a123456789abcde"));
        assert_int_equal(rkl_safe_atoi("2147483648", &i), -ERANGE);
}

static void test_utf8(void **state)
{
        assert_true(rkl_utf8_is_valid("héllo ☃ 𝄞", strlen("héllo ☃ 𝄞")));
        assert_false(rkl_utf8_is_valid("\xc0\xaf", 2));     /* overlong '/' */
        assert_false(rkl_utf8_is_valid("\xed\xa0\x80", 3)); /* surrogate */
        assert_false(rkl_utf8_is_valid("\xe2\x98", 2));     /* truncated */
        char s[] = "ok\xff\xfe!";
        assert_string_equal(rkl_utf8_sanitize(s), "ok?"
                                                  "?!");
}

static void test_strv(void **state)
{
        _cleanup_strv_free_ char **l = NULL;
        rkl_strv_push(&l, "a");
        rkl_strv_push(&l, "b");
        assert_int_equal(rkl_strv_length(l), 2);
        _cleanup_strv_free_ char **c = rkl_strv_copy(l);
        assert_string_equal(c[1], "b");
        assert_null(c[2]);
        _cleanup_free_ char *j = rkl_strv_join(l, ":"), *e = rkl_strv_join(NULL, ":");
        assert_string_equal(j, "a:b");
        assert_string_equal(e, "");
        _cleanup_strv_free_ char **m = NULL;
        rkl_strv_push(&m, "");
        rkl_strv_push(&m, "x");
        _cleanup_free_ char *k = rkl_strv_join(m, ", ");
        assert_string_equal(k, ", x");
}

static void test_json_strv(void **state)
{
        json_object *a = rkl_json_new_strv(RKL_STRV("x", "y"));
        assert_string_equal(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN),
                            "[\"x\",\"y\"]");
        json_object_put(a);
        a = rkl_json_new_strv(NULL);
        assert_int_equal(json_object_array_length(a), 0);
        json_object_put(a);
}

static void test_quantity(void **state)
{
        uint64_t v;
        assert_int_equal(rkl_parse_quantity("10M", &v), 0);
        assert_int_equal(v, 10000000);
        assert_int_equal(rkl_parse_quantity("1Gi", &v), 0);
        assert_int_equal(v, 1073741824);
        assert_int_equal(rkl_parse_quantity("1.5k", &v), 0);
        assert_int_equal(v, 1500);
        assert_int_equal(rkl_parse_quantity("250000", &v), 0);
        assert_int_equal(v, 250000);
        assert_int_equal(rkl_parse_quantity("0.0001k", &v), 0);
        assert_int_equal(v, 1); /* rounded up */
        assert_int_equal(rkl_parse_quantity("10E", &v), -ERANGE);
        assert_int_equal(rkl_parse_quantity("99999999999999999999", &v), -ERANGE);
        const char *bad[] = {"", "-1", "+1", "1m", "1e3", "1.", ".5", "1 M", "1MB", "M", "1.5.5"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (rkl_parse_quantity(bad[i], &v) != -EINVAL)
                        fail_msg("'%s' was taken", bad[i]);
}

static void test_fileio(void **state)
{
        char dir[] = "/tmp/rkl-test-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);

        assert_int_equal(rkl_write_file_atomic_at(fd, "f", "hello", 5, 0600), 0);
        _cleanup_free_ char *s = NULL;
        size_t n;
        assert_int_equal(rkl_read_file_at(fd, "f", 100, &s, &n), 0);
        assert_string_equal(s, "hello");
        assert_int_equal(n, 5);
        char *t = NULL;
        assert_int_equal(rkl_read_file_at(fd, "f", 4, &t, NULL), -EFBIG);
        assert_int_equal(rkl_read_file_at(fd, "missing", 4, &t, NULL), -ENOENT);

        assert_int_equal(mkdirat(fd, "d", 0700), 0);
        assert_int_equal(rkl_write_file_atomic_at(fd, "d/g", "x", 1, 0600), 0);
        assert_int_equal(rkl_rm_rf_at(AT_FDCWD, dir), 0);
        assert_int_equal(access(dir, F_OK), -1);
}

static void test_model_tables(void **state)
{
        assert_string_equal(rkl_pod_phase_to_string(RKL_POD_PHASE_FAILED), "failed");
        assert_int_equal(rkl_container_desired_from_string("running"),
                         RKL_CONTAINER_DESIRED_RUNNING);
        assert_int_equal(rkl_container_phase_from_string("bogus"), _RKL_CONTAINER_PHASE_INVALID);
        assert_null(rkl_pod_desired_to_string(_RKL_POD_DESIRED_MAX));
        assert_true(
            rkl_id_is_valid("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
        assert_false(
            rkl_id_is_valid("0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
        assert_false(rkl_id_is_valid("0123"));
        assert_false(rkl_id_is_valid(NULL));

        char a[RKL_ID_LEN + 1], b[RKL_ID_LEN + 1];
        rkl_id_new(a);
        rkl_id_new(b);
        assert_true(rkl_id_is_valid(a));
        assert_string_not_equal(a, b);
        _cleanup_free_ char *n = rkl_container_app_name(a);
        assert_int_equal(strlen(n), 17);
        assert_int_equal(n[0], 'c');
        assert_memory_equal(n + 1, a, 16);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_error_prefix), cmocka_unit_test(test_parse),
            cmocka_unit_test(test_utf8),         cmocka_unit_test(test_strv),
            cmocka_unit_test(test_quantity),     cmocka_unit_test(test_json_strv),
            cmocka_unit_test(test_fileio),       cmocka_unit_test(test_model_tables),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
