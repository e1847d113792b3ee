/* Strict number parsing: whole string, no sign surprises, range-checked. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct sockaddr_in;

int rkl_safe_atou64(const char *s, uint64_t *ret);
int rkl_safe_atoi64(const char *s, int64_t *ret);
int rkl_safe_atoi(const char *s, int *ret);
int rkl_safe_atou(const char *s, unsigned *ret);
/* A Kubernetes quantity of whole units ("10M", "1Gi", "1.5k", "250000"): digits with an
 * optional fraction, then an optional suffix k M G T P E (powers of 1000) or Ki Mi Gi Ti Pi
 * Ei (powers of 1024). A result that is not a whole number is rounded up, as Kubernetes
 * does. -EINVAL for anything else (a sign, an exponent, "m"), -ERANGE past 2^63. */
int rkl_parse_quantity(const char *s, uint64_t *ret);
/* The largest TCP or UDP port. */
#define RKL_MAX_PORT 65535

/* "IPV4:PORT" (port 1 to RKL_MAX_PORT, or 0 when port_zero says "any free one"). -EINVAL. */
int rkl_ipv4_port_parse(const char *s, bool port_zero, struct sockaddr_in *ret);
/* A syscall's name as seccomp profiles and systemd's SystemCallFilter= write it: 1 to 64
 * lowercase letters, digits and underscores. */
bool rkl_syscall_name_is_valid(const char *s);
