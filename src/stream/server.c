/* The HTTP side: libmicrohttpd parses the request and does the upgrade in its thread; the
 * path names the kind and the token, the token is spent, and the upgraded socket goes to a
 * session thread of its own. Anything else is refused without a word about why a token was
 * not good: 404 for any path or token that serves nothing, 400 for a request that is no
 * upgrade to SPDY/3.1 or a WebSocket handshake (RFC 6455 4.2.1) that is not whole, 426 for
 * a WebSocket version other than 13, 403 when no protocol fits, 503 past the session
 * limit. All of these but 404 are told before the token is looked at, so they do not spend
 * it; a WebSocket port-forward naming a port its token does not allow is refused (403)
 * after. */
#include "stream-internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "websocket.h"
#include "base/banned.h"

#define DEFAULT_TTL_USEC  (60 * USEC_PER_SEC)
#define DEFAULT_TOKENS    256
#define DEFAULT_SESSIONS  64
#define DEFAULT_IDLE_USEC (4 * 3600 * USEC_PER_SEC)
#define MAX_OFFERED       16
#define MAX_WS_PORTS      128 /* two channels each, numbered by a byte */
#define PROTOCOL_HEADER   "X-Stream-Protocol-Version"
#define WS_PROTOCOL       "Sec-WebSocket-Protocol"

struct rkl_stream_server {
        struct MHD_Daemon *mhd;
        char address[32];
        rkl_stream_tokens *tokens;
        unsigned max_sessions;
        pthread_mutex_t lock;
        pthread_cond_t idle;
        unsigned n_sessions; /* reserved or running */
        atomic_bool stopping;
        rkl_stream_limits limits;
        char *helper;
};

/* What the upgrade hands to the session thread. */
typedef struct upgrade {
        rkl_stream_server *server;
        rkl_stream_request *req;
        rkl_stream_proto proto;
        int fd;
        uint8_t *in;
        size_t in_len;
        struct MHD_UpgradeResponseHandle *urh;
} upgrade;

int rkl_stream_address_check(const char *value, rkl_error *reterr)
{
        struct sockaddr_in sa;
        if (rkl_ipv4_port_parse(value, true, &sa) < 0)
                return rkl_error_set(reterr, -EINVAL,
                                     "stream address '%s' is not IPV4:PORT, e.g. 127.0.0.1:0",
                                     value);
        return 0;
}

const char *rkl_stream_server_address(const rkl_stream_server *s)
{
        return s->address;
}

static void session_release(rkl_stream_server *s)
{
        RKL_GUARD(&s->lock);
        if (--s->n_sessions == 0)
                pthread_cond_broadcast(&s->idle);
}

static void *session_main(void *userdata)
{
        upgrade *u = userdata;
        rkl_stream_server *s = u->server;
        rkl_stream__session_run(u->fd, u->in, u->in_len, u->proto, u->req, &s->limits);
        (void)MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
        free(u->in);
        free(u);
        session_release(s);
        return NULL;
}

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in,
                       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
        upgrade *u = cls;
        rkl_stream_server *s = u->server;
        pthread_attr_t attr;
        pthread_t t;
        (void)conn, (void)con_cls;

        u->fd = sock;
        u->urh = urh;
        if (extra_in_size > 0) {
                u->in = rkl_xmalloc(extra_in_size);
                memcpy(u->in, extra_in, extra_in_size);
                u->in_len = extra_in_size;
        }
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int k = pthread_create(&t, &attr, session_main, u);
        pthread_attr_destroy(&attr);
        if (k != 0) {
                rkl_log_error("stream: cannot start a session thread: %s", strerror(k));
                (void)MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
                rkl_stream__request_free(u->req);
                free(u->in);
                free(u);
                session_release(s);
        }
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *msg)
{
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_PERSISTENT);
        if (!resp)
                return MHD_NO;
        (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
        if (status == MHD_HTTP_UPGRADE_REQUIRED) /* what it would take (RFC 6455 4.4) */
                (void)MHD_add_response_header(resp, "Sec-WebSocket-Version", "13");
        enum MHD_Result r = MHD_queue_response(conn, status, resp);
        MHD_destroy_response(resp);
        return r;
}

typedef struct offered {
        const char *header;
        char *v[MAX_OFFERED];
        size_t n;
} offered;

