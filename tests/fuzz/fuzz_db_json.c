/* Fuzz target for the store's JSON columns, which an operator (or a damaged disk) can change
 * under the daemon: the first byte picks the decoder (byte % 4: '0' a sandbox's config, '1' a
 * container's config, '2' labels/annotations, '3' a timeline, a sandbox's for an even byte / 4
 * ('3'), a container's for an odd one ('7')), the rest is the column's text. What decodes
 * must encode again and decode to the same encoding (the codec round-trips exactly). Corpus:
 * tests/fuzz/db-json/, replayed by ctest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/model.h"
#include "store/db-internal.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const char *a, const char *b)
{
        if (strcmp(a, b) != 0)
                abort(); /* decode(encode(x)) must encode to encode(x) */
}

static void pod(const char *in)
{
        rkl_pod_spec s = {0}, t = {0};
        rkl_error e = RKL_ERROR_INIT;
        if (rkl_db__pod_config_from_json(in, &s, &e) == 0) {
                _cleanup_free_ char *j = rkl_db__pod_config_to_json(&s);
                if (rkl_db__pod_config_from_json(j, &t, &e) < 0)
                        abort();
                _cleanup_free_ char *k = rkl_db__pod_config_to_json(&t);
                same(j, k);
        }
        rkl_pod_spec_done(&s);
        rkl_pod_spec_done(&t);
}

static void container(const char *in)
{
        rkl_container_spec s = {0}, t = {0};
        rkl_error e = RKL_ERROR_INIT;
        if (rkl_db__container_config_from_json(in, &s, &e) == 0) {
                _cleanup_free_ char *j = rkl_db__container_config_to_json(&s);
                if (rkl_db__container_config_from_json(j, &t, &e) < 0)
                        abort();
                _cleanup_free_ char *k = rkl_db__container_config_to_json(&t);
                same(j, k);
        }
        rkl_container_spec_done(&s);
        rkl_container_spec_done(&t);
}

static void kvs(const char *in)
{
        rkl_kvs s = {0}, t = {0};
        rkl_error e = RKL_ERROR_INIT;
        if (rkl_db__kvs_from_json(in, "labels", &s, &e) == 0) {
                _cleanup_free_ char *j = rkl_db__kvs_to_json(&s);
                if (rkl_db__kvs_from_json(j, "labels", &t, &e) < 0)
                        abort();
                _cleanup_free_ char *k = rkl_db__kvs_to_json(&t);
                same(j, k);
        }
        rkl_kvs_done(&s);
        rkl_kvs_done(&t);
}

static void timeline(const char *in, bool pod)
{
        rkl_timeline t, u;
        rkl_db__timeline_from_json(in, pod, &t);
        _cleanup_free_ char *j = rkl_db__timeline_to_json(&t, pod);
        rkl_db__timeline_from_json(j, pod, &u);
        _cleanup_free_ char *k = rkl_db__timeline_to_json(&u, pod);
        if (memcmp(&t, &u, sizeof(t)) != 0)
                abort();
        if (j || k)
                same(j ? j : "", k ? k : "");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        _cleanup_free_ char *in = rkl_xmalloc(size);
        memcpy(in, data + 1, size - 1);
        in[size - 1] = 0;
        switch (data[0] % 4) {
        case 0:
                pod(in);
                break;
        case 1:
                container(in);
                break;
        case 2:
                kvs(in);
                break;
        default:
                timeline(in, (data[0] / 4) % 2 == 0);
                break;
        }
        return 0;
}
