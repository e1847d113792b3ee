"""Exec, Attach and PortForward over WebSocket (RFC 6455), end to end through the real daemon:
on the simulator, and on the real rkt 1.30.0 (stage1 host) in a private systemd host (skips,
saying why, when rkt cannot be built here). The client is our own (wsclient.py), speaking the
channel protocols of kubelet's library (wsstream) as client-go and the e2e suite do:
v5.channel.k8s.io (the close message), v4.channel.k8s.io (the exit status as a JSON Status),
the base64 ones, channel.k8s.io (the status as text), and port-forward's v4.channel.k8s.io
(the port on each channel first). Attach needs rkt's iottymux: the real rkt only. And
through the real kubelet (standalone), as a client that reaches kubelet directly: kubelet
proxies the WebSocket request to rktlet as it came."""
import json
import os
import socket
import ssl
import threading
import time
import unittest

import harness
import kubelet
import spdyclient
import wsclient
from wsclient import ERROR, STDERR, STDIN, STDOUT

pb, pbg = harness.stubs()

BUSYBOX = "docker.io/library/busybox:latest"


def listen_in(netns, port):
    """A listening socket on 127.0.0.1:port made in the network namespace netns (a path)."""

    def listen():
        s = socket.socket()
        s.bind(("127.0.0.1", port))
        s.listen(8)
        return s
    return spdyclient.in_netns(netns, listen)


HTTPD = ["sh", "-c", "mkdir -p /www && echo hello-ws > /www/index.html && "
         "exec busybox httpd -f -p 127.0.0.1:8080 -h /www"]