/* Every value of o->header, also comma-separated ones. */
static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
        offered *o = cls;
        (void)kind;
        if (!key || !value || strcasecmp(key, o->header) != 0)
                return MHD_YES;
        for (const char *p = value; *p && o->n < MAX_OFFERED;) {
                p += strspn(p, " \t,");
                size_t n = strcspn(p, " \t,");
                if (n > 0)
                        o->v[o->n++] = rkl_xstrndup(p, n);
                p += n;
        }
        return MHD_YES;
}

static bool header_has(struct MHD_Connection *conn, const char *name, const char *word)
{
        const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
        size_t n = strlen(word);
        for (const char *p = v; p && *p;) {
                p += strspn(p, " \t,");
                size_t k = strcspn(p, " \t,");
                if (k == n && strncasecmp(p, word, n) == 0)
                        return true;
                p += k;
        }
        return false;
}

static bool reserve(rkl_stream_server *s)
{
        RKL_GUARD(&s->lock);
        if (atomic_load(&s->stopping) || s->n_sessions >= s->max_sessions)
                return false;
        s->n_sessions++;
        return true;
}

/* The protocols offered in header, and the one chosen of them. */
static rkl_stream_proto choose(struct MHD_Connection *conn, rkl_stream_kind kind, bool ws,
                               bool *ret_offered)
{
        offered o = {.header = ws ? WS_PROTOCOL : PROTOCOL_HEADER};
        (void)MHD_get_connection_values(conn, MHD_HEADER_KIND, collect, &o);
        rkl_stream_proto p = ws ? rkl_stream__proto_choose_ws(kind, (const char *const *)o.v, o.n)
                                : rkl_stream__proto_choose(kind, (const char *const *)o.v, o.n);
        for (size_t i = 0; i < o.n; i++)
                free(o.v[i]);
        *ret_offered = o.n > 0;
        return p;
}

typedef struct query_ports {
        int32_t v[MAX_WS_PORTS];
        size_t n;
        bool bad;
} query_ports;

/* The port-forward's ports from the query: kubelet's library reads `port` (as kubelet's own
 * URLs name it); the API server's pod URL says `ports`. Each may be a comma-separated list
 * and be repeated. */
static enum MHD_Result collect_ports(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
        query_ports *p = cls;
        (void)kind;
        if (!key || (!streq(key, "port") && !streq(key, "ports")))
                return MHD_YES;
        if (!value || !*value) {
                p->bad = true;
                return MHD_YES;
        }
        for (const char *v = value; !p->bad;) {
                char num[8];
                unsigned port;
                size_t k = strcspn(v, ",");
                if (k == 0 || k >= sizeof(num) || p->n >= MAX_WS_PORTS) {
                        p->bad = true;
                        break;
                }
                memcpy(num, v, k);
                num[k] = 0;
                if (rkl_safe_atou(num, &port) < 0 || port == 0 || port > RKL_MAX_PORT)
                        p->bad = true;
                else
                        p->v[p->n++] = (int32_t)port;
                if (!v[k])
                        break;
                v += k + 1;
        }
        return MHD_YES;
}

/* A WebSocket port-forward forwards the query's ports, which the token must allow, or else
 * the token's (the URL kubelet proxies to carries no query). 0, or the status to refuse it
 * with and *why. */
static unsigned ws_ports(rkl_stream_request *req, const query_ports *q, const char **why)
{
        for (size_t i = 0; i < q->n; i++) {
                bool allowed = req->n_ports == 0;
                for (size_t j = 0; j < req->n_ports; j++)
                        allowed = allowed || req->ports[j] == q->v[i];
                if (!allowed) {
                        *why = "forbidden: a port the request did not name\n";
                        return MHD_HTTP_FORBIDDEN;
                }
        }
        if (q->n > 0) {
                free(req->ports);
                req->ports = rkl_xnew(int32_t, q->n);
                memcpy(req->ports, q->v, q->n * sizeof(*req->ports));
                req->n_ports = q->n;
        }
        if (req->n_ports == 0 || req->n_ports > MAX_WS_PORTS) {
                *why = req->n_ports ? "bad request: too many ports\n"
                                    : "bad request: query parameter \"port\" is required\n";
                return MHD_HTTP_BAD_REQUEST;
        }
        return 0;
}

/* What the 101 says besides the status. */
typedef struct answer {
        const char *upgrade;
        const char *protocol_header, *protocol; /* protocol NULL: none named */
        char accept[RKL_WS_ACCEPT_LEN + 1];
} answer;

