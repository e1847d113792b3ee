#include "pb.h"

#include "base/utf8.h"
#include "base/alloc.h"
#include "base/banned.h"

char *rkl_api_pb_str(rkl_arena *a, const char *s)
{
        return rkl_arena_strdup(a, s ? s : "");
}

char *rkl_api_pb_text(rkl_arena *a, const char *s)
{
        return rkl_utf8_sanitize(rkl_api_pb_str(a, s));
}

char *rkl_api_pb_json(rkl_arena *a, json_object *o)
{
        char *s =
            rkl_api_pb_text(a, json_object_to_json_string_ext(
                                   o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return s;
}

json_object *rkl_api_json_str(const char *s)
{
        return s ? json_object_new_string(s) : NULL;
}

json_object *rkl_api_json_ns(int64_t ns)
{
        return ns != 0 ? json_object_new_int64(ns) : NULL;
}

const rkl_blob *rkl_api_pb_wire(_Atomic(rkl_blob *) *slot, const ProtobufCMessage *m)
{
        size_t n = protobuf_c_message_get_packed_size(m);
        rkl_blob *b = rkl_xmalloc(sizeof(*b) + n);
        b->len = protobuf_c_message_pack(m, b->data);
        return rkl_blob_publish(slot, b);
}

static size_t varint(uint64_t v, unsigned char *out)
{
        size_t n = 0;
        do {
                unsigned char byte = v & 0x7f;
                v >>= 7;
                if (out)
                        out[n] = byte | (v ? 0x80 : 0);
                n++;
        } while (v);
        return n;
}

void rkl_api_pb_raw_repeated(rkl_api_ctx *ctx, uint32_t field, const rkl_blob *const *items,
                             size_t n)
{
        /* Each item: key (field number, wire type 2: length-delimited), length, bytes. */
        uint64_t key = (uint64_t)field << 3 | 2;
        size_t total = 0;
        for (size_t i = 0; i < n; i++)
                total += varint(key, NULL) + varint(items[i]->len, NULL) + items[i]->len;
        unsigned char *buf = rkl_xmalloc(total ? total : 1), *p = buf;
        for (size_t i = 0; i < n; i++) {
                p += varint(key, p);
                p += varint(items[i]->len, p);
                memcpy(p, items[i]->data, items[i]->len);
                p += items[i]->len;
        }
        free(ctx->raw);
        ctx->raw = buf;
        ctx->raw_len = total;
}
