#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/selinux.h"

static void put(const char *root, const char *value)
{
        char path[512];
        (void)snprintf(path, sizeof(path), "%s/sys", root);
        mkdir(path, 0755);
        (void)snprintf(path, sizeof(path), "%s/sys/fs", root);
        mkdir(path, 0755);
        (void)snprintf(path, sizeof(path), "%s/sys/fs/selinux", root);
        mkdir(path, 0755);
        (void)snprintf(path, sizeof(path), "%s/sys/fs/selinux/enforce", root);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(value, f);
        fclose(f);
}

/* selinuxfs mounted, enforcing or permissive: SELinux is on (convert.c then refuses the
 * SELinux options rkt cannot apply); absent: off (they are taken, as containerd takes
 * them). */
static void test_enabled_at(void **state)
{
        char root[] = "/tmp/rktlet-test-selinux-XXXXXX";
        assert_non_null(mkdtemp(root));
        assert_false(rkl_selinux_enabled_at(root));
        put(root, "1");
        assert_true(rkl_selinux_enabled_at(root));
        put(root, "0");
        assert_true(rkl_selinux_enabled_at(root));
        static const char *const made[] = {"/sys/fs/selinux/enforce", "/sys/fs/selinux", "/sys/fs",
                                           "/sys", ""};
        for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
                char path[512];
                (void)snprintf(path, sizeof(path), "%s%s", root, made[i]);
                assert_int_equal(remove(path), 0);
        }
        assert_false(rkl_selinux_enabled_at(root));
}

int main(void)
{
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_enabled_at)};
        return cmocka_run_group_tests(tests, NULL, NULL);
}
