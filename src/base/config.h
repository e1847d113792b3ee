/* rktlet's configuration: every option of the daemon and of `rktlet check`, as main.c parses
 * them from the command line and the configuration file (`rktlet --help`, the README's
 * table; the file's syntax is config-file.h's). It is filled once, at start, and every part reads
 * it: the daemon, the reconciler, the API and the checks each keep a pointer to it, or take the
 * fields they need from it. Each option has one field here and nowhere else. A zero field means
 * what its comment says; main.c gives every option its documented default before parsing. The
 * strings are the struct's own (rkl_config_done()). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

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
        unsigned api_threads;      /* --api-threads: completion-queue threads; 0: 1 */
        char *net;                 /* --net: rkt's network for pods; NULL: rktlet runs CNI */
        char *cni_conf_dir;        /* --cni-conf-dir: the network configuration's directory */
        char **cni_bin_dirs;       /* --cni-bin-dir: where plugins are found, in order */
        uint64_t cni_timeout_usec; /* --cni-timeout: a plugin's deadline; 0: 30 s */
        char *stage1_name;         /* --stage1-name; NULL: rkt's default stage1 */
        unsigned max_actions;      /* --max-actions: rkt commands at once; 0: 4 */
        uint64_t probe_interval_usec;        /* --probe-interval; 0: 30 s */
        uint64_t stats_interval_usec;        /* --stats-interval; 0: 10 s, kubelet's housekeeping */
        uint64_t sandbox_ready_timeout_usec; /* --sandbox-ready-timeout; 0: 120 s */
        uint64_t rkt_timeout_usec;           /* --rkt-timeout: a rkt command's; 0: 60 s */
        char **registry_mirrors; /* --registry-mirror: "HOST=URL", tried in order before HOST */
        char *metrics_address;   /* --metrics-address: "IPV4:PORT" of /metrics; NULL: off */
        char *stream_address;    /* --stream-address: "IPV4:PORT" of the streaming server */
        char *stream_netns;      /* --stream-netns: where it listens; NULL: the daemon's */
        uint64_t stream_token_ttl_usec; /* --stream-token-ttl (hidden, for tests); 0: 60 s */
} rkl_config;

/* Frees the strings and zeroes c. */
void rkl_config_done(rkl_config *c);
