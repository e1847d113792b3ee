#include "pb.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "base/utf8.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/time-util.h"
#include "base/banned.h"

#define KUBELET_PREFIX  "io.kubernetes."
#define WARN_EVERY_USEC (60 * USEC_PER_SEC)

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

void rkl_api_json_book(json_object *j, const rkl_db_bookkeeping *b, const rkl_timeline *t, bool pod)
{
        json_object_object_add(j, "attempts", json_object_new_int64(b->attempts));
        json_object_object_add(j, "lastError", rkl_api_json_str(b->last_error));
        json_object_object_add(j, "nextRetryAt", rkl_api_json_ns(b->next_retry_ns));
        json_object_object_add(j, "acceptedAt", rkl_api_json_ns(b->accepted_ns));
        _cleanup_free_ char *timeline = rkl_db_timeline_json(t, pod);
        json_object_object_add(j, "timelineUs", timeline ? json_tokener_parse(timeline) : NULL);
        json_object_object_add(j, "version", json_object_new_int64((int64_t)b->version));
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

/* The key of an entry of repeated field number field: wire type 2, length-delimited. */
static uint64_t entry_key(uint32_t field)
{
        return (uint64_t)field << 3 | 2;
}

size_t rkl_api_pb_entry_size(uint32_t field, size_t len)
{
        return varint(entry_key(field), NULL) + varint(len, NULL) + len;
}

size_t rkl_api_pb_entries_write(uint32_t field, const rkl_blob *const *items, size_t n,
                                unsigned char *out)
{
        unsigned char *p = out;
        for (size_t i = 0; i < n; i++) {
                p += varint(entry_key(field), p);
                p += varint(items[i]->len, p);
                memcpy(p, items[i]->data, items[i]->len);
                p += items[i]->len;
        }
        return (size_t)(p - out);
}

void rkl_api_pb_raw_repeated(rkl_api_ctx *ctx, uint32_t field, const rkl_blob *const *items,
                             size_t n)
{
        size_t total = 0;
        for (size_t i = 0; i < n; i++)
                total += rkl_api_pb_entry_size(field, items[i]->len);
        unsigned char *buf = rkl_xmalloc(total ? total : 1);
        (void)rkl_api_pb_entries_write(field, items, n, buf);
        free(ctx->raw);
        ctx->raw = buf;
        ctx->raw_len = total;
}

bool rkl_api_is_kubelet_key(const char *key)
{
        return strncmp(key, KUBELET_PREFIX, strlen(KUBELET_PREFIX)) == 0;
}

static const rkl_kvs *kvs_keep(rkl_arena *a, const rkl_kvs *l, bool kubelets)
{
        rkl_kvs *out = rkl_arena_newa(rkl_kvs, a, 1);
        *out = (rkl_kvs){0};
        if (!kubelets || l->n == 0)
                return out;
        out->items = rkl_arena_newa(rkl_kv, a, l->n);
        for (size_t i = 0; i < l->n; i++)
                if (rkl_api_is_kubelet_key(l->items[i].key))
                        out->items[out->n++] = l->items[i];
        return out;
}

const rkl_kvs *rkl_api_trim_labels(rkl_arena *a, const rkl_kvs *l, unsigned level)
{
        return level < 3 ? l : kvs_keep(a, l, level == 3);
}

const rkl_kvs *rkl_api_trim_annotations(rkl_arena *a, const rkl_kvs *l, unsigned level)
{
        return level < 1 ? l : kvs_keep(a, l, level == 1);
}

const rkl_blob *rkl_api_pb_blob(rkl_arena *a, const ProtobufCMessage *m)
{
        size_t n = protobuf_c_message_get_packed_size(m);
        rkl_blob *b = rkl_arena_alloc(a, sizeof(*b) + n);
        b->len = protobuf_c_message_pack(m, b->data);
        return b;
}

typedef struct by_size {
        size_t len, i;
} by_size;

static int larger_first(const void *x, const void *y)
{
        const by_size *a = x, *b = y;
        if (a->len != b->len)
                return a->len > b->len ? -1 : 1;
        return a->i < b->i ? -1 : a->i > b->i;
}

static const char *const kept[RKL_API_TRIM_LEVELS + 1] = {
    [1] = "only kubelet's own annotations",
    [2] = "no annotations",
    [3] = "only kubelet's own labels and no annotations",
    [4] = "no labels or annotations",
};

/* The items of a repeated field (number field) of lengths lens[] (updated), trimmed largest
 * first, level after level, by trim (which returns an item's new length) until they fit;
 * the warning. */
static int fit(rkl_api_ctx *ctx, uint32_t field, size_t *lens, size_t n,
               size_t (*trim)(void *userdata, size_t i, unsigned level), void *userdata,
               const char *what, const char *noun, _Atomic uint64_t *last_warned_usec,
               rkl_error *reterr)
{
        size_t max = ctx->cfg->max_reply ? ctx->cfg->max_reply : RKL_API_MAX_MESSAGE;
        size_t total = 0;
        for (size_t i = 0; i < n; i++)
                total += rkl_api_pb_entry_size(field, lens[i]);
        if (total <= max)
                return 0;

        size_t whole = total, at_level = 0; /* items at the last level: the others are at the
                                             * one before */
        unsigned level = 0;
        by_size *order = rkl_arena_newa(by_size, ctx->arena, n);
        for (size_t i = 0; i < n; i++)
                order[i] = (by_size){lens[i], i};
        qsort(order, n, sizeof(*order), larger_first);
        /* A level starts once every item is at the one before. */
        while (total > max && level < RKL_API_TRIM_LEVELS) {
                level++;
                at_level = 0;
                for (size_t k = 0; k < n && total > max; k++) {
                        size_t i = order[k].i;
                        total -= rkl_api_pb_entry_size(field, lens[i]);
                        lens[i] = trim(userdata, i, level);
                        total += rkl_api_pb_entry_size(field, lens[i]);
                        at_level++;
                }
        }
        if (total > max)
                return rkl_error_set(reterr, -EMSGSIZE,
                                     "the answer would be %zu bytes even without labels and "
                                     "annotations, more than the %zu a client takes",
                                     total, max);
        uint64_t now = rkl_now_usec(CLOCK_MONOTONIC), last = atomic_load(last_warned_usec);
        if ((last == 0 || now - last >= WARN_EVERY_USEC) &&
            atomic_compare_exchange_strong(last_warned_usec, &last, now))
                rkl_log_warning("%s: its answer of %zu bytes would be over the %zu a client "
                                "takes: %zu of %zu %s sent with %s, the others with %s (at most "
                                "one such warning a minute)",
                                what, whole, max, at_level, n, noun, kept[level],
                                level > 1 ? kept[level - 1] : "all of theirs");
        return 1;
}

typedef struct raw_fit {
        const rkl_blob **items;
        rkl_api_pb_trim_fn trim;
        void *userdata;
        rkl_arena *arena;
} raw_fit;

static size_t raw_trim(void *userdata, size_t i, unsigned level)
{
        raw_fit *f = userdata;
        f->items[i] = f->trim(f->userdata, i, level, f->arena);
        return f->items[i]->len;
}

int rkl_api_pb_raw_repeated_fit(rkl_api_ctx *ctx, uint32_t field, const rkl_blob **items, size_t n,
                                rkl_api_pb_trim_fn trim, void *userdata, const char *what,
                                const char *noun, _Atomic uint64_t *last_warned_usec,
                                rkl_error *reterr)
{
        size_t *lens = rkl_arena_newa(size_t, ctx->arena, n);
        for (size_t i = 0; i < n; i++)
                lens[i] = items[i]->len;
        raw_fit f = {items, trim, userdata, ctx->arena};
        int r = fit(ctx, field, lens, n, raw_trim, &f, what, noun, last_warned_usec, reterr);
        if (r < 0)
                return r;
        rkl_api_pb_raw_repeated(ctx, field, items, n);
        return 0;
}

int rkl_api_pb_repeated_fit(rkl_api_ctx *ctx, uint32_t field, void *items, size_t n,
                            rkl_api_pb_trim_in_place_fn trim, const char *what, const char *noun,
                            _Atomic uint64_t *last_warned_usec, rkl_error *reterr)
{
        size_t *lens = rkl_arena_newa(size_t, ctx->arena, n);
        for (size_t i = 0; i < n; i++)
                lens[i] = trim(items, i, 0);
        int r = fit(ctx, field, lens, n, trim, items, what, noun, last_warned_usec, reterr);
        return r < 0 ? r : 0;
}
