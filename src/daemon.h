/* rkl_daemon: owns the configuration, the cache, the reconciler and the API server, and
 * starts and stops them in order. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

typedef struct rkl_daemon_config {
        const char *listen_path;
        int listen_fd; /* inherited from systemd (fd 3 and up); 0: bind listen_path */
        const char *state_dir;
        bool sync_full;       /* fsync every commit: survives power loss, not only crashes */
        bool wait;            /* answer mutating calls once carried out (api/wait.h) */
        const char *rkt_path; /* NULL: not found */
        const char *rkt_data_dir;
        const char *systemd_bus; /* NULL: the system bus */
        const char *net;         /* rkt --net for pods; NULL: rktlet runs CNI itself */
        const char *cni_conf_dir;
        char *const *cni_bin_dirs;
        uint64_t cni_timeout_usec;
        const char *stage1_name; /* NULL: rkt's default stage1 */
        unsigned max_actions;    /* rkt commands at once */
        unsigned api_threads;
        gid_t socket_gid; /* (gid_t)-1: root's */
        uint64_t probe_interval_usec;
        uint64_t stats_interval_usec;        /* 0: 10 s */
        uint64_t sandbox_ready_timeout_usec; /* 0: the reconciler's default */
        uint64_t rkt_timeout_usec;           /* 0: the reconciler's default */
        char *const *registry_mirrors;       /* "HOST=URL" entries, tried in order before HOST */
        const char *metrics_address;         /* "IPV4:PORT" for /metrics; NULL: none */
        const char *stream_address;          /* "IPV4:PORT" of the streaming server */
        const char *stream_netns;            /* the namespace it listens in; NULL: ours */
        uint64_t stream_token_ttl_usec;      /* 0: the stream module's default (60 s) */
} rkl_daemon_config;

typedef struct rkl_daemon rkl_daemon;

int rkl_daemon_new(const rkl_daemon_config *cfg, rkl_daemon **ret, rkl_error *reterr);
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
