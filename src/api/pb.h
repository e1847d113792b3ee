/* Building protobuf-c replies from cache views. Everything lands in the call's arena, so a
 * reply never points into a view that is released before the reply is packed. */
#pragma once

#include <json-c/json.h>
#include <string.h>

#include "api.h"
#include "base/arena.h"
#include "store/cache.h"
#include "base/model.h"

/* An arena copy of s ("" for NULL): client strings, given back as they came. */
char *rkl_api_pb_str(rkl_arena *a, const char *s);
/* The same, made valid UTF-8: for text the client did not send (observed reasons,
 * messages, errors), which a Go client would otherwise refuse. */
char *rkl_api_pb_text(rkl_arena *a, const char *s);
/* o serialised (and released) into the arena, made valid UTF-8. */
char *rkl_api_pb_json(rkl_arena *a, json_object *o);

/* m packed into a blob and installed in slot (a view's wire encoding), unless another
 * thread got there first: returns the one in the slot. */
const rkl_blob *rkl_api_pb_wire(_Atomic(rkl_blob *) *slot, const ProtobufCMessage *m);
/* Answers the call with a message made only of one repeated field (number field) of the
 * given encoded items: a list reply assembled from cached encodings, packed by nothing. */
void rkl_api_pb_raw_repeated(rkl_api_ctx *ctx, uint32_t field, const rkl_blob *const *items,
                             size_t n);

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

/* A protobuf-c label selector as a model list whose strings stay borrowed from the
 * request (the list lives in the arena). */
#define RKL_API_KVS_FROM_PB(a, entries, n_entries, ret)                                            \
        do {                                                                                       \
                (ret)->n = (n_entries);                                                            \
                (ret)->items = rkl_arena_newa(rkl_kv, (a), (ret)->n);                              \
                for (size_t _i = 0; _i < (ret)->n; _i++)                                           \
                        (ret)->items[_i] = (rkl_kv){(entries)[_i]->key, (entries)[_i]->value};     \
        } while (0)
