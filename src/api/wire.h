/* Checks on a request's wire bytes, made before protobuf-c unpacks them: what the unpacked
 * form can no longer show (a NUL inside a string), and what unpacking it would cost. */
#pragma once

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* What one request may cost. protobuf-c's unpack costs memory in proportion to the number of
 * fields (a message, a pointer and bookkeeping for each), and merges every occurrence of a
 * message field that is not repeated into the ones before it, copying all they gathered:
 * such a field sent k times costs k squared. */
typedef struct rkl_api_wire_limits {
        size_t max_bytes;     /* the encoded request */
        size_t max_fields;    /* field occurrences at every depth; a packed list's each element */
        unsigned max_repeats; /* occurrences of one non-repeated message field in one message */
} rkl_api_wire_limits;

/* The limits of a CRI method, by its name ("RunPodSandbox", "ListImages"): calls that carry
 * a pod's or a container's configuration (RunPodSandbox, CreateContainer, PullImage) or a
 * command line (ExecSync, Exec) may be large, every other one is a few IDs and a filter. */
const rkl_api_wire_limits *rkl_api_wire_limits_of(const char *method);

/* Walks buf as a message of type d (nested messages and map entries included) and checks it
 * against lim: -EMSGSIZE when it is larger or has more fields than lim allows, -EINVAL when a
 * non-repeated message field occurs more than lim->max_repeats times in one message or a
 * string field holds a NUL (protobuf-c hands strings over NUL-terminated, so the handler would
 * see "nul" where the client sent "nul\0x"). The message names the limit or the field's
 * dotted path ("config.metadata.name"). Bytes that are not a well-formed message are walked
 * up to where they stop being one and left to protobuf-c's unpack to refuse. */
int rkl_api_wire_check(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                       const rkl_api_wire_limits *lim, rkl_error *reterr);

/* The NUL check alone, without limits: -EINVAL with the field's dotted path in path
 * (truncated to path_size - 1, keeping its innermost part), else 0. */
int rkl_api_wire_find_nul(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                          char *path, size_t path_size);
