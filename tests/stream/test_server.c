/* The streaming server's HTTP side, on loopback: what a URL serves, what everything else
 * gets, and the session limit. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "stream/stream.h"

/* Sends a request for path to the server; the status code it answers, its head at buf (of
 * 4096 bytes), and the connection (left open) in *ret_fd. */
static int send_request(const rkl_stream_server *s, const char *method, const char *path,
                        const char *extra, char *buf, int *ret_fd)
{
        struct sockaddr_in sa = {.sin_family = AF_INET};
        const char *addr = rkl_stream_server_address(s);
        unsigned port;
        char host[32];
        assert_int_equal(sscanf(addr, "%31[^:]:%u", host, &port), 2);
        sa.sin_port = htons((uint16_t)port);
        assert_int_equal(inet_pton(AF_INET, host, &sa.sin_addr), 1);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        int n = snprintf(buf, 4096, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n%s\r\n",
                         method, path, addr, extra);
        assert_int_equal(write(fd, buf, (size_t)n), n);
        size_t len = 0;
        while (!memmem(buf, len, "\r\n\r\n", 4)) {
                ssize_t k = read(fd, buf + len, 4096 - 1 - len);
                assert_true(k > 0);
                len += (size_t)k;
        }
        buf[len] = 0;
        int status = 0;
        assert_int_equal(sscanf(buf, "HTTP/1.1 %d", &status), 1);
        *ret_fd = fd;
        return status;
}

/* An upgrade request (POST, as kubelet's SPDY client sends it). */
static int request(const rkl_stream_server *s, const char *path, const char *extra, int *ret_fd)
{
        char buf[4096];
        int status = send_request(s, "POST", path, extra, buf, ret_fd);
        if (status == 101)
                assert_non_null(strstr(buf, "X-Stream-Protocol-Version: portforward.k8s.io"));
        return status;
}

/* The status once a session is free (one ends asynchronously after its client closed). */
static int request_free(const rkl_stream_server *s, const char *path, const char *extra,
                        int *ret_fd)
{
        int status = 503;
        for (int i = 0; i < 500 && status == 503; i++) {
                status = request(s, path, extra, ret_fd);
                if (status == 503) {
                        close(*ret_fd);
                        usleep(10000);
                }
        }
        return status;
}

#define UPGRADE                                                                                    \
        "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"                                             \
        "X-Stream-Protocol-Version: portforward.k8s.io\r\n"

static const char *path_of(const char *url)
{
        return strchr(url + strlen("http://"), '/');
}

static void test_server(void **state)
{
        rkl_stream_server *s = NULL;
        rkl_error err = RKL_ERROR_INIT;
        rkl_stream_config c = {.address = "127.0.0.1:0", .max_sessions = 1};
        char *u1 = NULL, *u2 = NULL, *u3 = NULL;
        int fd1, fd;

        assert_int_equal(rkl_stream_address_check("localhost:1", &err), -EINVAL);
        assert_int_equal(rkl_stream_server_new(&c, &s, &err), 0);
        assert_int_equal(strncmp(rkl_stream_server_address(s), "127.0.0.1:", 10), 0);
        assert_int_equal(rkl_stream_port_forward_url(s, getpid(), NULL, 0, &u1, &err), 0);
        assert_int_equal(rkl_stream_port_forward_url(s, getpid(), NULL, 0, &u2, &err), 0);
        assert_int_equal(rkl_stream_port_forward_url(s, getpid(), NULL, 0, &u3, &err), 0);
        assert_int_equal(rkl_stream_port_forward_url(s, 0x7ffffff0, NULL, 0, &u3, &err), -ESRCH);

        /* No upgrade, or no protocol in common: refused, the token kept. */
        assert_int_equal(request(s, path_of(u1), "", &fd), 400);
        close(fd);
        assert_int_equal(request(s, path_of(u1),
                                 "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                                 "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n",
                                 &fd),
                         403);
        close(fd);
        assert_int_equal(request(s, path_of(u1), UPGRADE, &fd1), 101);
        /* One session at a time here: the second waits for the first to end. */
        assert_int_equal(request(s, path_of(u2), UPGRADE, &fd), 503);
        close(fd);
        close(fd1);
        assert_int_equal(request_free(s, path_of(u2), UPGRADE, &fd), 101);
        close(fd);
        /* Spent, unknown, elsewhere (when a session is free: past the limit, all is 503). */
        assert_int_equal(request_free(s, path_of(u1), UPGRADE, &fd), 404);
        close(fd);
        assert_int_equal(
            request_free(s, "/portforward/0123456789abcdef0123456789abcdef", UPGRADE, &fd), 404);
        close(fd);
        assert_int_equal(request_free(s, "/metrics", UPGRADE, &fd), 404);
        close(fd);
        /* Freeing ends what is left (u3 unused). */
        rkl_stream_server_free(s);
        free(u1);
        free(u2);
        free(u3);
}

#define WS_UPGRADE                                                                                 \
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"               \
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"

/* The WebSocket handshake: what RFC 6455 4.2.1 asks, the protocols in the client's order, the
 * port-forward's ports; the refusals that keep the token and those that spend it. */