class WebSocketCases:
    """The checks, for a subclass that sets up self.env, self.rs and self.netns (where the
    daemon's stream address is reachable)."""

    def sandbox_config(self, name):
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="e2e"),
            hostname=name, log_directory=os.path.join(self.env.dir, "logs", name))

    def run_pod(self, name, command, **kw):
        cfg = self.sandbox_config(name)
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=10).pod_sandbox_id
        harness.wait_sandbox_running(self.rs, sid, name)
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                image=pb.ImageSpec(image=BUSYBOX), command=command,
                                log_path=name + ".log", **kw)
        cid = self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10).container_id
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
        harness.wait_for("container %s running" % name, lambda: self.rs.ContainerStatus(
            pb.ContainerStatusRequest(container_id=cid), timeout=10).status.state ==
            pb.CONTAINER_RUNNING, timeout=60)
        return sid, cid

    def client(self, url, **kw):
        c = wsclient.Client(url, self.netns, **kw)
        self.addCleanup(c.close)
        return c

    def exec_url(self, cid, cmd, **kw):
        kw.setdefault("stdout", True)
        return self.rs.Exec(pb.ExecRequest(container_id=cid, cmd=cmd, **kw), timeout=10).url

    def exec_ws(self, cid, cmd, protocols, **kw):
        """An exec over WebSocket to its end: (client, {channel: bytes}, messages in order)."""
        c = self.client(self.exec_url(cid, cmd, **kw), protocols=protocols)
        self.assertEqual(c.status, 101, c.headers)
        out = c.until_closed()
        self.assertEqual(c.closed[0], 1000)
        return c, out

    def test_exec(self):
        _, cid = self.run_pod("ws", ["sleep", "3600"])
        cmd = ["sh", "-c", "echo out; echo err >&2; exit 3"]
        # v4: stdout and stderr apart, the exit status as a JSON Status.
        c, out = self.exec_ws(cid, cmd, ["v4.channel.k8s.io"], stderr=True)
        self.assertEqual(c.headers["sec-websocket-accept"], wsclient.accept_for(c.key))
        self.assertEqual(c.protocol, "v4.channel.k8s.io")
        # The first message: stdout's, empty (kubelet's library sends it; clients wait).
        self.assertEqual(c.frames[0], (STDOUT, b""))
        self.assertEqual((out[STDOUT], out[STDERR]), (b"out\n", b"err\n"))
        status = json.loads(out[ERROR])
        self.assertEqual((status["status"], status["reason"]), ("Failure", "NonZeroExitCode"))
        self.assertEqual(status["details"]["causes"], [{"reason": "ExitCode", "message": "3"}])
        # The client's first choice that is served: here base64, with a text status.
        c, out = self.exec_ws(cid, ["sh", "-c", "echo b64; exit 4"],
                              ["v9.channel.k8s.io", "base64.channel.k8s.io", "channel.k8s.io"],
                              stderr=True)
        self.assertEqual(c.protocol, "base64.channel.k8s.io")
        self.assertEqual(out[STDOUT], b"b64\n")
        self.assertIn(b"exit code: 4", out[ERROR])
        c, out = self.exec_ws(cid, ["true"], ["v4.base64.channel.k8s.io"])
        self.assertEqual(json.loads(out[ERROR])["status"], "Success")
        # channel.k8s.io, as the e2e suite's spec asks: a success says nothing.
        c, out = self.exec_ws(cid, ["echo", "remote execution test"], ["channel.k8s.io"],
                              stderr=True)
        self.assertEqual(out[STDOUT], b"remote execution test\n")
        self.assertEqual(out.get(ERROR, b""), b"")
        self.assertEqual([m for m in c.frames if m[0] != STDOUT], [])
        # No protocol named: channel.k8s.io, and none in the answer.
        c, out = self.exec_ws(cid, ["echo", "plain"], [])
        self.assertNotIn("sec-websocket-protocol", c.headers)
        self.assertEqual(out[STDOUT], b"plain\n")
        # A megabyte, in order.
        c, out = self.exec_ws(cid, ["sh", "-c", "seq 1 150000"], ["v4.channel.k8s.io"])
        self.assertEqual(out[STDOUT], "".join("%d\n" % i for i in range(1, 150001)).encode())

    def test_exec_stdin(self):
        _, cid = self.run_pod("wsin", ["sleep", "3600"])
        # v5: the client ends its stdin with the close message.
        url = self.exec_url(cid, ["sh", "-c", "tr a-z A-Z; echo done"], stdin=True)
        c = self.client(url, protocols=["v5.channel.k8s.io", "v4.channel.k8s.io"])
        self.assertEqual(c.protocol, "v5.channel.k8s.io")
        c.frame(wsclient.PING, b"are you there")
        c.send(STDIN, b"hello ")
        # Fragmented, with a ping between the fragments.
        c.frame(wsclient.BINARY, bytes([STDIN]) + b"wor", fin=False)
        c.frame(wsclient.PING, b"p2")
        c.frame(wsclient.CONT, b"ld\n")
        c.close_channel(STDIN)
        out = c.until_closed()
        self.assertEqual(out[STDOUT], b"HELLO WORLD\ndone\n")
        self.assertEqual(json.loads(out[ERROR])["status"], "Success")
        self.assertEqual(c.pongs, [b"are you there", b"p2"])
        # base64 stdin: decoded whatever the fragments' bounds.
        url = self.exec_url(cid, ["sh", "-c", "head -c 11 | tr a-z A-Z"], stdin=True)
        c = self.client(url, protocols=["v4.base64.channel.k8s.io"])
        c.frame(wsclient.TEXT, b"0aGVsb", fin=False)
        c.frame(wsclient.CONT, b"G8gd29ybGQ=")
        self.assertEqual(c.until_closed()[STDOUT], b"HELLO WORLD")
        # v4 has no close message: the client's close frame ends it, answered, and the
        # command is killed.
        url = self.exec_url(cid, ["sh", "-c", "cat; echo never"], stdin=True)
        c = self.client(url, protocols=["v4.channel.k8s.io"])
        c.send(STDIN, b"echoed\n")
        c.until(lambda out: out.get(STDOUT) == b"echoed\n")
        c.frame(wsclient.CLOSE, b"\x03\xe8")
        self.assertIsNone(c.read_message())
        self.assertEqual(c.closed[0], 1000)
        self.assertTrue(c.eof())

    def test_exec_tty(self):
        _, cid = self.run_pod("wstty", ["sleep", "3600"])
        url = self.exec_url(cid, ["sh", "-c", "read x; stty size; [ -t 0 ] && echo tty"],
                            stdin=True, tty=True)
        c = self.client(url, protocols=["v4.channel.k8s.io"])
        c.resize(100, 40)
        c.send(STDIN, b"go\r")
        out = c.until_closed()
        self.assertIn(b"40 100", out[STDOUT])
        self.assertIn(b"tty", out[STDOUT])
        self.assertEqual(json.loads(out[ERROR])["status"], "Success")
        self.assertNotIn(STDERR, out)

    def test_refusals(self):
        _, cid = self.run_pod("wsno", ["sleep", "3600"])
        url = self.exec_url(cid, ["echo", "ok"])
        # Nothing here spends the token: a POST, version 8, no key, no protocol we serve.
        for kw, status in ((dict(method="POST"), 400), (dict(version="8"), 426),
                           (dict(key="short"), 400),
                           (dict(protocols=["portforward.k8s.io"]), 403)):
            c = self.client(url, **kw)
            self.assertEqual(c.status, status, kw)
            c.close()
        self.assertEqual(self.client(url).until_closed()[STDOUT], b"ok\n")
        # Spent.
        self.assertEqual(self.client(url).status, 404)
        # A frame that breaks the protocol (unmasked): a close with 1002, then the end.
        c = self.client(self.exec_url(cid, ["sleep", "1000"]))
        c.frame(wsclient.BINARY, b"\x00x", mask=False)
        while c.read_message() is not None:
            pass
        self.assertEqual(c.closed[0], 1002)
        self.assertTrue(c.eof())
        # Too big a frame: 1009.
        c = self.client(self.exec_url(cid, ["sleep", "1000"]))
        c.sock.sendall(b"\x82\xff" + (2 << 20).to_bytes(8, "big") + b"abcd")
        while c.read_message() is not None:
            pass
        self.assertEqual(c.closed[0], 1009)
        # The daemon serves on.
        c, out = self.exec_ws(cid, ["echo", "alive"], ["v4.channel.k8s.io"])
        self.assertEqual(out[STDOUT], b"alive\n")

    def port_forward(self, sid, ports, query="", protocols=("v4.channel.k8s.io",)):
        url = self.rs.PortForward(pb.PortForwardRequest(pod_sandbox_id=sid, port=ports),
                                  timeout=10).url
        return self.client(url, protocols=list(protocols), query=query)

    def test_port_forward(self):
        sid = self.serve_in_pod("wspf")

        def answered():
            c = self.port_forward(sid, [8080])
            self.assertEqual(c.status, 101)
            c.send(0, b"GET /index.html HTTP/1.0\r\n\r\n")
            out = c.until_closed()
            c.close()
            return out if b"hello-ws" in out.get(0, b"") else None
        out = harness.wait_for("httpd answering through the forward", answered, timeout=30,
                               interval=0.5)
        # Each channel's first bytes are its port, little-endian; the error channel then
        # says nothing.
        self.assertEqual(out[0][:2], (8080).to_bytes(2, "little"))
        self.assertIn(b"200 OK", out[0])
        self.assertEqual(out[1], (8080).to_bytes(2, "little"))
        # Two ports, one refused: its error channel says why; base64; the ports from the
        # query, which the request must allow.
        c = self.port_forward(sid, [8080, 8081], query="?port=8081,8080",
                              protocols=["v4.base64.channel.k8s.io"])
        self.assertEqual((c.status, c.protocol), (101, "v4.base64.channel.k8s.io"))
        c.send(2, b"GET /index.html HTTP/1.0\r\n\r\n")
        out = c.until_closed()
        self.assertEqual(out[0], (8081).to_bytes(2, "little"))
        self.assertIn(b"cannot connect to localhost:8081", out[1])
        self.assertIn(b"hello-ws", out[2])
        self.assertEqual(self.port_forward(sid, [8080], query="?port=22").status, 403)