/* A WebSocket handshake's checks (RFC 6455 4.2.1): 0, or the status to refuse it with and
 * *why. */
static unsigned ws_check(struct MHD_Connection *conn, const char *method, answer *a,
                         const char **why)
{
        const char *version =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-WebSocket-Version");
        const char *key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-WebSocket-Key");
        if (!streq(method, "GET")) {
                *why = "bad request: a WebSocket handshake is a GET\n";
                return MHD_HTTP_BAD_REQUEST;
        }
        if (!version || !streq(version, "13")) {
                *why = "upgrade required: only WebSocket version 13 is served here\n";
                return MHD_HTTP_UPGRADE_REQUIRED;
        }
        if (!key || !rkl_ws_key_valid(key, strlen(key))) {
                *why = "bad request: Sec-WebSocket-Key is not the base64 of 16 bytes\n";
                return MHD_HTTP_BAD_REQUEST;
        }
        rkl_ws_accept(key, strlen(key), a->accept);
        a->upgrade = "websocket";
        a->protocol_header = WS_PROTOCOL;
        return 0;
}

static enum MHD_Result handle(rkl_stream_server *s, struct MHD_Connection *conn, const char *url,
                              const char *method)
{
        static const char not_found[] = "not found\n";
        answer a = {.upgrade = "SPDY/3.1", .protocol_header = PROTOCOL_HEADER};
        query_ports q = {0};
        const char *why = NULL;
        /* "/KIND/TOKEN", nothing else. */
        if (url[0] != '/')
                return reply(conn, MHD_HTTP_NOT_FOUND, not_found);
        const char *slash = strchr(url + 1, '/');
        if (!slash || strchr(slash + 1, '/'))
                return reply(conn, MHD_HTTP_NOT_FOUND, not_found);
        rkl_stream_kind kind = rkl_stream__kind_from_name(url + 1, (size_t)(slash - url - 1));
        if (kind < 0)
                return reply(conn, MHD_HTTP_NOT_FOUND, not_found);
        bool ws = header_has(conn, "Upgrade", "websocket");
        if (!header_has(conn, "Connection", "upgrade") ||
            (!ws && !header_has(conn, "Upgrade", "SPDY/3.1")))
                return reply(conn, MHD_HTTP_BAD_REQUEST,
                             "bad request: only an upgrade to SPDY/3.1 or to websocket is "
                             "served here\n");
        unsigned status = ws ? ws_check(conn, method, &a, &why) : 0;
        if (status)
                return reply(conn, status, why);
        bool named;
        rkl_stream_proto proto = choose(conn, kind, ws, &named);
        if (proto < 0)
                return reply(conn, MHD_HTTP_FORBIDDEN,
                             ws ? "none of the offered " WS_PROTOCOL " values is served\n"
                                : "none of the offered " PROTOCOL_HEADER " values is served\n");
        a.protocol = !ws || named ? rkl_stream__proto_name(proto) : NULL;
        if (ws && kind == RKL_STREAM_PORT_FORWARD) {
                (void)MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_ports, &q);
                if (q.bad)
                        return reply(conn, MHD_HTTP_BAD_REQUEST,
                                     "bad request: a port that is not 1 to 65535\n");
        }
        if (!reserve(s))
                return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                             "too many streaming sessions: try again later\n");
        const char *token = slash + 1;
        rkl_stream_request *req = rkl_stream__tokens_take(s->tokens, kind, token, strlen(token),
                                                          rkl_now_usec(CLOCK_MONOTONIC));
        if (!req) {
                session_release(s);
                return reply(conn, MHD_HTTP_NOT_FOUND, not_found);
        }
        if (ws && kind == RKL_STREAM_PORT_FORWARD && (status = ws_ports(req, &q, &why))) {
                rkl_stream__request_free(req);
                session_release(s);
                return reply(conn, status, why);
        }
        upgrade *u = rkl_xnew0(upgrade, 1);
        *u = (upgrade){.server = s, .req = req, .proto = proto, .fd = -1};
        struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade, u);
        if (!resp) {
                rkl_stream__request_free(req);
                free(u);
                session_release(s);
                return MHD_NO;
        }
        (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, a.upgrade);
        if (a.protocol)
                (void)MHD_add_response_header(resp, a.protocol_header, a.protocol);
        if (ws)
                (void)MHD_add_response_header(resp, "Sec-WebSocket-Accept", a.accept);
        enum MHD_Result r = MHD_queue_response(conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
        MHD_destroy_response(resp);
        if (r != MHD_YES) {
                /* on_upgrade never runs: what it would have owned goes here. */
                rkl_stream__request_free(req);
                free(u);
                session_release(s);
        }
        return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
        static int seen;
        (void)version, (void)upload_data;
        /* The first call has the headers only: a body, if any, is read and dropped. */
        if (!*con_cls) {
                *con_cls = &seen;
                return MHD_YES;
        }
        if (*upload_data_size > 0) {
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (!streq(method, "GET") && !streq(method, "POST"))
                return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and POST\n");
        return handle(cls, conn, url, method);
}

typedef struct listen_args {
        const char *netns;
        struct sockaddr_in sa;
        int fd; /* the socket, or -errno */
        const char *step;
} listen_args;

/* On a thread of its own: setns() moves only the calling thread, and a socket stays in the
 * namespace it was made in. */
static void *listen_in_netns(void *userdata)
{
        listen_args *a = userdata;
        _cleanup_close_ int ns = open(a->netns, O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int fd = -EBADF;
        int one = 1;
        a->fd = -EIO;
        if (ns < 0) {
                a->fd = -errno, a->step = "open";
        } else if (setns(ns, CLONE_NEWNET) < 0) {
                a->fd = -errno, a->step = "setns";
        } else if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
                a->fd = -errno, a->step = "socket";
        } else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
                   bind(fd, (struct sockaddr *)&a->sa, sizeof(a->sa)) < 0) {
                a->fd = -errno, a->step = "bind";
        } else if (listen(fd, 64) < 0) {
                a->fd = -errno, a->step = "listen";
        } else {
                a->fd = TAKE_FD(fd);
        }
        return NULL;
}

