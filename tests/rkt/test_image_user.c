/* The container's uid, gid and image groups from a fixture image tree laid out as rkt's tree
 * store has it (cas/tree/deps-sha512-<sha512(image id)[:64]>/rootfs/etc/{passwd,group}). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "rkt/image-user.h"
#include "base/fileio.h"
#include "base/macro.h"

/* The image ID and the tree store ID rkt 1.30 gave it (observed). */
#define IMAGE "sha512-0e00ddf2e7d616129acefa8827212a03e5d31d1185ab985cb1e9b59cec582bfd"
#define TREE  "deps-sha512-abf1fc38359da67fb861ad911a22ce428b70a855db6bf8936d1460ca5be0add2"

static void put(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void test_image_ids(void **state)
{
        char dir[] = "/tmp/rkl-image-user-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char etc[256], path[300];
        (void)snprintf(etc, sizeof(etc), "%s/cas/tree/" TREE "/rootfs/etc", dir);
        assert_int_equal(rkl_mkdir_p(etc, 0755), 0);
        (void)snprintf(path, sizeof(path), "%s/passwd", etc);
        put(path,
            "root:x:0:0:root:/root:/bin/sh\nbroken line\napp:x:1000:1000::/home/app:/bin/sh\n");
        (void)snprintf(path, sizeof(path), "%s/group", etc);
        put(path, "root:x:0:\napp:x:1000:\nextra:x:50000:other,app\nnone:x:60000:apple\n");

        rkl_rkt *d = NULL;
        rkl_rkt_config cfg = {.rkt_path = "/bin/true", .data_dir = dir};
        assert_int_equal(rkl_rkt_new(&cfg, &d, NULL), 0);
        rkl_error err = RKL_ERROR_INIT;

        /* By uid: the user's gid, and the groups listing its name. */
        rkl_container_spec s = {.has_run_as_user = true, .run_as_user = 1000};
        rkl_rkt_ids ids = {0};
        assert_int_equal(rkl_rkt_image_ids(d, IMAGE, &s, &ids, &err), 0);
        assert_true(ids.set);
        assert_int_equal(ids.uid, 1000);
        assert_int_equal(ids.gid, 1000);
        assert_int_equal(ids.n_groups, 1);
        assert_int_equal(ids.groups[0], 50000);
        rkl_rkt_ids_done(&ids);

        /* By name, with a group of its own. */
        rkl_container_spec n = {
            .run_as_username = (char *)"app", .has_run_as_group = true, .run_as_group = 7};
        assert_int_equal(rkl_rkt_image_ids(d, IMAGE, &n, &ids, &err), 0);
        assert_int_equal(ids.uid, 1000);
        assert_int_equal(ids.gid, 7);
        rkl_rkt_ids_done(&ids);

        /* A uid with no entry: gid 0, no groups. An unknown name: refused, naming the field. */
        s.run_as_user = 4242;
        assert_int_equal(rkl_rkt_image_ids(d, IMAGE, &s, &ids, &err), 0);
        assert_int_equal(ids.gid, 0);
        assert_int_equal(ids.n_groups, 0);
        rkl_rkt_ids_done(&ids);
        n.run_as_username = (char *)"ghost";
        assert_int_equal(rkl_rkt_image_ids(d, IMAGE, &n, &ids, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "run_as_username"));

        /* The image's own user, or no rendered tree: left to rkt. */
        rkl_container_spec none = {0};
        assert_int_equal(rkl_rkt_image_ids(d, IMAGE, &none, &ids, &err), 0);
        assert_false(ids.set);
        assert_int_equal(rkl_rkt_image_ids(d, "sha512-00", &s, &ids, &err), 0);
        assert_false(ids.set);

        d = rkl_rkt_free(d);
        assert_int_equal(rkl_rm_rf_at(AT_FDCWD, dir), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_image_ids),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
