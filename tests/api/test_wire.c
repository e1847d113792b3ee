/* A NUL inside a string field is found on the wire, where protobuf-c's unpacked (NUL-
 * terminated) strings would silently cut it (such a name was once stored cut); a request that
 * would cost too much to unpack is refused from its wire bytes (a 400 KB ListContainers
 * repeating one filter once took the daemon past 1 GiB: protobuf-c merges every repeat of a
 * field that is not repeated into the ones before). */
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

/* The ListContainersRequest: a filter with one label selector, n times. */
static uint8_t *repeated_filter(size_t n, size_t *ret_len)
{
        static const uint8_t entry[] = {0x0a, 0x08, 0x22, 0x06, 0x0a, 0x01, 0x61, 0x12, 0x01, 0x62};
        uint8_t *buf = malloc(n * sizeof(entry) + 1);
        assert_non_null(buf);
        for (size_t i = 0; i < n; i++)
                memcpy(buf + i * sizeof(entry), entry, sizeof(entry));
        *ret_len = n * sizeof(entry);
        return buf;
}

static int check_list(const uint8_t *buf, size_t n, rkl_error *err)
{
        return rkl_api_wire_check(&runtime__v1__list_containers_request__descriptor, buf, n,
                                  rkl_api_wire_limits_of("ListContainers"), err);
}

static void test_repeated_message_field(void **state)
{
        (void)state;
        rkl_error err = RKL_ERROR_INIT;
        size_t n;
        /* 400 KB: past ListContainers' size, refused before the walk. */
        uint8_t *buf = repeated_filter(40000, &n);
        assert_int_equal(check_list(buf, n, &err), -EMSGSIZE);
        assert_non_null(strstr(err.msg, "400000 bytes"));
        assert_non_null(strstr(err.msg, "65536"));
        free(buf);

        /* Within its size, merged at each repeat: refused at the fifth. */
        buf = repeated_filter(6000, &n);
        err = (rkl_error)RKL_ERROR_INIT;
        assert_int_equal(check_list(buf, n, &err), -EINVAL);
        assert_string_equal(err.msg, "'filter' occurs more than 4 times: a field that is not "
                                     "repeated may occur at most 4 times");
        free(buf);

        /* A few encodings of one message, concatenated: the protocol's own merge. */
        buf = repeated_filter(4, &n);
        assert_int_equal(check_list(buf, n, &err), 0);
        free(buf);
}

/* A CreateContainerRequest whose config holds its metadata six times: the path says where. */
static void test_repeated_nested_field(void **state)
{
        (void)state;
        uint8_t md[] = {0x0a, 0x03, 0x0a, 0x01, 'a'}; /* config.metadata { name: "a" } */
        uint8_t buf[2 + 6 * sizeof(md)];
        buf[0] = 0x12; /* config, field 2 */
        buf[1] = 6 * sizeof(md);
        for (size_t i = 0; i < 6; i++)
                memcpy(buf + 2 + i * sizeof(md), md, sizeof(md));
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_api_wire_check(&runtime__v1__create_container_request__descriptor, buf,
                                            sizeof(buf), rkl_api_wire_limits_of("CreateContainer"),
                                            &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "'config.metadata' occurs more than 4 times"));
}

/* Fields are counted at every depth, and a packed list's elements one by one. */
static void test_field_count(void **state)
{
        (void)state;
        rkl_error err = RKL_ERROR_INIT;
        const rkl_api_wire_limits *lim = rkl_api_wire_limits_of("ListContainers");

        /* One filter with 1,000 label selectors: 3,000 fields and more. */
        size_t n_sel = 1000, inner = 2 + n_sel * 8;
        uint8_t *buf = malloc(4 + inner);
        size_t n = 0;
        buf[n++] = 0x0a; /* filter, length as a 2-byte varint */
        buf[n++] = (uint8_t)(0x80 | (inner & 0x7f));
        buf[n++] = (uint8_t)(inner >> 7);
        buf[n++] = 0x0a; /* filter.id = "" */
        buf[n++] = 0x00;
        for (size_t i = 0; i < n_sel; i++) {
                const uint8_t sel[] = {0x22, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 'b'};
                memcpy(buf + n, sel, sizeof(sel));
                n += sizeof(sel);
        }
        assert_true(n < lim->max_bytes);
        assert_int_equal(check_list(buf, n, &err), -EMSGSIZE);
        assert_non_null(strstr(err.msg, "more than 2048 fields"));
        free(buf);

        /* PortForwardRequest.port, packed: 3,000 one-byte varints in one field. */
        uint8_t ports[3 + 3000];
        ports[0] = 0x12;
        ports[1] = (uint8_t)(0x80 | (3000 & 0x7f));
        ports[2] = (uint8_t)(3000 >> 7);
        memset(ports + 3, 0x50, 3000);
        assert_int_equal(rkl_api_wire_check(&runtime__v1__port_forward_request__descriptor, ports,
                                            sizeof(ports), rkl_api_wire_limits_of("PortForward"),
                                            &err),
                         -EMSGSIZE);
        /* 2,000 of them are fine. */
        ports[1] = (uint8_t)(0x80 | (2000 & 0x7f));
        ports[2] = (uint8_t)(2000 >> 7);
        assert_int_equal(rkl_api_wire_check(&runtime__v1__port_forward_request__descriptor, ports,
                                            3 + 2000, rkl_api_wire_limits_of("PortForward"), &err),
                         0);
}

/* The calls that carry configurations take more than the rest. */
static void test_limits_by_method(void **state)
{
        (void)state;
        const rkl_api_wire_limits *list = rkl_api_wire_limits_of("ListContainers"),
                                  *run = rkl_api_wire_limits_of("RunPodSandbox"),
                                  *create = rkl_api_wire_limits_of("CreateContainer");
        assert_true(list->max_bytes < run->max_bytes && run->max_bytes < create->max_bytes);
        assert_true(create->max_bytes <= 4u << 20);
        assert_true(list->max_fields < run->max_fields);
        assert_ptr_equal(rkl_api_wire_limits_of("PullImage"), run);
        assert_ptr_equal(rkl_api_wire_limits_of("Version"), list);

        /* A NUL is still found, with its path. */
        size_t n;
        uint8_t *buf = packed("nulXx", "app", "abc", &n);
        rkl_error err = RKL_ERROR_INIT;
        assert_int_equal(rkl_api_wire_check(&runtime__v1__create_container_request__descriptor, buf,
                                            n, create, &err),
                         -EINVAL);
        assert_string_equal(err.msg, "'config.metadata.name' holds a NUL byte");
        free(buf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_clean_request),
            cmocka_unit_test(test_nul_named_by_its_path),
            cmocka_unit_test(test_malformed_is_not_ours),
            cmocka_unit_test(test_repeated_message_field),
            cmocka_unit_test(test_repeated_nested_field),
            cmocka_unit_test(test_field_count),
            cmocka_unit_test(test_limits_by_method),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
