/* Fuzz target for the wire walk that finds NULs in a request's string fields (src/api/
 * wire.c), on the bytes any client can send. The first byte picks the request type (the
 * ones with the deepest nesting and maps), the rest is the message. Corpus:
 * tests/fuzz/wire/, replayed by ctest. Checks: a NUL reported is really in the input, its
 * path is not empty, and the path is bounded. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.pb-c.h"
#include "api/wire.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const ProtobufCMessageDescriptor *const types[] = {
            &runtime__v1__create_container_request__descriptor,
            &runtime__v1__run_pod_sandbox_request__descriptor,
            &runtime__v1__list_containers_request__descriptor,
            &runtime__v1__pull_image_request__descriptor,
        };
        if (size < 1)
                return 0;
        const ProtobufCMessageDescriptor *d = types[data[0] % 4];
        char path[64];
        int r = rkl_api_wire_find_nul(d, data + 1, size - 1, path, sizeof(path));
        if (r == -EINVAL) {
                if (!path[0] || strlen(path) >= sizeof(path) || !memchr(data + 1, 0, size - 1))
                        abort();
        } else if (r != 0) {
                abort();
        }
        return 0;
}
