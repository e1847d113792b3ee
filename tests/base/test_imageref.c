/* Image references: normalisation as containerd reports them, and rejection of bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/imageref.h"

#define HEX64  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX128 HEX64 HEX64

static void check(const char *in, const char *canonical, const char *rkt)
{
        rkl_imageref r = {0};
        rkl_error e = RKL_ERROR_INIT;
        if (rkl_imageref_parse(in, &r, &e) < 0)
                fail_msg("'%s': %s", in, e.msg);
        char *s = rkl_imageref_to_string(&r);
        assert_string_equal(s, canonical);
        free(s);
        s = rkl_imageref_to_rkt(&r, NULL);
        assert_string_equal(s, rkt);
        free(s);
        /* Normalising is idempotent. */
        rkl_imageref r2 = {0};
        s = rkl_imageref_to_string(&r);
        assert_int_equal(rkl_imageref_parse(s, &r2, &e), 0);
        char *s2 = rkl_imageref_to_string(&r2);
        assert_string_equal(s, s2);
        free(s);
        free(s2);
        rkl_imageref_done(&r2);
        rkl_imageref_done(&r);
}

static void test_normalise(void **state)
{
        check("busybox", "docker.io/library/busybox:latest",
              "docker://docker.io/library/busybox:latest");
        check("busybox:1.36", "docker.io/library/busybox:1.36",
              "docker://docker.io/library/busybox:1.36");
        check("docker://busybox", "docker.io/library/busybox:latest",
              "docker://docker.io/library/busybox:latest");
        check("library/busybox", "docker.io/library/busybox:latest",
              "docker://docker.io/library/busybox:latest");
        check("index.docker.io/library/busybox:1.36", "docker.io/library/busybox:1.36",
              "docker://docker.io/library/busybox:1.36");
        check("registry-1.docker.io/rktsim/nonroot", "docker.io/rktsim/nonroot:latest",
              "docker://docker.io/rktsim/nonroot:latest");
        check("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9",
              "docker://registry.k8s.io/pause:3.9");
        check("registry.k8s.io/e2e-test-images/busybox:1.29-2",
              "registry.k8s.io/e2e-test-images/busybox:1.29-2",
              "docker://registry.k8s.io/e2e-test-images/busybox:1.29-2");
        check("localhost/foo", "localhost/foo:latest", "docker://localhost/foo:latest");
        check("host:5000/ns/img@sha256:" HEX64, "host:5000/ns/img@sha256:" HEX64,
              "docker://host:5000/ns/img@sha256:" HEX64);
        check("busybox:1.36@sha256:" HEX64, "docker.io/library/busybox:1.36@sha256:" HEX64,
              "docker://docker.io/library/busybox@sha256:" HEX64);
        check("[::1]:5000/img:v1", "[::1]:5000/img:v1", "docker://[::1]:5000/img:v1");
        check("a/b__c/d-e--f.g_h:V1.0-rc_1", "docker.io/a/b__c/d-e--f.g_h:V1.0-rc_1",
              "docker://docker.io/a/b__c/d-e--f.g_h:V1.0-rc_1");
        check("sha512-" HEX128, "sha512-" HEX128, "sha512-" HEX128);
}

static void test_parts(void **state)
{
        rkl_imageref r = {0};
        assert_int_equal(rkl_imageref_parse("host:5000/ns/img@sha256:" HEX64, &r, NULL), 0);
        assert_string_equal(r.registry, "host:5000");
        assert_string_equal(r.repository, "ns/img");
        assert_null(r.tag);
        assert_string_equal(r.digest, "sha256:" HEX64);
        assert_null(rkl_imageref_tagged(&r));
        char *s = rkl_imageref_digested(&r);
        assert_string_equal(s, "host:5000/ns/img@sha256:" HEX64);
        free(s);
        s = rkl_imageref_to_rkt(&r, "127.0.0.1:5000");
        assert_string_equal(s, "docker://127.0.0.1:5000/ns/img@sha256:" HEX64);
        free(s);
        rkl_imageref_done(&r);

        assert_int_equal(rkl_imageref_parse("sha512-" HEX64, &r, NULL), 0);
        assert_string_equal(r.id, "sha512-" HEX64);
        assert_null(r.registry);
        assert_null(rkl_imageref_tagged(&r));
        rkl_imageref_done(&r);

        /* rkt 1.30's full IDs have 64 hex digits, fetch without --full prints 32. */
        assert_true(rkl_image_id_is_valid("sha512-" HEX128));
        assert_true(rkl_image_id_is_valid("sha512-0123456789abcdef0123456789abcdef"));
        assert_false(rkl_image_id_is_valid("sha512-0123456789abcdef0123456789abcde"));
        assert_false(rkl_image_id_is_valid("sha512-" HEX64 "X"));
        assert_true(rkl_image_id_is_valid("sha512-" HEX64));
        assert_false(rkl_image_id_is_valid("sha512-0123"));
        assert_false(rkl_image_id_is_valid("sha512-" HEX128 "0"));
        assert_false(rkl_image_id_is_valid("sha256-" HEX64));
}

