/* rkl_daemon: owns the cache, the reconciler and the API server, made from the
 * configuration (base/config.h), and starts and stops them in order. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

typedef struct rkl_config rkl_config;

typedef struct rkl_daemon rkl_daemon;

/* cfg is borrowed: it must outlive the daemon. */
int rkl_daemon_new(const rkl_config *cfg, rkl_daemon **ret, rkl_error *reterr);
/* Starts every part; once it returns 0 the socket answers calls. */
int rkl_daemon_start(rkl_daemon *d, rkl_error *reterr);
/* Stops accepting calls, finishes or cancels in-flight ones, stops the threads. */
void rkl_daemon_stop(rkl_daemon *d);
/* True when the daemon stopped itself: its database failed the check at start (the error
 * is logged, and the process got SIGTERM). */
bool rkl_daemon_failed(rkl_daemon *d);

/* What systemd's STATUS= and the watchdog are told. */
typedef struct rkl_daemon_status {
        size_t pods, pods_running, containers, containers_running;
        uint64_t reconcile_lag_usec; /* the oldest change no pass has looked at yet; 0: none */
} rkl_daemon_status;
void rkl_daemon_get_status(rkl_daemon *d, rkl_daemon_status *ret);
rkl_daemon *rkl_daemon_free(rkl_daemon *d);

RKL_DEFINE_CLEANUP(rkl_daemon *, rkl_daemon_free)
