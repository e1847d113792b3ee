/* The kernel's OOM kill records (src/stats/oom.c): parsing one, and finding a kill by the
 * memory cgroup the daemon knows (a suffix of the logged path), from a file of kmsg lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "stats/oom.h"

static int parse(const char *rec, char **ret)
{
        const char *m;
        size_t n;
        int r = rkl_oom_parse_record(rec, strlen(rec), &m, &n);
        *ret = r > 0 ? rkl_xstrndup(m, n) : NULL;
        return r;
}

static void test_parse(void **state)
{
        (void)state;
        char *m;

        assert_int_equal(parse("6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
                               "oom_memcg=/a,task_memcg=/a/b.service,task=sh,pid=3,uid=0\n",
                               &m),
                         1);
        assert_string_equal(m, "/a/b.service");
        free(m);
        /* A comm holding ",task=" ends the path at the last one: no match, no overrun. */
        assert_int_equal(parse("6,1,2,-;oom-kill:global_oom,task_memcg=/a,task=x,task=y,pid=1", &m),
                         1);
        assert_string_equal(m, "/a,task=x");
        free(m);
        assert_int_equal(parse("6,1,2,-;Memory cgroup out of memory: Killed process 3", &m), 0);
        assert_int_equal(parse("no separator oom-kill:task_memcg=/a,task=b", &m), 0);
        assert_int_equal(parse("6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG", &m), -EBADMSG);
        assert_int_equal(parse("6,1,2,-;oom-kill:task_memcg=/a", &m), -EBADMSG);
        assert_int_equal(parse("6,1,2,-;oom-kill:task_memcg=,task=sh,pid=1,uid=0", &m), -EBADMSG);
        assert_int_equal(parse("6,1,2,-;oom-kill:xtask_memcg=/a,task=sh", &m), -EBADMSG);
        assert_int_equal(parse("", &m), 0);
}

static void test_log(void **state)
{
        (void)state;
        _cleanup_free_ char *path =
            rkl_xasprintf("%s/tests/fixtures/kmsg/oom.txt", getenv("RKL_SOURCE_DIR"));
        rkl_oom_log *l = NULL;

        assert_int_equal(rkl_oom_log_open(path, &l), 0);
        assert_false(rkl_oom_log_has(l, "/system.slice/rktlet-5af0.service/payload/system.slice/"
                                        "c7722.service"));
        rkl_oom_log_refresh(l);
        /* The daemon's path, relative to its cgroup namespace, is a suffix of the kernel's. */
        assert_true(rkl_oom_log_has(l, "/system.slice/rktlet-5af0.service/payload/system.slice/"
                                       "c7722.service"));
        assert_true(rkl_oom_log_has(l, "/c7722.service"));
        /* Only at a component boundary, and only the killed task's cgroup. */
        assert_false(rkl_oom_log_has(l, "/7722.service"));
        assert_false(rkl_oom_log_has(l, "7722.service"));
        assert_false(rkl_oom_log_has(l, "/payload/system.slice"));
        assert_false(rkl_oom_log_has(l, "/"));
        assert_true(rkl_oom_log_has(l, "/user.slice/a,b.service"));
        rkl_oom_log_free(l);
        assert_int_equal(rkl_oom_log_open("/nonexistent/kmsg", &l), -ENOENT);
}

static void test_ring(void **state)
{
        (void)state;
        char tmpl[] = "/tmp/rkl-oom-XXXXXX";
        int fd = mkstemp(tmpl);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        for (int i = 0; i < RKL_OOM_LOG_KEEP + 10; i++)
                fprintf(f, "6,%d,1,-;oom-kill:task_memcg=/k%d.service,task=sh,pid=1,uid=0\n", i, i);
        fclose(f);
        rkl_oom_log *l = NULL;
        assert_int_equal(rkl_oom_log_open(tmpl, &l), 0);
        rkl_oom_log_refresh(l);
        /* The oldest kills make room for the newest. */
        assert_false(rkl_oom_log_has(l, "/k0.service"));
        assert_false(rkl_oom_log_has(l, "/k9.service"));
        assert_true(rkl_oom_log_has(l, "/k10.service"));
        char last[32];
        snprintf(last, sizeof(last), "/k%d.service", RKL_OOM_LOG_KEEP + 9);
        assert_true(rkl_oom_log_has(l, last));
        rkl_oom_log_free(l);
        unlink(tmpl);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_parse),
            cmocka_unit_test(test_log),
            cmocka_unit_test(test_ring),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
