/* Strict JSON reading of untrusted documents: rkt's files and outputs, CNI plugins' answers. */
#pragma once

#include <json-c/json.h>
#include <stdint.h>

#include "error.h"
#include "macro.h"

RKL_DEFINE_CLEANUP(json_object *, json_object_put)
RKL_DEFINE_CLEANUP(json_tokener *, json_tokener_free)

/* One JSON document of at most max bytes: strict, UTF-8 checked, depth-bounded, nothing but
 * whitespace after it. -EFBIG when too long, -EBADMSG otherwise. */
int rkl_json_parse(const char *buf, size_t len, size_t max, json_object **ret, rkl_error *reterr);
/* A string member (borrowed); NULL when absent or null. -EBADMSG for another type, an
 * embedded NUL or more than max bytes. */
int rkl_json_get_string(json_object *o, const char *key, size_t max, const char **ret,
                        rkl_error *reterr);
/* A new JSON array of the strings of l (NULL: empty). */
json_object *rkl_json_new_strv(char *const *l);
/* An integer member; 0 when absent or null. */
int rkl_json_get_int(json_object *o, const char *key, int64_t *ret, rkl_error *reterr);