static int listen_socket(const char *netns, const struct sockaddr_in *sa, rkl_error *reterr)
{
        listen_args a = {.netns = netns, .sa = *sa};
        pthread_t t;
        int k = pthread_create(&t, NULL, listen_in_netns, &a);
        if (k != 0)
                return rkl_error_set(reterr, -k, "cannot start a thread: %s", strerror(k));
        pthread_join(t, NULL);
        if (a.fd < 0)
                return rkl_error_set(reterr, a.fd,
                                     "cannot listen in the network namespace '%s' "
                                     "(%s): %s",
                                     netns, a.step, strerror(-a.fd));
        return a.fd;
}

int rkl_stream_server_new(const rkl_stream_config *c, rkl_stream_server **ret, rkl_error *reterr)
{
        struct sockaddr_in sa;
        int r = rkl_ipv4_port_parse(c->address, true, &sa);
        if (r < 0)
                return rkl_stream_address_check(c->address, reterr);

        rkl_stream_server *s = rkl_xnew0(rkl_stream_server, 1);
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->idle, NULL);
        s->tokens = rkl_stream__tokens_new(c->max_tokens ?: DEFAULT_TOKENS,
                                           c->token_ttl_usec ?: DEFAULT_TTL_USEC);
        s->max_sessions = c->max_sessions ?: DEFAULT_SESSIONS;
        s->helper = rkl_xstrdup(c->exec_helper);
        s->limits = (rkl_stream_limits){
            .idle_timeout_usec = c->idle_timeout_usec ?: DEFAULT_IDLE_USEC,
            .exec_helper = s->helper,
            .stopping = &s->stopping,
            .stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
        };
        if (s->limits.stop_fd < 0) {
                r = rkl_error_set(reterr, -errno, "eventfd: %s", strerror(errno));
                rkl_stream_server_free(s);
                return r;
        }
        int listen_fd = -1;
        if (c->netns && (listen_fd = listen_socket(c->netns, &sa, reterr)) < 0) {
                rkl_stream_server_free(s);
                return listen_fd;
        }
        /* libmicrohttpd takes a given socket over (and closes it) once it started. */
        const unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_UPGRADE;
        if (listen_fd >= 0)
                s->mhd = MHD_start_daemon(
                    flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET,
                    (MHD_socket)listen_fd, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                    MHD_OPTION_CONNECTION_LIMIT, (unsigned)(2 * s->max_sessions), MHD_OPTION_END);
        else
                s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                                          &sa, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                          MHD_OPTION_CONNECTION_LIMIT,
                                          (unsigned)(2 * s->max_sessions), MHD_OPTION_END);
        if (!s->mhd) {
                safe_close(listen_fd);
                r = errno ? -errno : -EADDRNOTAVAIL;
                rkl_error_set(reterr, r, "cannot serve streams on '%s': %s", c->address,
                              strerror(-r));
                rkl_stream_server_free(s);
                return r;
        }
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_LISTEN_FD);
        socklen_t len = sizeof(sa);
        if (!info || getsockname(info->listen_fd, (struct sockaddr *)&sa, &len) < 0) {
                r = rkl_error_set(reterr, -EIO, "cannot tell the stream server's port");
                rkl_stream_server_free(s);
                return r;
        }
        char host[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
        snprintf(s->address, sizeof(s->address), "%s:%u", host, (unsigned)ntohs(sa.sin_port));
        *ret = s;
        return 0;
}

