/* Where calls come in: the unix socket at --listen, bound here (0660, the socket group's), or
 * the listening socket systemd passed (rktlet.socket), accepted on a thread of its own. */
#include "server-internal.h"

#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "base/alloc.h"
#include "base/config.h"
#include "base/log.h"
#include "base/time-util.h"
#include "base/banned.h"

static int socket_path_check(const char *path, rkl_error *reterr)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct stat st;

        if (strlen(path) >= sizeof(sa.sun_path))
                return rkl_error_set(reterr, -ENAMETOOLONG, "socket path '%s' is too long", path);
        if (path[0] != '/')
                return rkl_error_set(reterr, -EINVAL, "socket path '%s' is not absolute", path);
        if (lstat(path, &st) < 0) {
                if (errno == ENOENT)
                        return 0;
                return rkl_error_set(reterr, -errno, "socket path '%s': %s", path, strerror(errno));
        }
        if (!S_ISSOCK(st.st_mode))
                return rkl_error_set(reterr, -EEXIST, "'%s' exists and is not a socket", path);

        /* A socket someone still listens on belongs to a running daemon: never steal it.
         * But a daemon that was just killed keeps answering until the kernel has torn it
         * down (its memory goes before its files), which a restart right after a crash
         * meets: give it a few seconds to go. */
        memcpy(sa.sun_path, path, strlen(path) + 1);
        for (int tries = 0;; tries++) {
                _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return rkl_error_set(reterr, -errno, "socket: %s", strerror(errno));
                if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                        return 0; /* stale: grpc unlinks it */
                if (tries == 50)
                        return rkl_error_set(reterr, -EADDRINUSE,
                                             "another process is listening on '%s'", path);
                usleep(100 * USEC_PER_MSEC);
        }
}

/* Socket activation. grpc core 1.51 cannot listen on a socket it did not bind: its
 * add_http2_port takes only an address, and binding the path again would replace the
 * socket systemd listens on (and lose the connection that activated us). What it can take
 * is a connected fd (grpc_server_add_channel_from_fd, grpc/grpc_posix.h): so this thread
 * accepts on the inherited socket and hands each connection to grpc, which owns it from
 * then on and serves it on the workers' queues like any other. The socket itself stays
 * systemd's: it is never closed, unlinked or chmod'ed here, and connections made while
 * rktlet is down queue in its backlog. */
static void *accept_main(void *userdata)
{
        rkl_api_server *s = userdata;
        struct pollfd p[2] = {{.fd = s->listen_fd, .events = POLLIN},
                              {.fd = s->accept_stop_fd, .events = POLLIN}};

        for (;;) {
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        rkl_log_error_errno(errno, "poll on the activated socket: %m");
                        return NULL;
                }
                if (p[1].revents)
                        return NULL;
                /* grpc's endpoints expect non-blocking sockets. */
                int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) {
                        if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                                continue;
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                            errno == ENOMEM) {
                                rkl_log_warning_errno(errno, "accept: %m, retrying in 100 ms");
                                usleep(100 * USEC_PER_MSEC);
                                continue;
                        }
                        rkl_log_error_errno(errno, "accept on the activated socket: %m");
                        return NULL;
                }
                grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
                grpc_server_add_channel_from_fd(s->server, fd, creds);
                grpc_server_credentials_release(creds);
        }
}

int rkl_api__socket_check(const rkl_config *o, rkl_error *reterr)
{
        return o->listen_fd > 0 ? 0 : socket_path_check(o->listen_path, reterr);
}

int rkl_api__listen(rkl_api_server *s, rkl_error *reterr)
{
        const rkl_config *o = s->cfg->config;

        if (s->listen_fd > 0) {
                /* systemd made the socket, its mode and group (rktlet.socket): take it as
                 * it is. The accept thread starts with the server. */
                s->accept_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                if (s->accept_stop_fd < 0)
                        return rkl_error_set(reterr, -errno, "eventfd: %s", strerror(errno));
                s->listening = true;
                return 0;
        }

        _cleanup_free_ char *addr = rkl_xasprintf("unix:%s", o->listen_path);
        grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
        int port = grpc_server_add_http2_port(s->server, addr, creds);
        grpc_server_credentials_release(creds);
        if (port == 0)
                return rkl_error_set(reterr, -EADDRNOTAVAIL, "cannot listen on '%s'",
                                     o->listen_path);
        /* From here on, grpc requires a shutdown before destroy. */
        s->listening = true;

        /* The umask made it 0600 at bind time; widen to 0660 for the configured group. */
        if (o->socket_gid != (gid_t)-1 && chown(o->listen_path, (uid_t)-1, o->socket_gid) < 0)
                return rkl_error_set(reterr, -errno, "chown '%s': %s", o->listen_path,
                                     strerror(errno));
        if (chmod(o->listen_path, 0660) < 0)
                return rkl_error_set(reterr, -errno, "chmod '%s': %s", o->listen_path,
                                     strerror(errno));

        return 0;
}

int rkl_api__accept_start(rkl_api_server *s, rkl_error *reterr)
{
        if (s->listen_fd <= 0)
                return 0;
        int r = pthread_create(&s->accept_thread, NULL, accept_main, s);
        if (r != 0)
                return rkl_error_set(reterr, -r, "cannot start the accept thread: %s", strerror(r));
        (void)pthread_setname_np(s->accept_thread, "api-accept");
        s->accepting = true;
        return 0;
}

void rkl_api__accept_stop(rkl_api_server *s)
{
        if (!s->accepting)
                return;
        uint64_t one = 1;
        (void)!write(s->accept_stop_fd, &one, sizeof(one));
        pthread_join(s->accept_thread, NULL);
        s->accepting = false;
}
