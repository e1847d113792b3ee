/* The streaming server: Exec, Attach and PortForward answer with a URL on it, and kubelet
 * (or crictl) connects there, upgrades to SPDY/3.1 or to a WebSocket and speaks the channel
 * protocols of k8s.io/client-go's remotecommand and portforward (docs/streaming.md).
 *
 * A URL carries a single-use token of 128 random bits, bound to what it was made for and
 * good for a minute. The HTTP side runs in libmicrohttpd's thread; each upgraded connection
 * gets a thread of its own, so neither a slow client nor a long command holds a CRI call. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/macro.h"

typedef struct rkl_stream_config {
        const char *address;        /* "IPV4:PORT", port 0: any free one */
        uint64_t token_ttl_usec;    /* 0: 60 s */
        unsigned max_tokens;        /* outstanding URLs; 0: 256 */
        unsigned max_sessions;      /* connections at once; 0: 64 */
        uint64_t idle_timeout_usec; /* a session with no traffic ends; 0: 4 h (kubelet's) */
        const char *exec_helper;    /* the rktlet binary; NULL: /proc/self/exe */
        /* A network namespace (its path) to listen in instead of the daemon's: for a daemon
         * in a namespace of its own whose clients are elsewhere. NULL: the daemon's. */
        const char *netns;
} rkl_stream_config;

typedef struct rkl_stream_server rkl_stream_server;

/* -EINVAL with a message when value is no "IPV4:PORT". */
int rkl_stream_address_check(const char *value, rkl_error *reterr);

/* Binds and starts serving. */
int rkl_stream_server_new(const rkl_stream_config *c, rkl_stream_server **ret, rkl_error *reterr);
/* Stops accepting, ends every session (commands it started are killed) and waits for them. */
rkl_stream_server *rkl_stream_server_free(rkl_stream_server *s);
RKL_DEFINE_CLEANUP(rkl_stream_server *, rkl_stream_server_free)

/* "IPV4:PORT" as bound (the port chosen when 0 was asked). */
const char *rkl_stream_server_address(const rkl_stream_server *s);

typedef struct rkl_stream_exec {
        pid_t pid;           /* the container's main process */
        char *const *argv;   /* Exec: the command; Attach: NULL */
        const char *seccomp; /* Exec: the app's filter (rkl_exec_opts.seccomp); NULL: none */
        /* Attach: the app's iottymux directory (rkt's sock-stdin, sock-stdout, sock-stderr,
         * or sock-tty, which any number of clients may use beside the log) */
        const char *attach_dir;
        bool tty, stdin, stdout, stderr;
        bool stdin_once; /* Attach: the attach ends with the client's input */
} rkl_stream_exec;

/* A URL for one Exec or Attach. -EMFILE when too many URLs are outstanding. */
int rkl_stream_exec_url(rkl_stream_server *s, const rkl_stream_exec *e, char **ret_url,
                        rkl_error *reterr);
/* A URL for one PortForward into the network namespace of process pid; ports (n_ports may
 * be 0: any) are the only ones it may reach. -ESRCH when the process is gone, -EMFILE. */
int rkl_stream_port_forward_url(rkl_stream_server *s, pid_t pid, const int32_t *ports,
                                size_t n_ports, char **ret_url, rkl_error *reterr);
