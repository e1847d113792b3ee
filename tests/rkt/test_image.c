/* rkt/image.c parsers on outputs recorded from rkt-sim (tests/fixtures/images/, shaped like
 * docs/rkt.md's `rkt image list --format=json`), plus the argv and error mapping. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/strv.h"
#include "rkt/image.h"

#define BUSYBOX_ID                                                                                 \
        "sha512-"                                                                                  \
        "21914ad462b43a1e01e66589ccc0cef168b279f4985acd15647cad0509b5f838"

static char *fixture(const char *name, size_t *ret_n)
{
        const char *src = getenv("RKL_SOURCE_DIR");
        assert_non_null(src);
        char *p = rkl_xasprintf("%s/tests/fixtures/images/%s", src, name);
        char *buf = NULL;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, p, 1 << 20, &buf, ret_n), 0);
        free(p);
        return buf;
}

static void test_list(void **state)
{
        size_t len, n = 99;
        rkl_rkt_image *l = NULL;
        rkl_error e = RKL_ERROR_INIT;
        char *buf = fixture("list.json", &len);

        assert_int_equal(rkl_rkt_image_list_parse(buf, len, &l, &n, &e), 0);
        assert_int_equal(n, 3);
        assert_string_equal(l[0].id, BUSYBOX_ID);
        assert_string_equal(l[0].name, "registry-1.docker.io/library/busybox:latest");
        assert_true(l[0].size == 2017280);
        assert_true(l[0].import_time_ns > 1700000000000000000LL);
        assert_string_equal(l[1].name, "registry-1.docker.io/rktsim/nonroot:latest");
        /* Two tags of the same content are two images (the tag is in the manifest). */
        assert_string_equal(l[2].name, "registry-1.docker.io/library/busybox:1.36");
        assert_string_not_equal(l[2].id, l[0].id);
        rkl_rkt_images_free(l, n);
        free(buf);

        /* An empty store lists as null. */
        assert_int_equal(rkl_rkt_image_list_parse("null\n", 5, &l, &n, &e), 0);
        assert_int_equal(n, 0);
        assert_int_equal(rkl_rkt_image_list_parse("[]", 2, &l, &n, &e), 0);
        assert_int_equal(n, 0);
        rkl_rkt_images_free(l, n);
}

static void test_list_bad(void **state)
{
        static const char *const bad[] = {
            "",
            "{}",
            "[1]",
            "[{\"id\":\"sha512-abc\"}]",
            "[{\"id\":" BUSYBOX_ID "}]",
            "[{\"id\":\"" BUSYBOX_ID "\",\"size\":-1}]",
            "[{\"id\":\"" BUSYBOX_ID "\",\"size\":\"1\"}]",
            "[{\"id\":\"" BUSYBOX_ID "\",\"name\":7}]",
            "[{\"id\":\"" BUSYBOX_ID "\"}] x",
            "[{\"id\":\"" BUSYBOX_ID "\"",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                rkl_rkt_image *l = NULL;
                size_t n = 0;
                rkl_error e = RKL_ERROR_INIT;
                int r = rkl_rkt_image_list_parse(bad[i], strlen(bad[i]), &l, &n, &e);
                if (r != -EBADMSG)
                        fail_msg("'%s': %d", bad[i], r);
                assert_true(strncmp(e.msg, "image list", 10) == 0);
        }
}

static void test_manifest(void **state)
{
        size_t len;
        rkl_rkt_image_manifest m = {0};
        rkl_error e = RKL_ERROR_INIT;
        char *buf = fixture("manifest-busybox.json", &len);

        assert_int_equal(rkl_rkt_image_manifest_parse(buf, len, &m, &e), 0);
        assert_string_equal(m.name, "registry-1.docker.io/library/busybox");
        assert_string_equal(rkl_kvs_get(&m.labels, "version"), "latest");
        assert_string_equal(rkl_kvs_get(&m.annotations, "appc.io/docker/originalname"), "busybox");
        assert_string_equal(rkl_kvs_get(&m.annotations, "appc.io/docker/repository"),
                            "library/busybox");
        assert_string_equal(rkl_kvs_get(&m.annotations, "appc.io/docker/cmd"), "[\"sh\"]");
        assert_string_equal(m.user, "0");
        assert_string_equal(m.group, "0");
        assert_int_equal(rkl_strv_length(m.exec), 1);
        assert_string_equal(m.exec[0], "sh");
        assert_null(m.working_dir);
        assert_non_null(rkl_kvs_get(&m.environment, "PATH"));
        /* A Docker image with no ENTRYPOINT: args alone are the whole command. */
        assert_null(m.entrypoint);
        rkl_rkt_image_manifest_done(&m);
        free(buf);

        buf = fixture("manifest-nonroot.json", &len);
        assert_int_equal(rkl_rkt_image_manifest_parse(buf, len, &m, &e), 0);
        assert_string_equal(m.user, "1000");
        assert_string_equal(m.working_dir, "/home/app");
        assert_string_equal(m.exec[0], "/bin/sleep");
        assert_string_equal(m.exec[1], "3600");
        /* Its ENTRYPOINT, which args alone run with (app.exec has the CMD after it). */
        assert_int_equal(rkl_strv_length(m.entrypoint), 1);
        assert_string_equal(m.entrypoint[0], "/bin/sleep");
        rkl_rkt_image_manifest_done(&m);
        free(buf);

        /* No app section: an image that only carries files. */
        const char *min = "{\"acKind\":\"ImageManifest\",\"name\":\"example.com/x\"}";
        assert_int_equal(rkl_rkt_image_manifest_parse(min, strlen(min), &m, &e), 0);
        assert_null(m.user);
        assert_null(m.exec);
        assert_null(m.entrypoint);
        rkl_rkt_image_manifest_done(&m);

        /* An appc image: its exec's first word, as rkt treats args. */
        const char *aci = "{\"acKind\":\"ImageManifest\",\"name\":\"example.com/x\","
                          "\"app\":{\"exec\":[\"/bin/sh\",\"-c\",\"true\"]}}";
        assert_int_equal(rkl_rkt_image_manifest_parse(aci, strlen(aci), &m, &e), 0);
        assert_int_equal(rkl_strv_length(m.entrypoint), 1);
        assert_string_equal(m.entrypoint[0], "/bin/sh");
        rkl_rkt_image_manifest_done(&m);

        /* An ENTRYPOINT of several words, as docker2aci writes it. */
        const char *multi =
            "{\"acKind\":\"ImageManifest\",\"name\":\"example.com/x\",\"annotations\":"
            "[{\"name\":\"appc.io/docker/entrypoint\",\"value\":\"[\\\"/bin/sh\\\",\\\"-c\\\"]\"}],"
            "\"app\":{\"exec\":[\"/bin/sh\",\"-c\",\"true\"]}}";
        assert_int_equal(rkl_rkt_image_manifest_parse(multi, strlen(multi), &m, &e), 0);
        assert_int_equal(rkl_strv_length(m.entrypoint), 2);
        assert_string_equal(m.entrypoint[1], "-c");
        rkl_rkt_image_manifest_done(&m);
}