rkl_stream_server *rkl_stream_server_free(rkl_stream_server *s)
{
        if (!s)
                return NULL;
        {
                RKL_GUARD(&s->lock);
                atomic_store(&s->stopping, true);
        }
        if (s->limits.stop_fd >= 0) {
                uint64_t one = 1;
                (void)!write(s->limits.stop_fd, &one, sizeof(one));
        }
        pthread_mutex_lock(&s->lock);
        while (s->n_sessions > 0)
                pthread_cond_wait(&s->idle, &s->lock);
        pthread_mutex_unlock(&s->lock);
        if (s->mhd)
                MHD_stop_daemon(s->mhd);
        safe_close(s->limits.stop_fd);
        rkl_stream__tokens_free(s->tokens);
        pthread_cond_destroy(&s->idle);
        pthread_mutex_destroy(&s->lock);
        free(s->helper);
        free(s);
        return NULL;
}

static int issue(rkl_stream_server *s, rkl_stream_request *req, char **ret_url, rkl_error *reterr)
{
        char token[RKL_STREAM__TOKEN_LEN + 1];
        const char *kind = rkl_stream__kind_name(req->kind);
        int r = rkl_stream__tokens_add(s->tokens, req, rkl_now_usec(CLOCK_MONOTONIC), token);
        if (r == -EMFILE) {
                rkl_stream__request_free(req);
                return rkl_error_set(reterr, r,
                                     "too many %s URLs outstanding (%zu): try again later", kind,
                                     rkl_stream__tokens_count(s->tokens));
        }
        if (r < 0) {
                rkl_stream__request_free(req);
                return rkl_error_set(reterr, r, "cannot make a token: %s", strerror(-r));
        }
        *ret_url = rkl_xasprintf("http://%s/%s/%s", s->address, kind, token);
        return 0;
}

int rkl_stream_exec_url(rkl_stream_server *s, const rkl_stream_exec *e, char **ret_url,
                        rkl_error *reterr)
{
        rkl_stream_request *req = rkl_xnew0(rkl_stream_request, 1);
        *req = (rkl_stream_request){
            .kind = e->argv ? RKL_STREAM_EXEC : RKL_STREAM_ATTACH,
            .pid = e->pid,
            .tty = e->tty,
            .stdin = e->stdin,
            .stdout = e->stdout,
            .stderr = e->stderr,
            .stdin_once = e->stdin_once,
            .netns_fd = -1,
            .attach_dir = rkl_xstrdup(e->attach_dir),
            .seccomp = rkl_xstrdup(e->seccomp),
        };
        RKL_STRV_FOREACH (a, e->argv)
                rkl_strv_push(&req->argv, *a);
        return issue(s, req, ret_url, reterr);
}

int rkl_stream_port_forward_url(rkl_stream_server *s, pid_t pid, const int32_t *ports,
                                size_t n_ports, char **ret_url, rkl_error *reterr)
{
        _cleanup_free_ char *path = rkl_xasprintf("/proc/%d/ns/net", (int)pid);
        /* Opened now: the namespace stays the pod's even if the PID is reused. */
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return rkl_error_set(reterr, errno == ENOENT ? -ESRCH : -errno,
                                     "cannot open '%s': %s", path, strerror(errno));
        rkl_stream_request *req = rkl_xnew0(rkl_stream_request, 1);
        *req = (rkl_stream_request){.kind = RKL_STREAM_PORT_FORWARD, .pid = pid, .netns_fd = fd};
        if (n_ports > 0) {
                req->ports = rkl_xnew(int32_t, n_ports);
                memcpy(req->ports, ports, n_ports * sizeof(*ports));
                req->n_ports = n_ports;
        }
        return issue(s, req, ret_url, reterr);
}
