/* A NUL inside a string field is found on the wire, where protobuf-c's unpacked (NUL-
 * terminated) strings would silently cut it (issue 19, defect 2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api.pb-c.h"
#include "api/wire.h"

/* A CreateContainerRequest, packed, with every 'X' in it turned into a NUL. */
static uint8_t *packed(const char *name, const char *label_key, const char *sandbox_id,
                       size_t *ret_len)
{
        Runtime__V1__ContainerMetadata md = RUNTIME__V1__CONTAINER_METADATA__INIT;
        md.name = (char *)name;
        md.attempt = 3;
        Runtime__V1__ContainerConfig__LabelsEntry e =
            RUNTIME__V1__CONTAINER_CONFIG__LABELS_ENTRY__INIT;
        e.key = (char *)label_key;
        e.value = (char *)"v";
        Runtime__V1__ContainerConfig__LabelsEntry *ep = &e;
        Runtime__V1__ContainerConfig cfg = RUNTIME__V1__CONTAINER_CONFIG__INIT;
        cfg.metadata = &md;
        cfg.n_labels = 1;
        cfg.labels = &ep;
        Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
        req.pod_sandbox_id = (char *)sandbox_id;
        req.config = &cfg;
        size_t n = runtime__v1__create_container_request__get_packed_size(&req);
        uint8_t *buf = malloc(n);
        assert_non_null(buf);
        assert_int_equal(runtime__v1__create_container_request__pack(&req, buf), n);
        for (size_t i = 0; i < n; i++)
                if (buf[i] == 'X')
                        buf[i] = 0;
        *ret_len = n;
        return buf;
}

static int find(const uint8_t *buf, size_t n, char *path, size_t size)
{
        return rkl_api_wire_find_nul(&runtime__v1__create_container_request__descriptor, buf, n,
                                     path, size);
}

static void test_clean_request(void **state)
{
        (void)state;
        size_t n;
        uint8_t *buf = packed("web", "app", "abc", &n);
        char path[64];
        assert_int_equal(find(buf, n, path, sizeof(path)), 0);
        assert_string_equal(path, "");
        free(buf);
}

static void test_nul_named_by_its_path(void **state)
{
        (void)state;
        size_t n;
        char path[64];
        uint8_t *buf = packed("nulXx", "app", "abc", &n);
        assert_int_equal(find(buf, n, path, sizeof(path)), -EINVAL);
        assert_string_equal(path, "config.metadata.name");
        free(buf);

        buf = packed("web", "aXpp", "abc", &n);
        assert_int_equal(find(buf, n, path, sizeof(path)), -EINVAL);
        assert_string_equal(path, "config.labels.key");
        free(buf);

        buf = packed("web", "app", "aXbc", &n);
        assert_int_equal(find(buf, n, path, sizeof(path)), -EINVAL);
        assert_string_equal(path, "pod_sandbox_id");
        free(buf);

        /* A path longer than the buffer keeps its innermost part. */
        buf = packed("nulXx", "app", "abc", &n);
        char small[8];
        assert_int_equal(find(buf, n, small, sizeof(small)), -EINVAL);
        assert_string_equal(small, "name");
        free(buf);
}

/* Malformed bytes are protobuf-c's to refuse: the walk neither reads past them nor fails. */
static void test_malformed_is_not_ours(void **state)
{
        (void)state;
        size_t n;
        char path[64];
        uint8_t *buf = packed("nulXx", "app", "abc", &n);
        for (size_t cut = 0; cut < n; cut++) {
                uint8_t *p = malloc(cut ? cut : 1);
                memcpy(p, buf, cut);
                int r = find(p, cut, path, sizeof(path));
                assert_true(r == 0 || r == -EINVAL);
                free(p);
        }
        const uint8_t huge_len[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f};
        assert_int_equal(find(huge_len, sizeof(huge_len), path, sizeof(path)), 0);
        const uint8_t group[] = {0x0b, 0x00};
        assert_int_equal(find(group, sizeof(group), path, sizeof(path)), 0);
        assert_int_equal(find(NULL, 0, path, sizeof(path)), 0);
        free(buf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_clean_request),
            cmocka_unit_test(test_nul_named_by_its_path),
            cmocka_unit_test(test_malformed_is_not_ours),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
