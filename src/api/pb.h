/* Building protobuf-c replies from cache views. Everything lands in the call's arena, so a
 * reply never points into a view that is released before the reply is packed. */
#pragma once

#include <json-c/json.h>
#include <string.h>

#include "base/arena.h"
#include "base/model.h"

/* An arena copy of s ("" for NULL): client strings, given back as they came. */
char *rkl_api_pb_str(rkl_arena *a, const char *s);
/* The same, made valid UTF-8: for text the client did not send (observed reasons,
 * messages, errors), which a Go client would otherwise refuse. */
char *rkl_api_pb_text(rkl_arena *a, const char *s);
/* o serialised (and released) into the arena, made valid UTF-8. */
char *rkl_api_pb_json(rkl_arena *a, json_object *o);

/* Copies of many strings from one arena block, for list replies: count every string first,
 * allocate, then put the same strings (a thousand items make tens of thousands of strings,
 * and one allocation with one memset beats that many). */
typedef struct rkl_api_strbuf {
        size_t size;
        char *next;
} rkl_api_strbuf;

static inline void rkl_api_strbuf_count(rkl_api_strbuf *b, const char *s)
{
        b->size += (s ? strlen(s) : 0) + 1;
}

static inline void rkl_api_strbuf_alloc(rkl_api_strbuf *b, rkl_arena *a)
{
        b->next = rkl_arena_alloc(a, b->size);
}

/* s's copy ("" for NULL); s must have been counted. */
static inline char *rkl_api_strbuf_put(rkl_api_strbuf *b, const char *s)
{
        size_t n = s ? strlen(s) : 0;
        char *p = b->next;
        memcpy(p, s ? s : "", n);
        p[n] = 0;
        b->next += n + 1;
        return p;
}

static inline void rkl_api_strbuf_count_kvs(rkl_api_strbuf *b, const rkl_kvs *l)
{
        for (size_t i = 0; i < l->n; i++) {
                rkl_api_strbuf_count(b, l->items[i].key);
                rkl_api_strbuf_count(b, l->items[i].value);
        }
}

/* A JSON string, or null for NULL; an int64, or null for 0 ("not yet"). */
json_object *rkl_api_json_str(const char *s);
json_object *rkl_api_json_ns(int64_t ns);

/* A model key/value list as a protobuf-c map field of Entry (whose initialiser is
 * ENTRY_INIT), in the client's order. Entries are allocated in one block. */
#define RKL_API_PB_KVS(a, kvs, Entry, ENTRY_INIT, ret_entries, ret_n)                              \
        do {                                                                                       \
                const rkl_kvs *_l = (kvs);                                                         \
                Entry *_e = rkl_arena_newa(Entry, (a), _l->n);                                     \
                Entry **_p = rkl_arena_newa(Entry *, (a), _l->n);                                  \
                for (size_t _i = 0; _i < _l->n; _i++) {                                            \
                        _e[_i] = (Entry)ENTRY_INIT;                                                \
                        _e[_i].key = rkl_api_pb_str((a), _l->items[_i].key);                       \
                        _e[_i].value = rkl_api_pb_str((a), _l->items[_i].value);                   \
                        _p[_i] = &_e[_i];                                                          \
                }                                                                                  \
                (ret_entries) = _p;                                                                \
                (ret_n) = _l->n;                                                                   \
        } while (0)

/* The same for list replies: entries come from a block (ents, an Entry *) and pointers from
 * another (ptrs, an Entry **) that the caller sized for every item, both advanced past this
 * list's entries; strings come from the strbuf sb. */
#define RKL_API_PB_KVS_BULK(sb, kvs, Entry, ENTRY_INIT, ents, ptrs, ret_entries, ret_n)            \
        do {                                                                                       \
                const rkl_kvs *_l = (kvs);                                                         \
                (ret_entries) = (ptrs);                                                            \
                (ret_n) = _l->n;                                                                   \
                for (size_t _i = 0; _i < _l->n; _i++) {                                            \
                        Entry *_e = (ents)++;                                                      \
                        *_e = (Entry)ENTRY_INIT;                                                   \
                        _e->key = rkl_api_strbuf_put((sb), _l->items[_i].key);                     \
                        _e->value = rkl_api_strbuf_put((sb), _l->items[_i].value);                 \
                        *(ptrs)++ = _e;                                                            \
                }                                                                                  \
        } while (0)

/* A protobuf-c label selector as a model list whose strings stay borrowed from the
 * request (the list lives in the arena). */
#define RKL_API_KVS_FROM_PB(a, entries, n_entries, ret)                                            \
        do {                                                                                       \
                (ret)->n = (n_entries);                                                            \
                (ret)->items = rkl_arena_newa(rkl_kv, (a), (ret)->n);                              \
                for (size_t _i = 0; _i < (ret)->n; _i++)                                           \
                        (ret)->items[_i] = (rkl_kv){(entries)[_i]->key, (entries)[_i]->value};     \
        } while (0)
