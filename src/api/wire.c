#include "wire.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/banned.h"

#define MAX_DEPTH      32 /* CRI messages nest 5 deep; deeper is not a CRI request */
#define WALK_PATH_SIZE 128

/* Calls that carry a pod's configuration: labels and annotations (Kubernetes caps a pod's
 * annotations at 256 KiB), DNS, ports, sysctls. */
#define CONFIG_BYTES (2u << 20)
/* A container's configuration and its pod's: its command line and environment, which the
 * kernel takes up to 2 MiB of (ARG_MAX), beside a pod's configuration. */
#define CONTAINER_BYTES (4u << 20)
/* The most fields convert.c accepts in a container's configuration and its pod's (4,096
 * arguments and 4,096 environment variables, 1,024 labels and annotations each, mounts,
 * ports) is about 40,000. */
#define CONFIG_FIELDS 65536
/* A well-behaved encoder writes a field that is not repeated once; merging a few encodings
 * of one message by concatenation is the protocol's own, and costs a few times the fields. */
#define REPEATS 4

static const rkl_api_wire_limits small = {
    .max_bytes = 64 * 1024, .max_fields = 2048, .max_repeats = REPEATS};
static const rkl_api_wire_limits config = {
    .max_bytes = CONFIG_BYTES, .max_fields = CONFIG_FIELDS, .max_repeats = REPEATS};
static const rkl_api_wire_limits container = {
    .max_bytes = CONTAINER_BYTES, .max_fields = CONFIG_FIELDS, .max_repeats = REPEATS};

const rkl_api_wire_limits *rkl_api_wire_limits_of(const char *method)
{
        static const struct {
                const char *method;
                const rkl_api_wire_limits *lim;
        } large[] = {
            {"RunPodSandbox", &config},      {"PullImage", &config}, /* with the pod's config */
            {"CreateContainer", &container}, {"ExecSync", &config},  {"Exec", &config},
        };
        for (size_t i = 0; i < ELEMENTSOF(large); i++)
                if (streq(method, large[i].method))
                        return large[i].lim;
        return &small;
}

typedef enum problem {
        PROBLEM_NONE,
        PROBLEM_NUL,
        PROBLEM_REPEATED,
        PROBLEM_FIELDS,
} problem;

typedef struct walk_state {
        const rkl_api_wire_limits *lim; /* NULL: the NUL check alone */
        size_t fields;
        problem problem;
        char path[WALK_PATH_SIZE];
} walk_state;

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

/* How many elements a packed list of v bytes of scalar type t holds (protobuf-c reads each
 * into an array slot of its own). */
static size_t packed_elements(ProtobufCType t, const uint8_t *p, uint64_t v)
{
        switch (t) {
        case PROTOBUF_C_TYPE_FIXED32:
        case PROTOBUF_C_TYPE_SFIXED32:
        case PROTOBUF_C_TYPE_FLOAT:
                return (size_t)(v / 4);
        case PROTOBUF_C_TYPE_FIXED64:
        case PROTOBUF_C_TYPE_SFIXED64:
        case PROTOBUF_C_TYPE_DOUBLE:
                return (size_t)(v / 8);
        default: { /* varints: one ends at each byte without the continuation bit */
                size_t n = 0;
                for (uint64_t i = 0; i < v; i++)
                        n += !(p[i] & 0x80);
                return n;
        }
        }
}

static bool too_many(walk_state *st, size_t more)
{
        st->fields += more;
        if (st->lim && st->fields > st->lim->max_fields) {
                st->problem = PROBLEM_FIELDS;
                return true;
        }
        return false;
}

