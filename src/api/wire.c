#include "wire.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/banned.h"

#define MAX_DEPTH 32 /* CRI messages nest 5 deep; deeper is not a CRI request */

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
        uint64_t v = 0;
        for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
                uint8_t b = *(*p)++;
                v |= (uint64_t)(b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return true;
                }
        }
        return false;
}

/* Prepends "name." to path, which holds the path below this field (or is empty). */
static void path_prepend(char *path, size_t size, const char *name)
{
        size_t n = strlen(name), k = strlen(path), sep = k ? 1 : 0;
        if (n + sep + k >= size)
                return; /* keep the innermost part, which names the field */
        memmove(path + n + sep, path, k + 1);
        memcpy(path, name, n);
        if (sep)
                path[n] = '.';
}

static int walk(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                unsigned depth, char *path, size_t size)
{
        if (depth > MAX_DEPTH)
                return 0;
        while (p < end) {
                uint64_t tag, v;
                if (!read_varint(&p, end, &tag))
                        return 0;
                switch (tag & 7) {
                case 0: /* varint */
                        if (!read_varint(&p, end, &v))
                                return 0;
                        break;
                case 1: /* 64-bit */
                        if (end - p < 8)
                                return 0;
                        p += 8;
                        break;
                case 5: /* 32-bit */
                        if (end - p < 4)
                                return 0;
                        p += 4;
                        break;
                case 2: { /* length-delimited */
                        if (!read_varint(&p, end, &v) || v > (uint64_t)(end - p))
                                return 0;
                        const uint8_t *q = p;
                        p += v;
                        if (tag >> 3 > UINT32_MAX)
                                return 0;
                        const ProtobufCFieldDescriptor *f =
                            protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3));
                        if (!f)
                                break; /* unknown field: protobuf-c keeps it aside */
                        if (f->type == PROTOBUF_C_TYPE_STRING && memchr(q, 0, v)) {
                                path[0] = 0;
                                path_prepend(path, size, f->name);
                                return -EINVAL;
                        }
                        if (f->type == PROTOBUF_C_TYPE_MESSAGE &&
                            walk(f->descriptor, q, q + v, depth + 1, path, size) < 0) {
                                path_prepend(path, size, f->name);
                                return -EINVAL;
                        }
                        break;
                }
                default: /* groups: not in proto3, and protobuf-c refuses them */
                        return 0;
                }
        }
        return 0;
}

int rkl_api_wire_find_nul(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                          char *path, size_t path_size)
{
        if (path_size)
                path[0] = 0;
        if (!buf || path_size == 0)
                return 0;
        return walk(d, buf, buf + len, 0, path, path_size);
}