static void bad(const char *in, int code, const char *needle)
{
        rkl_imageref r = {0};
        rkl_error e = RKL_ERROR_INIT;
        int k = rkl_imageref_parse(in, &r, &e);
        if (k >= 0)
                fail_msg("'%s' was accepted", in);
        assert_int_equal(k, code);
        assert_int_equal(e.code, code);
        if (!strstr(e.msg, needle))
                fail_msg("'%s': message '%s' lacks '%s'", in, e.msg, needle);
        assert_null(r.registry);
}

static void test_reject(void **state)
{
        bad("", -EINVAL, "empty");
        bad("Busybox", -EINVAL, "lowercase");
        bad("docker.io/Library/busybox", -EINVAL, "lowercase");
        bad("busybox:", -EINVAL, "invalid tag");
        bad("busybox:-x", -EINVAL, "invalid tag");
        bad("busybox:a/b", -EINVAL, "invalid registry");
        bad("busybox@sha256:abc", -EINVAL, "invalid digest");
        bad("busybox@md5:" HEX64, -EINVAL, "invalid digest");
        bad("busybox@sha256:" HEX64 "0", -EINVAL, "invalid digest");
        bad("busybox@SHA256:" HEX64, -EINVAL, "invalid digest");
        bad(":tag", -EINVAL, "no name");
        bad("a//b", -EINVAL, "path component");
        bad("a/b/", -EINVAL, "path component");
        bad("-a", -EINVAL, "path component");
        bad("a..b", -EINVAL, "path component");
        bad("a b", -EINVAL, "path component");
        bad("a\nb", -EINVAL, "path component");
        bad("-host.io/x", -EINVAL, "invalid registry");
        bad("host..io/x", -EINVAL, "invalid registry");
        bad("host.io:99999/x", -EINVAL, "invalid registry");
        bad("host.io:/x", -EINVAL, "invalid registry");
        bad("file:///x.aci", -EINVAL, "only docker images");
        bad("https://host/x", -EINVAL, "only docker images");
        bad("docker://", -EINVAL, "no name");

        char big[RKL_IMAGEREF_MAX + 2];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        bad(big, -ENAMETOOLONG, "longer than");
        char name[300];
        memset(name, 'a', sizeof(name) - 1);
        name[sizeof(name) - 1] = 0;
        bad(name, -EINVAL, "longer than 255");
        char tag[140] = "busybox:";
        memset(tag + 8, 'a', 129);
        tag[8 + 129] = 0;
        bad(tag, -EINVAL, "invalid tag");
}

static void test_registry(void **state)
{
        assert_true(rkl_imageref_registry_is_valid("registry.k8s.io"));
        assert_true(rkl_imageref_registry_is_valid("127.0.0.1:5000"));
        assert_true(rkl_imageref_registry_is_valid("localhost"));
        assert_false(rkl_imageref_registry_is_valid(""));
        assert_false(rkl_imageref_registry_is_valid("a/b"));
        assert_false(rkl_imageref_registry_is_valid("host:0"));
        char *s = rkl_imageref_registry_normalize("index.docker.io");
        assert_string_equal(s, "docker.io");
        free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_normalise),
            cmocka_unit_test(test_parts),
            cmocka_unit_test(test_reject),
            cmocka_unit_test(test_registry),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
