/* UTF-8 checks: protobuf-c does not check proto3 strings, Go clients (kubelet) reject
 * invalid ones, so every string we send that did not come from a client is sanitised. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

bool rkl_utf8_is_valid(const char *s, size_t n);
/* Replaces each invalid byte with '?', in place. Returns s. */
char *rkl_utf8_sanitize(char *s);