class SimWebSocketTest(WebSocketCases, unittest.TestCase):
    def serve_in_pod(self, name):
        """A pod with a server on 127.0.0.1:8080 of its network namespace, answering each
        connection's first request with an HTTP response: ours, made from here in the pod's
        namespace (the simulator's apps are not what is tested)."""
        sid, _ = self.run_pod(name, ["sleep", "3600"])
        info = json.loads(self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(
            pod_sandbox_id=sid, verbose=True), timeout=10).info["info"])
        lsock = listen_in("/proc/%d/ns/net" % info["pid"], 8080)
        self.addCleanup(lsock.close)

        def serve():
            while True:
                try:
                    conn, _ = lsock.accept()
                except OSError:
                    return
                with conn:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                    conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nhello-ws\n")
        threading.Thread(target=serve, daemon=True).start()
        return sid

    def setUp(self):
        self.env = harness.SimEnv(self).start()
        self.env.fetch("docker://" + BUSYBOX)
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)
        self.netns = "/proc/self/ns/net"


class RealRktWebSocketTest(WebSocketCases, unittest.TestCase):
    def serve_in_pod(self, name):
        """A pod running busybox httpd on 127.0.0.1:8080."""
        return self.run_pod(name, HTTPD)[0]

    def setUp(self):
        self.env = harness.RktEnv(self).start()
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)
        im = pbg.ImageServiceStub(ch)
        im.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=BUSYBOX)), timeout=120)
        self.netns = "/proc/%d/ns/net" % self.env.pid1

    def test_attach(self):
        sid, cid = self.run_pod("wsat", ["sh", "-c", "while read l; do echo got-$l; done"],
                                stdin=True)
        url = self.rs.Attach(pb.AttachRequest(container_id=cid, stdin=True, stdout=True,
                                              stderr=True), timeout=10).url
        c = self.client(url, protocols=["v5.channel.k8s.io"])
        self.assertEqual(c.status, 101)
        # iottymux hands output only to the clients it has accepted, and says nothing when
        # it has: what the app answers before then is not ours to see.
        got = b""
        for _ in range(10):
            c.send(STDIN, b"one\n")
            try:
                got += b"".join(c.until(lambda o: b"got-one" in o.get(STDOUT, b""),
                                        timeout=2).values())
                break
            except (TimeoutError, OSError):
                time.sleep(0.2)
        self.assertIn(b"got-one", got)
        # Detaching leaves the app running.
        c.frame(wsclient.CLOSE, b"\x03\xe8")
        self.assertTrue(c.eof())
        self.assertEqual(self.rs.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid), timeout=10).status.state, pb.CONTAINER_RUNNING)