static void test_manifest_bad(void **state)
{
        static const char *const bad[] = {
            "null",
            "[]",
            "{\"acKind\":\"PodManifest\",\"name\":\"x\"}",
            "{\"acKind\":\"ImageManifest\"}",
            "{\"acKind\":\"ImageManifest\",\"name\":\"x\",\"labels\":{}}",
            "{\"acKind\":\"ImageManifest\",\"name\":\"x\",\"labels\":[{\"name\":\"v\"}]}",
            "{\"acKind\":\"ImageManifest\",\"name\":\"x\",\"app\":[]}",
            "{\"acKind\":\"ImageManifest\",\"name\":\"x\",\"app\":{\"exec\":[1]}}",
            "{\"acKind\":\"ImageManifest\",\"name\":\"x\",\"app\":{\"user\":0}}",
            "{\"acKind\":\"ImageManifest\",\"name\":\"x\\u0000y\"}",
            /* One string (the parentheses say so to clang's -Wstring-concatenation). */
            ("{\"acKind\":\"ImageManifest\",\"name\":\"x\",\"annotations\":[{\"name\":"
             "\"appc.io/docker/entrypoint\",\"value\":\"/bin/sh\"}]}"),
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                rkl_rkt_image_manifest m = {0};
                rkl_error e = RKL_ERROR_INIT;
                int r = rkl_rkt_image_manifest_parse(bad[i], strlen(bad[i]), &m, &e);
                if (r != -EBADMSG)
                        fail_msg("'%s': %d", bad[i], r);
                assert_null(m.name);
        }
}

static void test_fetch_output(void **state)
{
        char *id = NULL;
        assert_int_equal(rkl_rkt_image_fetch_parse("Downloading 1/2\n" BUSYBOX_ID "\n\n", &id), 0);
        assert_string_equal(id, BUSYBOX_ID);
        free(id);
        /* What the real rkt 1.30 prints with --full: 64 hex digits. */
        assert_int_equal(rkl_rkt_image_fetch_parse("sha512-86c14ba8b0bcffe0e2b1b134e1ec2abf"
                                                   "233cac8267c11398773b4b182f7c1924\n",
                                                   &id),
                         0);
        assert_string_equal(
            id, "sha512-86c14ba8b0bcffe0e2b1b134e1ec2abf233cac8267c11398773b4b182f7c1924");
        free(id);
        id = NULL;
        assert_int_equal(rkl_rkt_image_fetch_parse("Error: no such image\n", &id), -EBADMSG);
        assert_int_equal(rkl_rkt_image_fetch_parse("sha512-XYZ\n", &id), -EBADMSG);
        assert_int_equal(rkl_rkt_image_fetch_parse("", &id), -EBADMSG);
        assert_int_equal(rkl_rkt_image_fetch_parse(NULL, &id), -EBADMSG);
}

static void test_errors_and_args(void **state)
{
        assert_int_equal(rkl_rkt_image_classify_error(
                             "image: remote fetching failed\n  └─error fetching docker image: "
                             "HTTP 404 on registry-1.docker.io/library/nope:latest"),
                         -ENOENT);
        assert_int_equal(rkl_rkt_image_classify_error("error fetching: HTTP 401 (unauthorized)"),
                         -EACCES);
        assert_int_equal(
            rkl_rkt_image_classify_error("dial tcp 127.0.0.1:5000: connect: connection refused"),
            -EHOSTUNREACH);
        assert_int_equal(rkl_rkt_image_classify_error("rm: image ID \"x\" not found"), -ENOENT);
        assert_int_equal(rkl_rkt_image_classify_error("something else"), -EIO);
        assert_int_equal(rkl_rkt_image_classify_error(NULL), -EIO);

        char **a = rkl_rkt_image_fetch_args("docker://docker.io/library/busybox:latest", "update");
        assert_int_equal(rkl_strv_length(a), 5);
        assert_string_equal(a[0], "image");
        assert_string_equal(a[1], "fetch");
        assert_string_equal(a[2], "--pull-policy=update");
        assert_string_equal(a[3], "--full");
        assert_string_equal(a[4], "docker://docker.io/library/busybox:latest");
        rkl_strv_free(a);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_list),         cmocka_unit_test(test_list_bad),
            cmocka_unit_test(test_manifest),     cmocka_unit_test(test_manifest_bad),
            cmocka_unit_test(test_fetch_output), cmocka_unit_test(test_errors_and_args),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