static void test_websocket_handshake(void **state)
{
        rkl_stream_server *s = NULL;
        rkl_error err = RKL_ERROR_INIT;
        rkl_stream_config c = {.address = "127.0.0.1:0"};
        const int32_t allowed[] = {80, 8080};
        char *url = NULL, buf[4096];
        int fd;

        assert_int_equal(rkl_stream_server_new(&c, &s, &err), 0);
        assert_int_equal(rkl_stream_port_forward_url(s, getpid(), allowed, 2, &url, &err), 0);
        const char *p = path_of(url);
        /* Refused before the token is looked at. */
        assert_int_equal(send_request(s, "POST", p, WS_UPGRADE, buf, &fd), 400);
        close(fd);
        assert_int_equal(send_request(s, "GET", p,
                                      "Connection: Upgrade\r\nUpgrade: websocket\r\n"
                                      "Sec-WebSocket-Version: 8\r\n"
                                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
                                      buf, &fd),
                         426);
        assert_non_null(strstr(buf, "Sec-WebSocket-Version: 13"));
        close(fd);
        assert_int_equal(send_request(s, "GET", p,
                                      "Connection: Upgrade\r\nUpgrade: websocket\r\n"
                                      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: abc\r\n",
                                      buf, &fd),
                         400);
        close(fd);
        assert_int_equal(send_request(s, "GET", p,
                                      WS_UPGRADE "Sec-WebSocket-Protocol: channel.k8s.io\r\n", buf,
                                      &fd),
                         403);
        close(fd);
        char path[128];
        snprintf(path, sizeof(path), "%s?port=0", p);
        assert_int_equal(send_request(s, "GET", path, WS_UPGRADE, buf, &fd), 400);
        close(fd);
        /* The client's first choice that is served; the ports from the query. */
        snprintf(path, sizeof(path), "%s?ports=8080", p);
        assert_int_equal(send_request(s, "GET", path,
                                      WS_UPGRADE
                                      "Sec-WebSocket-Protocol: x, v4.base64.channel.k8s.io"
                                      "\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n",
                                      buf, &fd),
                         101);
        assert_non_null(strstr(buf, "Upgrade: websocket"));
        assert_non_null(strstr(buf, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
        assert_non_null(strstr(buf, "Sec-WebSocket-Protocol: v4.base64.channel.k8s.io"));
        close(fd);
        free(url);
        /* A port the token does not allow: refused, and the token is spent. */
        assert_int_equal(rkl_stream_port_forward_url(s, getpid(), allowed, 2, &url, &err), 0);
        snprintf(path, sizeof(path), "%s?port=80,22", path_of(url));
        assert_int_equal(send_request(s, "GET", path, WS_UPGRADE, buf, &fd), 403);
        close(fd);
        assert_int_equal(send_request(s, "GET", path_of(url), WS_UPGRADE, buf, &fd), 404);
        close(fd);
        free(url);
        /* Without a protocol: the binary one, named in no header. A port-forward token for
         * any port needs the query to say which. */
        assert_int_equal(rkl_stream_port_forward_url(s, getpid(), NULL, 0, &url, &err), 0);
        assert_int_equal(send_request(s, "GET", path_of(url), WS_UPGRADE, buf, &fd), 400);
        assert_non_null(strstr(buf, "query parameter"));
        close(fd);
        free(url);
        assert_int_equal(rkl_stream_port_forward_url(s, getpid(), NULL, 0, &url, &err), 0);
        snprintf(path, sizeof(path), "%s?port=1", path_of(url));
        assert_int_equal(send_request(s, "GET", path, WS_UPGRADE, buf, &fd), 101);
        assert_null(strstr(buf, "Sec-WebSocket-Protocol"));
        close(fd);
        rkl_stream_server_free(s);
        free(url);
}

/* A connection to the server's port from this thread's network namespace: 0, or -errno. */
static int dial(const rkl_stream_server *s)
{
        unsigned port;
        assert_int_equal(sscanf(rkl_stream_server_address(s), "127.0.0.1:%u", &port), 1);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
        close(fd);
        return r;
}

/* --stream-netns: the daemon stays where it is, its streams are served in another namespace
 * (the throwaway node's daemon lives in its host's namespace; crictl runs on the machine). */
static void test_server_in_other_netns(void **state)
{
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t holder = fork();
        assert_true(holder >= 0);
        if (holder == 0) {
                char c = 0;
                if (unshare(CLONE_NEWNET) < 0 || system("ip link set lo up") != 0)
                        _exit(1);
                (void)!write(p[1], &c, 1);
                pause();
                _exit(0);
        }
        close(p[1]);
        char c;
        if (read(p[0], &c, 1) != 1) {
                waitpid(holder, NULL, 0);
                close(p[0]);
                skip(); /* no privilege for a network namespace here */
        }
        close(p[0]);
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)holder);

        rkl_stream_server *s = NULL;
        rkl_error err = RKL_ERROR_INIT;
        rkl_stream_config cfg = {.address = "127.0.0.1:0", .netns = path};
        assert_int_equal(rkl_stream_server_new(&cfg, &s, &err), 0);
        /* Not here; there. */
        assert_int_equal(dial(s), -ECONNREFUSED);
        int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        int other = open(path, O_RDONLY | O_CLOEXEC);
        assert_int_equal(setns(other, CLONE_NEWNET), 0);
        assert_int_equal(dial(s), 0);
        assert_int_equal(setns(self, CLONE_NEWNET), 0);
        close(self);
        close(other);
        rkl_stream_server_free(s);

        cfg.netns = "/nonexistent/ns";
        assert_int_equal(rkl_stream_server_new(&cfg, &s, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "/nonexistent/ns"));
        kill(holder, SIGKILL);
        waitpid(holder, NULL, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_server),
            cmocka_unit_test(test_websocket_handshake),
            cmocka_unit_test(test_server_in_other_netns),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
