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
/* Sets a Status response's verbose info map to the one entry "info" = the JSON of o, in a.
 * A macro: each response's map entry is a type of its own, all of one shape. */
#define RKL_API_PB_SET_INFO(a, resp, Entry, entry_init, o)                                         \
        do {                                                                                       \
                Entry *e_ = rkl_arena_newa(Entry, (a), 1);                                         \
                entry_init(e_);                                                                    \
                e_->key = (char *)"info";                                                          \
                e_->value = rkl_api_pb_json((a), (o));                                             \
                (resp)->info = rkl_arena_newa(Entry *, (a), 1);                                    \
                (resp)->info[0] = e_;                                                              \
                (resp)->n_info = 1;                                                                \
        } while (0)

/* m packed into a blob and installed in slot (a view's wire encoding), unless another
 * thread got there first: returns the one in the slot. */
const rkl_blob *rkl_api_pb_wire(_Atomic(rkl_blob *) *slot, const ProtobufCMessage *m);
/* The bytes an item of len bytes takes as an entry of repeated field number field of a
 * message: its key (the number, wire type 2), its length, itself. */
size_t rkl_api_pb_entry_size(uint32_t field, size_t len);
/* Writes items[0..n) as entries of repeated field number field at out, which has room for
 * the sum of their rkl_api_pb_entry_size(); returns that sum. */
size_t rkl_api_pb_entries_write(uint32_t field, const rkl_blob *const *items, size_t n,
                                unsigned char *out);
/* Answers the call with a message made only of one repeated field (number field) of the
 * given encoded items: a list reply assembled from cached encodings, packed by nothing. */
void rkl_api_pb_raw_repeated(rkl_api_ctx *ctx, uint32_t field, const rkl_blob *const *items,
                             size_t n);

/* When a List's answer would be larger than a client takes (a few objects of hundreds of
 * KiB of labels and annotations are enough), its largest items are sent with less of them,
 * by level: 1 keeps of an item's annotations only kubelet's own (keys "io.kubernetes."), 2
 * none of them, 3 of its labels only kubelet's, 4 none. kubelet needs complete lists more
 * than it needs these: it reads its own entries, and a List it cannot take fails whole. */
#define RKL_API_TRIM_LEVELS 4
/* Whether kubelet itself sets the label or annotation key (io.kubernetes.*). */
bool rkl_api_is_kubelet_key(const char *key);
/* What an item keeps of its labels or annotations at a level: l itself, or a list in a
 * whose strings stay l's. */
const rkl_kvs *rkl_api_trim_labels(rkl_arena *a, const rkl_kvs *l, unsigned level);
const rkl_kvs *rkl_api_trim_annotations(rkl_arena *a, const rkl_kvs *l, unsigned level);
/* Item i of a list (userdata) encoded at a level above 0, in a. */
typedef const rkl_blob *(*rkl_api_pb_trim_fn)(void *userdata, size_t i, unsigned level,
                                              rkl_arena *a);
/* m packed into a blob in a. */
const rkl_blob *rkl_api_pb_blob(rkl_arena *a, const ProtobufCMessage *m);

/* Answers as rkl_api_pb_raw_repeated() does when the items (encoded whole) fit the largest
 * answer (cfg->max_reply); else encodes the largest again with trim(userdata, ...),
 * level after level, until they fit, and logs a warning (at most once a minute for each
 * last_warned_usec) naming what (e.g. "ListPodSandbox") and how many of how many
 * (noun, e.g. "sandboxes") went out trimmed. -EMSGSIZE when they do not fit even so. */
int rkl_api_pb_raw_repeated_fit(rkl_api_ctx *ctx, uint32_t field, const rkl_blob **items, size_t n,
                                rkl_api_pb_trim_fn trim, void *userdata, const char *what,
                                const char *noun, _Atomic uint64_t *last_warned_usec,
                                rkl_error *reterr);

/* The same for an answer the server packs: items is the array of its repeated field's
 * entries (number field), each trimmed in place by trim(items, i, level), which returns its
 * packed size then (level 0: as it is, untouched). */
typedef size_t (*rkl_api_pb_trim_in_place_fn)(void *items, size_t i, unsigned level);
int rkl_api_pb_repeated_fit(rkl_api_ctx *ctx, uint32_t field, void *items, size_t n,
                            rkl_api_pb_trim_in_place_fn trim, const char *what, const char *noun,
                            _Atomic uint64_t *last_warned_usec, rkl_error *reterr);

/* A JSON string, or null for NULL; an int64, or null for 0 ("not yet"). */
json_object *rkl_api_json_str(const char *s);
json_object *rkl_api_json_ns(int64_t ns);
/* Adds to a verbose status's info what a sandbox and a container share: the retry
 * bookkeeping (attempts, lastError, nextRetryAt, acceptedAt, version) and the start's
 * timeline (timelineUs: microseconds after acceptedAt, migrations/0006). */
void rkl_api_json_book(json_object *j, const rkl_db_bookkeeping *b, const rkl_timeline *t,
                       bool pod);

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

/* A protobuf-c map field's entries (and their count) trimmed in place to what an item keeps
 * at level of its labels (labels true) or annotations. */
#define RKL_API_PB_TRIM(entries, n, level, labels)                                                 \
        do {                                                                                       \
                unsigned _from = (labels) ? 3 : 1; /* the level from which it loses entries */     \
                if ((level) > _from) {                                                             \
                        (n) = 0;                                                                   \
                } else if ((level) == _from) {                                                     \
                        size_t _k = 0;                                                             \
                        for (size_t _i = 0; _i < (n); _i++)                                        \
                                if (rkl_api_is_kubelet_key((entries)[_i]->key))                    \
                                        (entries)[_k++] = (entries)[_i];                           \
                        (n) = _k;                                                                  \
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

/* The cache's filter f of a stats request's filter pf (a PodSandboxStatsFilter or a
 * ContainerStatsFilter; NULL: all): its ID and label selector, which goes in the list
 * selector and whose strings stay the request's. */
#define RKL_API_STATS_FILTER_FROM_PB(a, pf, f, selector)                                           \
        do {                                                                                       \
                *(f) = (rkl_view_filter){0};                                                       \
                *(selector) = (rkl_kvs){0};                                                        \
                if (!(pf))                                                                         \
                        break;                                                                     \
                (f)->id = (pf)->id;                                                                \
                RKL_API_KVS_FROM_PB(a, (pf)->label_selector, (pf)->n_label_selector, selector);    \
                (f)->label_selector = (selector);                                                  \
        } while (0)

/* The same of a List or Stream request's filter (a PodSandboxFilter or a ContainerFilter),
 * which has a state too. */
#define RKL_API_VIEW_FILTER_FROM_PB(a, pf, f, selector)                                            \
        do {                                                                                       \
                RKL_API_STATS_FILTER_FROM_PB(a, pf, f, selector);                                  \
                if ((pf) && (pf)->state) {                                                         \
                        (f)->by_state = true;                                                      \
                        (f)->state = (int)(pf)->state->state;                                      \
                }                                                                                  \
        } while (0)