class RealKubeletWebSocketTest(unittest.TestCase):
    """The real kubelet (v1.34, standalone: kubelet.py) between our client and rktlet, as a
    client that reaches kubelet directly speaks to it: kubelet asks rktlet for the URL and
    proxies the WebSocket request there as it came, so what answers is rktlet's."""

    def setUp(self):
        self.env = harness.RktEnv(self, extra=["--wait"]).start()
        self.kubelet = kubelet.Kubelet(self, self.env)

    def client(self, path, query, protocols):
        """Our client on kubelet's authenticated port (TLS, its own certificate)."""
        netns = "/proc/%d/ns/net" % self.env.pid1
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        raw = spdyclient.connect_in(netns, "127.0.0.1", kubelet.PORT)
        c = wsclient.Client("https://127.0.0.1:%d%s" % (kubelet.PORT, path), netns,
                            protocols=protocols, query=query,
                            sock=ctx.wrap_socket(raw, server_hostname="127.0.0.1"))
        self.addCleanup(c.close)
        return c

    def test_through_kubelet(self):
        k = self.kubelet.start()
        k.put_manifest("wsk", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "wsk", "namespace": "default"},
            "spec": {"terminationGracePeriodSeconds": 2, "containers": [
                {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]},
                {"name": "web", "image": "busybox:1.36", "command": HTTPD}]}})
        k.wait_pod("wsk", "running", kubelet.running, timeout=240)
        name = "wsk-" + k.node
        # The e2e suite's request: channel.k8s.io, stdout and stderr.
        c = self.client("/exec/default/%s/main" % name,
                        "?command=echo&command=remote+execution+test&output=1&error=1",
                        ["channel.k8s.io"])
        self.assertEqual((c.status, c.protocol), (101, "channel.k8s.io"))
        self.assertEqual(c.until_closed()[STDOUT], b"remote execution test\n")
        # v5 as kubectl offers it, stdin ended by the close message; a non-zero exit.
        c = self.client("/exec/default/%s/main" % name,
                        "?command=sh&command=-c&command=tr+a-z+A-Z%3B+exit+5&input=1&output=1",
                        ["v5.channel.k8s.io"])
        self.assertEqual((c.status, c.protocol), (101, "v5.channel.k8s.io"))
        c.send(STDIN, b"through kubelet\n")
        c.close_channel(STDIN)
        out = c.until_closed()
        self.assertEqual(out[STDOUT], b"THROUGH KUBELET\n")
        self.assertEqual(json.loads(out[ERROR])["details"]["causes"][0]["message"], "5")

        # Port-forward: kubelet takes the ports from its query and asks rktlet for them.
        def answered():
            c = self.client("/portForward/default/%s" % name, "?port=8080",
                            ["v4.channel.k8s.io"])
            self.assertEqual(c.status, 101)
            c.send(0, b"GET /index.html HTTP/1.0\r\n\r\n")
            out = c.until_closed()
            return out if b"hello-ws" in out.get(0, b"") else None
        out = harness.wait_for("httpd answering through kubelet", answered, timeout=30,
                               interval=0.5)
        self.assertEqual(out[1], (8080).to_bytes(2, "little"))


if __name__ == "__main__":
    unittest.main()