/* Returns -EINVAL or -EMSGSIZE with st->problem (and st->path) set, else 0. */
static int walk(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                unsigned depth, walk_state *st)
{
        /* Occurrences of each non-repeated message field of this message, by field index. */
        uint32_t counts_small[64] = {0};
        _cleanup_free_ uint32_t *counts_big = NULL;
        uint32_t *counts = counts_small;
        int r = 0;

        if (depth > MAX_DEPTH)
                return 0;
        if (st->lim && d->n_fields > ELEMENTSOF(counts_small))
                counts = counts_big = rkl_xnew0(uint32_t, d->n_fields);

        while (p < end) {
                uint64_t tag, v;
                if (!read_varint(&p, end, &tag))
                        return 0;
                if (too_many(st, 1))
                        return -EMSGSIZE;
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
                        if (f->type == PROTOBUF_C_TYPE_STRING) {
                                if (memchr(q, 0, v)) {
                                        st->problem = PROBLEM_NUL;
                                        st->path[0] = 0;
                                        path_prepend(st->path, sizeof(st->path), f->name);
                                        return -EINVAL;
                                }
                        } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
                                size_t i = (size_t)(f - d->fields);
                                if (st->lim && f->label != PROTOBUF_C_LABEL_REPEATED &&
                                    ++counts[i] > st->lim->max_repeats) {
                                        st->problem = PROBLEM_REPEATED;
                                        st->path[0] = 0;
                                        path_prepend(st->path, sizeof(st->path), f->name);
                                        return -EINVAL;
                                }
                                r = walk(f->descriptor, q, q + v, depth + 1, st);
                                if (r < 0) {
                                        if (st->problem != PROBLEM_FIELDS)
                                                path_prepend(st->path, sizeof(st->path), f->name);
                                        return r;
                                }
                        } else if (f->label == PROTOBUF_C_LABEL_REPEATED &&
                                   f->type != PROTOBUF_C_TYPE_BYTES) {
                                /* A packed list of scalars: its tag is counted already. */
                                size_t n = packed_elements(f->type, q, v);
                                if (too_many(st, n ? n - 1 : 0))
                                        return -EMSGSIZE;
                        }
                        break;
                }
                default: /* groups: not in proto3, and protobuf-c refuses them */
                        return 0;
                }
        }
        return 0;
}

int rkl_api_wire_check(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                       const rkl_api_wire_limits *lim, rkl_error *reterr)
{
        if (len > lim->max_bytes)
                return rkl_error_set(reterr, -EMSGSIZE,
                                     "a request of %zu bytes: more than the %zu bytes this "
                                     "method takes",
                                     len, lim->max_bytes);
        walk_state st = {.lim = lim};
        int r = buf ? walk(d, buf, buf + len, 0, &st) : 0;
        if (r >= 0)
                return 0;
        switch (st.problem) {
        case PROBLEM_FIELDS:
                return rkl_error_set(reterr, r,
                                     "a request of more than %zu fields: more than this method "
                                     "takes",
                                     lim->max_fields);
        case PROBLEM_REPEATED:
                return rkl_error_set(reterr, r,
                                     "'%s' occurs more than %u times: a field that is not "
                                     "repeated may occur at most %u times",
                                     st.path, lim->max_repeats, lim->max_repeats);
        default:
                return rkl_error_set(reterr, r, "'%s' holds a NUL byte", st.path);
        }
}

int rkl_api_wire_find_nul(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                          char *path, size_t path_size)
{
        if (path_size)
                path[0] = 0;
        if (!buf || path_size == 0)
                return 0;
        walk_state st = {0};
        int r = walk(d, buf, buf + len, 0, &st);
        if (r < 0) {
                size_t n = strlen(st.path);
                /* The innermost part, as a shorter buffer would have kept it. */
                const char *s = st.path;
                while (n >= path_size) {
                        const char *dot = strchr(s, '.');
                        if (!dot)
                                break;
                        n -= (size_t)(dot + 1 - s);
                        s = dot + 1;
                }
                if (n >= path_size)
                        return r; /* the field's own name does not fit: leave it empty */
                memcpy(path, s, n + 1);
        }
        return r;
}
