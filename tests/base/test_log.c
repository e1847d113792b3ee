#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/fileio.h"
#include "base/log.h"

/* Runs fn with stderr in a temporary file and returns what it wrote. */
static char *capture(void (*fn)(void))
{
        char path[] = "/tmp/rkl-test-log-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        fflush(stderr);
        int saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        assert_true(saved >= 0);
        assert_true(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
        fn();
        fflush(stderr);
        assert_true(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
        close(saved);
        close(fd);
        char *text = NULL;
        size_t n;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, path, 1 << 16, &text, &n), 0);
        unlink(path);
        return text;
}

static void log_two(void)
{
        rkl_log_info("first %s", "line");
        rkl_log_object_info(&(rkl_log_object){.pod_id = "abc"}, "about a pod");
}

/* Lines carry the monotonic clock after their priority: the stamp lies between two readings
 * of the clock taken around the call. */
static void test_monotonic_stamp(void **state)
{
        unsetenv("JOURNAL_STREAM");
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        char *text = capture(log_two);
        clock_gettime(CLOCK_MONOTONIC, &b);

        long long s1, s2;
        long u1, u2;
        int end1 = 0, end2 = 0;
        size_t nl = strcspn(text, "\n");
        assert_int_equal(text[nl], '\n');
        assert_int_equal(sscanf(text, "<6>[%lld.%6ld] %n", &s1, &u1, &end1), 2);
        assert_true(end1 > 0);
        assert_int_equal(nl - (size_t)end1, strlen("first line"));
        assert_memory_equal(text + end1, "first line", strlen("first line"));
        assert_int_equal(sscanf(text + nl + 1, "<6>[%lld.%6ld] %n", &s2, &u2, &end2), 2);
        assert_string_equal(text + nl + 1 + end2, "about a pod\n");
        free(text);

        double t1 = (double)s1 + (double)u1 / 1e6, t2 = (double)s2 + (double)u2 / 1e6;
        double lo = (double)a.tv_sec + (double)(a.tv_nsec / 1000) / 1e6;
        double hi = (double)b.tv_sec + (double)b.tv_nsec / 1e9;
        assert_true(t1 >= lo && t1 <= hi);
        assert_true(t2 >= t1 && t2 <= hi);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_monotonic_stamp),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
