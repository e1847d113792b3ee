/* rktlet's configuration: every option of the daemon and of `rktlet check`, as main.c parses
 * them from the command line and the configuration file (`rktlet --help`, the README's
 * table; the file's syntax is config-file.h's). It is filled once, at start, and every part reads
 * it: the daemon, the reconciler, the API and the checks each keep a pointer to it, or take the
 * fields they need from it. Each option has one field here and nowhere else, and its default
 * one macro below. The strings are the struct's own (rkl_config_done()). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "time-util.h"

/* Every option's default, said once: rkl_config_init() starts from them, and a part handed
 * a configuration with a number left 0 (a test's, made by hand) takes the same one
 * (rkl_config_fill_defaults()). An option without one here has none: its field's comment
 * says what NULL or 0 means. */
#define RKL_CONFIG_DEFAULT_LISTEN_PATH  "/run/rktlet/rktlet.sock"
#define RKL_CONFIG_DEFAULT_STATE_DIR    "/var/lib/rktlet"
#define RKL_CONFIG_DEFAULT_RKT_DATA_DIR "/var/lib/rktlet/data"
#define RKL_CONFIG_DEFAULT_CNI_CONF_DIR "/etc/cni/net.d"
/* Where clusters install their plugins, then where Debian's containernetworking-plugins
 * does; taken only when neither the flags nor the file name one (the option repeats). */
#define RKL_CONFIG_DEFAULT_CNI_BIN_DIRS               "/opt/cni/bin", "/usr/lib/cni"
#define RKL_CONFIG_DEFAULT_STREAM_ADDRESS             "127.0.0.1:0"
#define RKL_CONFIG_DEFAULT_API_THREADS                1 /* the fastest on 2 cores */
#define RKL_CONFIG_DEFAULT_MAX_ACTIONS                4
#define RKL_CONFIG_DEFAULT_CNI_TIMEOUT_USEC           (30 * USEC_PER_SEC)
#define RKL_CONFIG_DEFAULT_PROBE_INTERVAL_USEC        (30 * USEC_PER_SEC)
#define RKL_CONFIG_DEFAULT_STATS_INTERVAL_USEC        (10 * USEC_PER_SEC) /* kubelet's housekeeping */
#define RKL_CONFIG_DEFAULT_SANDBOX_READY_TIMEOUT_USEC (120 * USEC_PER_SEC)
#define RKL_CONFIG_DEFAULT_RKT_TIMEOUT_USEC           (60 * USEC_PER_SEC)

typedef struct rkl_config {
        char *listen_path; /* --listen: the CRI socket */
        /* A listening socket inherited from systemd (rktlet.socket: fd 3 and up), served
         * instead of binding listen_path; 0: bind listen_path. Not an option: main.c finds it
         * in LISTEN_FDS. */
        int listen_fd;
        gid_t socket_gid;          /* --socket-group; (gid_t)-1: root's */
        char *state_dir;           /* --state-dir: the database and the daemon's own files */
        bool sync_full;            /* --sync-full: fsync every commit (survives power loss) */
        bool wait;                 /* --wait: mutating calls answer once carried out (api/wait.h) */
        char *rkt_path;            /* --rkt-path; NULL: no rkt was found */
        char *rkt_data_dir;        /* --rkt-data-dir: rkt's --dir */
        char *systemd_bus;         /* --systemd-bus; NULL: the system bus */
        unsigned api_threads;      /* --api-threads: completion-queue threads */
        char *net;                 /* --net: rkt's network for pods; NULL: rktlet runs CNI */
        char *cni_conf_dir;        /* --cni-conf-dir: the network configuration's directory */
        char **cni_bin_dirs;       /* --cni-bin-dir: where plugins are found, in order */
        uint64_t cni_timeout_usec; /* --cni-timeout: a plugin's deadline */
        char *stage1_name;         /* --stage1-name; NULL: rkt's default stage1 */
        unsigned max_actions;      /* --max-actions: rkt commands at once */
        uint64_t probe_interval_usec;        /* --probe-interval */
        uint64_t stats_interval_usec;        /* --stats-interval */
        uint64_t sandbox_ready_timeout_usec; /* --sandbox-ready-timeout */
        uint64_t rkt_timeout_usec;           /* --rkt-timeout: a rkt command's */
        char **registry_mirrors; /* --registry-mirror: "HOST=URL", tried in order before HOST */
        char *metrics_address;   /* --metrics-address: "IPV4:PORT" of /metrics; NULL: off */
        char *stream_address;    /* --stream-address: "IPV4:PORT" of the streaming server */
        char *stream_netns;      /* --stream-netns: where it listens; NULL: the daemon's */
        /* --stream-token-ttl (hidden, for tests); 0: the streaming server's own */
        uint64_t stream_token_ttl_usec;
} rkl_config;

/* Every option at its default (the strings allocated), socket_gid (gid_t)-1 and
 * cni_bin_dirs NULL: what main.c starts from, before the file and the flags. */
void rkl_config_init(rkl_config *c);
/* Gives each number left 0 its default; the strings are the caller's and stay as they are. */
void rkl_config_fill_defaults(rkl_config *c);
/* Frees the strings and zeroes c. */
void rkl_config_done(rkl_config *c);
