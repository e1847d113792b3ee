/* Checks on a request's wire bytes that protobuf-c's unpacked form can no longer show. */
#pragma once

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

/* A string field holding a NUL byte: protobuf-c hands strings over NUL-terminated, so the
 * handler would see "nul" where the client sent "nul\0x", and store a name it was never
 * given. Walks buf as a message of type d (nested messages and map entries included).
 * Returns 0 when no string field holds a NUL (or the bytes are not a well-formed message:
 * protobuf-c's unpack judges those), else -EINVAL with the field's dotted path, e.g.
 * "config.metadata.name", in path (truncated to path_size - 1). */
int rkl_api_wire_find_nul(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                          char *path, size_t path_size);
