"""Exec and PortForward through the streaming server, end to end on the real rkt 1.30.0
(stage1 host) in a private systemd host: crictl (cri-tools 1.26.1, built by
scripts/build-critest) as the client, run inside the host's network namespace where
the daemon's stream address is; and a small SPDY client of our own (spdyclient.py) for what
crictl cannot do: bad, reused and expired tokens, garbage, a client that vanishes. Skips,
saying why, when rkt or crictl is not there."""
import fcntl
import random
import socket
import json
import os
import pty
import select
import struct
import subprocess
import termios
import time
import unittest

import grpc

import harness
import spdyclient

pb, pbg = harness.stubs()

BUSYBOX = "docker.io/library/busybox:latest"
HERE = os.path.dirname(os.path.abspath(__file__))
CRICTL = os.environ.get("RKL_CRICTL",
                        "/var/cache/rktlet-test/cri-tools-1.26.1/bin/crictl")


class StreamingTest(unittest.TestCase):
    ttl = None

    def setUp(self):
        if not os.access(CRICTL, os.X_OK):
            self.skipTest("no crictl at %s (scripts/build-critest)" % CRICTL)
        extra = ["--stream-token-ttl", str(self.ttl)] if self.ttl else []
        self.env = harness.RktEnv(self, extra=extra).start()
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)
        im = pbg.ImageServiceStub(ch)
        im.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=BUSYBOX)), timeout=120)

    def sandbox_config(self, name):
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="e2e"),
            hostname=name, log_directory=os.path.join(self.env.dir, "logs", name))

    def run_pod(self, name, command):
        cfg = self.sandbox_config(name)
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=10).pod_sandbox_id
        harness.wait_sandbox_running(self.rs, sid, name)
        return sid, self.create(sid, name, name, command)

    def create(self, sid, pod, name, command, wait=True, **kw):
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                image=pb.ImageSpec(image=BUSYBOX), command=command,
                                log_path=name + ".log", **kw)
        cid = self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=self.sandbox_config(pod)),
            timeout=10).container_id
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
        if not wait:
            return cid
        harness.wait_for("container %s running" % name, lambda: self.rs.ContainerStatus(
            pb.ContainerStatusRequest(container_id=cid), timeout=10).status.state ==
            pb.CONTAINER_RUNNING, timeout=60)
        return cid

    def crictl(self, *args, input=None, timeout=60):
        return subprocess.run(self.env.enter + [
            CRICTL, "--runtime-endpoint", "unix://" + self.env.daemon.socket, "--timeout",
            "30s"] + list(args), capture_output=True, text=True, timeout=timeout, cwd="/",
            input=input, stdin=None if input is not None else subprocess.DEVNULL)

    def crictl_tty(self, args, keys=(), timeout=60):
        """crictl with a terminal as stdin and stdout (it insists for -t): what it printed."""
        pid, fd = pty.fork()
        if pid == 0:
            # A size to see inside: crictl sends its terminal's (resize stream).
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
            os.execvp(self.env.enter[0], self.env.enter + [
                CRICTL, "--runtime-endpoint", "unix://" + self.env.daemon.socket] + args)
        out = b""
        deadline = time.monotonic() + timeout
        keys = list(keys)
        try:
            while time.monotonic() < deadline:
                r, _, _ = select.select([fd], [], [], 0.5)
                if not r:
                    # Quiet for a while: the next keys.
                    if keys:
                        os.write(fd, keys.pop(0))
                    continue
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
        finally:
            _, status = os.waitpid(pid, 0)
            os.close(fd)
        return os.waitstatus_to_exitcode(status), out.decode(errors="replace")

    def client(self, url, **kw):
        c = spdyclient.Client(url, "/proc/%d/ns/net" % self.env.pid1, **kw)
        self.addCleanup(c.close)
        return c

    def url(self, cid, **kw):
        kw.setdefault("stdout", True)
        req = pb.ExecRequest(container_id=cid, cmd=kw.pop("cmd", ["true"]), **kw)
        return self.rs.Exec(req, timeout=10).url


class RealRktExecStreamTest(StreamingTest):
    def test_exec_right_after_start(self):
        """kubelet (a postStart hook) and critest ask for an exec as soon as StartContainer
        answers, before rkt has started the app: the URL comes once the app runs."""
        sid, _ = self.run_pod("early", ["sleep", "3600"])
        cid = self.create(sid, "early", "early2", ["sleep", "3600"], wait=False)
        self.assertNotEqual(self.rs.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid), timeout=10).status.state, pb.CONTAINER_RUNNING)
        self.assertTrue(self.url(cid, cmd=["echo", "hi"]).startswith("http://"))
        self.assertEqual(self.rs.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid), timeout=10).status.state, pb.CONTAINER_RUNNING)
        p = self.crictl("exec", cid, "echo", "hi")
        self.assertEqual((p.returncode, p.stdout), (0, "hi\n"), p)

    def test_exec(self):
        _, cid = self.run_pod("ex", ["sleep", "3600"])
        # Without a terminal: both streams apart, and the exit code.
        p = self.crictl("exec", cid, "sh", "-c", "echo out; echo err >&2")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "out\n", "err\n"), p)
        p = self.crictl("exec", cid, "sh", "-c", "exit 7")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("exit code 7", p.stderr)
        # stdin reaches the command, and its end ends it.
        p = self.crictl("exec", "-i", cid, "sh", "-c", "tr a-z A-Z; echo done",
                        input="hello\n")
        self.assertEqual((p.returncode, p.stdout), (0, "HELLO\ndone\n"), p)
        # A megabyte through, in order.
        p = self.crictl("exec", cid, "sh", "-c", "seq 1 150000")
        self.assertEqual(p.stdout, "".join("%d\n" % i for i in range(1, 150001)))

    def test_exec_tty(self):
        _, cid = self.run_pod("tty", ["sleep", "3600"])
        # The terminal is the container's (it was once one of the daemon's devpts, whose
        # /dev/pts/N the container does not have, and ttyname() failed: "not a tty"). The
        # image's busybox has a tty applet, without a link of its own.
        code, out = self.crictl_tty(["exec", "-it", cid, "sh", "-c",
                                     "[ -t 0 ] && [ -t 1 ] && busybox tty && "
                                     "readlink /proc/self/fd/0 && ls -l $(busybox tty)"])
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"(/dev/pts/[0-9]+)\r\n\1\r\ncrw--w---- .* \1\r\n")
        # A shell on the terminal reads what is typed, with the terminal's size.
        code, out = self.crictl_tty(["exec", "-it", cid, "sh"],
                                    keys=[b"stty size; echo x$((6*7))y; exit 3\r"])
        self.assertIn("x42y", out)
        self.assertIn("40 100", out)
        self.assertNotEqual(code, 0, out)


HTTPD = ["sh", "-c", "mkdir -p /www && echo hello-pf > /www/index.html && "
         "dd if=/dev/zero of=/www/big bs=1M count=20 2>/dev/null && "
         "exec busybox httpd -f -p 127.0.0.1:8080 -h /www"]


class RealRktPortForwardTest(StreamingTest):
    def port_forward(self, sid, local):
        p = subprocess.Popen(self.env.enter + [
            CRICTL, "--runtime-endpoint", "unix://" + self.env.daemon.socket,
            "port-forward", sid, "%d:8080" % local], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd="/")
        self.addCleanup(p.stdout.close)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        # It says so once it listens.
        line = p.stdout.readline().decode()
        self.assertIn("Forwarding from", line)
        return p

    def fetch(self, port, path, timeout=60):
        return self.env.run("busybox", "wget", "-q", "-O-",
                            "http://127.0.0.1:%d/%s" % (port, path), check=False,
                            timeout=timeout)

    def test_port_forward(self):
        sid, _ = self.run_pod("pf", HTTPD)
        self.wait_httpd(sid)
        self.port_forward(sid, 18080)
        p = self.fetch(18080, "index.html")
        self.assertEqual((p.returncode, p.stdout), (0, "hello-pf\n"), p.stderr)
        # 20 MB, and several connections at once.
        p = self.env.run("sh", "-c", "for i in 1 2 3 4; do busybox wget -q -O- "
                         "http://127.0.0.1:18080/big | wc -c & done; wait", timeout=120)
        self.assertEqual(p.stdout.split(), ["20971520"] * 4, p.stderr)

    def test_own_client(self):
        """Half-close, a refused port on the error stream, a port the request did not name."""
        sid, _ = self.run_pod("pf2", HTTPD)
        self.wait_httpd(sid)
        url = self.rs.PortForward(pb.PortForwardRequest(pod_sandbox_id=sid, port=[8080, 8081]),
                                  timeout=10).url
        c = self.client(url, protocols=["portforward.k8s.io"])
        self.assertEqual((c.status, c.headers.get("x-stream-protocol-version")),
                         (101, "portforward.k8s.io"))
        streams = {}
        for rid, port in enumerate((8080, 8081, 8082)):
            h = {"port": str(port), "requestid": str(rid)}
            err = c.open(dict(h, streamtype="error"), fin=True)
            streams[port] = (err, c.open(dict(h, streamtype="data")))
        # 8082 was not in the request: refused, at once.
        self.assertIn(streams[8082][0], c.reset)
        err, data = streams[8080]
        c.send(data, b"GET /index.html HTTP/1.0\r\n\r\n", fin=True)
        c.until(lambda: data in c.fin and err in c.fin)
        self.assertIn(b"200 OK", c.data[data])
        self.assertIn(b"hello-pf", c.data[data])
        self.assertEqual(c.data.get(err, b""), b"")
        err, data = streams[8081]
        c.until(lambda: err in c.fin and data in c.fin)
        msg = c.data[err].decode()
        self.assertIn("cannot connect to localhost:8081", msg)
        self.assertIn("refused", msg.lower())
        # Many at once, on one connection.
        pairs = []
        for rid in range(10, 40):
            h = {"port": "8080", "requestid": str(rid)}
            pairs.append((c.open(dict(h, streamtype="error"), fin=True),
                          c.open(dict(h, streamtype="data"))))
        for _, data in pairs:
            c.send(data, b"GET /index.html HTTP/1.0\r\n\r\n", fin=True)
        c.until(lambda: all(d in c.fin for _, d in pairs))
        for _, data in pairs:
            self.assertIn(b"hello-pf", c.data[data])
        c.close()

    def wait_httpd(self, sid):
        pid = str(self.pod_pid(sid))
        harness.wait_for("httpd answering", lambda: self.env.run(
            "nsenter", "-t", pid, "-n", "busybox", "wget", "-q", "-O/dev/null",
            "http://127.0.0.1:8080/index.html", check=False).returncode == 0, timeout=30)

    def pod_pid(self, sid):
        info = json.loads(self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(
            pod_sandbox_id=sid, verbose=True), timeout=10).info["info"])
        return info["pid"]


class RealRktStreamEdgeTest(StreamingTest):
    """What a client that is not client-go may do, and the API's checks."""
    ttl = 5

    def run_exec(self, url, protocols=("v4.channel.k8s.io",)):
        c = self.client(url, protocols=protocols)
        self.assertEqual(c.status, 101)
        ids = spdyclient.exec_streams(c)
        c.until(lambda: ids["error"] in c.fin and ids["stdout"] in c.fin, timeout=60)
        return c, {k: c.data.get(v, b"").decode() for k, v in ids.items()}

    def assert_refused(self, url, status=404, **kw):
        c = self.client(url, **kw)
        self.assertEqual(c.status, status)
        c.close()

    def test_edges(self):
        sid, cid = self.run_pod("edge", ["sleep", "3600"])
        base = self.url(cid).rsplit("/", 2)[0]

        # v4: the exit status as JSON, and a PING answered on the way.
        url = self.url(cid, cmd=["sh", "-c", "echo out; echo err >&2; exit 3"],
                       stdout=True, stderr=True)
        c, got = self.run_exec(url)
        self.assertEqual((got["stdout"], got["stderr"]), ("out\n", "err\n"))
        status = json.loads(got["error"])
        self.assertEqual((status["status"], status["reason"]), ("Failure", "NonZeroExitCode"))
        self.assertEqual(status["details"]["causes"],
                         [{"reason": "ExitCode", "message": "3"}])
        self.assertEqual(c.headers["x-stream-protocol-version"], "v4.channel.k8s.io")
        # The token is spent.
        self.assert_refused(url)
        # The oldest protocol: the status as text.
        url = self.url(cid, cmd=["sh", "-c", "exit 4"], stdout=True, stderr=True)
        c, got = self.run_exec(url, protocols=("channel.k8s.io",))
        self.assertEqual(c.headers["x-stream-protocol-version"], "channel.k8s.io")
        self.assertIn("exit code: 4", got["error"])
        url = self.url(cid, cmd=["true"], stdout=True)
        c, got = self.run_exec(url)
        self.assertEqual(json.loads(got["error"])["status"], "Success")

        # Paths and tokens that serve nothing; a protocol nobody speaks; no upgrade.
        url = self.url(cid, stdout=True)
        for path in ("/", "/exec", "/exec/", "/exec/" + "0" * 32, "/attach/x",
                     "/nothing/" + url.rsplit("/", 1)[1],
                     "/exec/%s/more" % url.rsplit("/", 1)[1]):
            self.assert_refused(base + path)
        self.assert_refused(url, status=400, upgrade=None)
        self.assert_refused(url, status=403, protocols=("v9.channel.k8s.io",))
        # None of those spent it.
        self.run_exec(url)
        # Used for another kind, it is gone for its own too.
        url = self.url(cid, stdout=True)
        self.assert_refused(url.replace("/exec/", "/portforward/"),
                            protocols=("portforward.k8s.io",))
        self.assert_refused(url)
        # Expired.
        url = self.url(cid, stdout=True)
        time.sleep(self.ttl + 1)
        self.assert_refused(url)

        # 1,000 frames of garbage: the session ends, the daemon does not.
        url = self.url(cid, cmd=["sleep", "1000"], stdout=True)
        c = self.client(url)
        rnd = random.Random(16)
        junk = b"".join(bytes([0x80, rnd.randrange(256), 0, rnd.randrange(1, 12), 0, 0, 0, 8])
                        + rnd.randbytes(8) for _ in range(1000))
        try:
            c.sock.sendall(junk)
        except OSError:
            pass  # it may close before all is sent
        self.assertTrue(c.closed())
        self.assertEqual(self.crictl("exec", cid, "echo", "alive").stdout, "alive\n")

        # A client that vanishes mid-stream: the command and what it started go.
        url = self.url(cid, cmd=["sh", "-c", "sleep 1001 & echo started; wait"],
                       stdout=True)
        c = self.client(url)
        ids = spdyclient.exec_streams(c, stderr=False)
        c.until(lambda: b"started" in c.data.get(ids["stdout"], b""))
        self.assertIn("sleep 1001", self.env.run("ps", "-eo", "args").stdout)
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
        harness.wait_for("the exec's processes gone", lambda: "sleep 1001" not in
                         self.env.run("ps", "-eo", "args").stdout, timeout=30)
        self.assertEqual(self.crictl("exec", cid, "echo", "alive").stdout, "alive\n")

    def test_api_checks(self):
        sid, cid = self.run_pod("api", ["sleep", "3600"])
        cases = [
            (pb.ExecRequest(container_id=cid, stdout=True), grpc.StatusCode.INVALID_ARGUMENT,
             "cmd"),
            (pb.ExecRequest(container_id=cid, cmd=["true"]), grpc.StatusCode.INVALID_ARGUMENT,
             "one of stdin"),
            (pb.ExecRequest(container_id=cid, cmd=["sh"], tty=True, stdout=True, stderr=True),
             grpc.StatusCode.INVALID_ARGUMENT, "tty and stderr"),
            (pb.ExecRequest(container_id="f" * 64, cmd=["true"], stdout=True),
             grpc.StatusCode.NOT_FOUND, ""),
        ]
        for req, code, text in cases:
            with self.assertRaises(grpc.RpcError) as e:
                self.rs.Exec(req, timeout=10)
            self.assertEqual(e.exception.code(), code, req)
            self.assertIn(text, e.exception.details())
        with self.assertRaises(grpc.RpcError) as e:
            self.rs.Attach(pb.AttachRequest(container_id=cid, stdout=True, tty=True),
                           timeout=10)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("without a terminal", e.exception.details())
        with self.assertRaises(grpc.RpcError) as e:
            self.rs.PortForward(pb.PortForwardRequest(pod_sandbox_id=sid, port=[0]),
                                timeout=10)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        # Outstanding URLs are bounded: past 256, RESOURCE_EXHAUSTED, until some expire.
        codes = set()
        for _ in range(300):
            try:
                self.url(cid, stdout=True)
            except grpc.RpcError as e:
                codes.add(e.code())
        self.assertEqual(codes, {grpc.StatusCode.RESOURCE_EXHAUSTED})

        def issued():
            try:
                return self.url(cid)
            except grpc.RpcError:
                return None
        harness.wait_for("URLs expired", issued, timeout=30)
        # A stopped container: no exec.
        self.rs.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=1), timeout=30)
        harness.wait_for("container stopped", lambda: self.rs.ContainerStatus(
            pb.ContainerStatusRequest(container_id=cid), timeout=10).status.state ==
            pb.CONTAINER_EXITED, timeout=60)
        with self.assertRaises(grpc.RpcError) as e:
            self.url(cid, stdout=True)
        self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)


class RealRktAttachTest(StreamingTest):
    def attach(self, cid, timeout=10):
        """Our own client attached with stdin, stdout and stderr: (client, stream ids)."""
        url = self.rs.Attach(pb.AttachRequest(container_id=cid, stdin=True, stdout=True,
                                              stderr=True), timeout=timeout).url
        c = self.client(url)
        self.assertEqual(c.status, 101)
        return c, spdyclient.exec_streams(c, stdin=True)

    def log_lines(self, name):
        path = os.path.join(self.env.dir, "logs", self.pod, name + ".log")
        try:
            with open(path) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def test_attach_right_after_start(self):
        """critest attaches as soon as StartContainer answers, in a sandbox that RunPodSandbox
        answered before rkt made its pod: the URL comes once the app runs."""
        cfg = self.sandbox_config("early")
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=10).pod_sandbox_id
        cid = self.create(sid, "early", "early", ["sh", "-c", "exec sleep 3600"], wait=False)
        url = self.rs.Attach(pb.AttachRequest(container_id=cid, stdout=True), timeout=120).url
        self.assertTrue(url.startswith("http://"), url)
        self.assertEqual(self.rs.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid), timeout=10).status.state, pb.CONTAINER_RUNNING)

    def test_attach(self):
        self.pod = "att"
        sid, cid = self.run_pod(self.pod, [
            "sh", "-c", "i=0; while true; do echo line$i; i=$((i+1)); sleep 1; done"])
        # crictl attach: the app's output as it prints it.
        p = subprocess.Popen(self.env.enter + [
            CRICTL, "--runtime-endpoint", "unix://" + self.env.daemon.socket, "attach",
            cid], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            cwd="/")
        self.addCleanup(p.stdout.close)
        self.addCleanup(p.stderr.close)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        first = p.stdout.readline().decode()
        self.assertRegex(first, r"^line\d+$")
        second = p.stdout.readline().decode()
        self.assertEqual(int(second[4:]), int(first[4:]) + 1)
        # Detaching leaves the app running, and its log growing.
        p.kill()
        n = len(self.log_lines(self.pod))
        harness.wait_for("log growing", lambda: len(self.log_lines(self.pod)) > n + 1,
                         timeout=30)
        self.assertEqual(self.rs.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid), timeout=10).status.state, pb.CONTAINER_RUNNING)

        # stdin, through our own client; a container without stdin refuses it.
        with self.assertRaises(grpc.RpcError) as e:
            self.rs.Attach(pb.AttachRequest(container_id=cid, stdin=True, stdout=True),
                           timeout=10)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        cid = self.create(sid, self.pod, "echo", ["sh", "-c", "while read l; do echo got-$l; done"],
                          stdin=True)
        for word in ("one", "two"):
            c, ids = self.attach(cid)
            # iottymux hands output only to the clients it has accepted so far, and says
            # nothing when it has: what the app answers before then is not ours to see.
            c.sock.settimeout(2)
            for _ in range(10):
                c.send(ids["stdin"], word.encode() + b"\n")
                try:
                    c.until(lambda: b"got-" + word.encode() in c.data.get(ids["stdout"], b""),
                            timeout=2)
                    break
                except (TimeoutError, OSError):
                    pass
            self.assertIn(b"got-" + word.encode(), c.data.get(ids["stdout"], b""))
            # Without stdin_once the app's stdin outlives the attach.
            c.close()
        harness.wait_for("the log has both", lambda: any(
            ln.endswith("got-two") for ln in self.log_lines("echo")), timeout=30)
        self.assertEqual(self.rs.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid), timeout=10).status.state, pb.CONTAINER_RUNNING)

    def test_attach_stdin_once(self):
        """stdin_once: the attach ends with its input, and so does the app's stdin."""
        self.pod = "once"
        sid, _ = self.run_pod(self.pod, ["sleep", "3600"])
        cid = self.create(sid, self.pod, "in", [
            "sh", "-c", "while read l; do echo got-$l; done; echo stdin-ended"],
            stdin=True, stdin_once=True)
        c, ids = self.attach(cid)
        c.sock.settimeout(30)
        c.send(ids["stdin"], b"one\n", fin=True)
        c.until(lambda: ids["error"] in c.fin and ids["stdout"] in c.fin)
        self.assertEqual(json.loads(c.data[ids["error"]])["status"], "Success")
        harness.wait_for("the app's end", lambda: self.rs.ContainerStatus(
            pb.ContainerStatusRequest(container_id=cid), timeout=10).status.state ==
            pb.CONTAINER_EXITED, timeout=60)
        st = self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid),
                                     timeout=10).status
        self.assertEqual(st.exit_code, 0)
        harness.wait_for("the log", lambda: [ln.split(" ", 3)[-1] for ln in
                                             self.log_lines("in")] ==
                         ["got-one", "stdin-ended"], timeout=30)

    def test_attach_critest(self):
        """critest's attach spec, step by step: a shell with stdin (stdin_once, no terminal)
        attached at once with stdin, stdout and stderr; once its output is quiet, `echo -n
        hello` on stdin must come back as `hello` on stdout, a line without its end."""
        self.pod = "acri"
        cfg = self.sandbox_config(self.pod)
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=10).pod_sandbox_id
        cid = self.create(sid, self.pod, "sh", ["/bin/sh"], wait=False, stdin=True,
                          stdin_once=True)
        c, ids = self.attach(cid, timeout=120)
        # As critest: what came before the output went quiet is a header, not compared.
        c.sock.settimeout(1)
        while True:
            n = len(c.data.get(ids["stdout"], b""))
            try:
                c.until(lambda: len(c.data.get(ids["stdout"], b"")) > n, timeout=1)
            except (TimeoutError, OSError):
                break
        header = c.data.get(ids["stdout"], b"")
        c.sock.settimeout(60)
        c.send(ids["stdin"], b"echo -n hello\n")
        c.until(lambda: c.data.get(ids["stdout"], b"")[len(header):] == b"hello", timeout=60)
        self.assertEqual(c.data.get(ids["stderr"], b""), b"")
        # The log stays line by line: the line is whole once the app ends it.
        c.send(ids["stdin"], b"echo ' world'\n")
        harness.wait_for("the log has the line", lambda: any(
            ln.endswith(" hello world") for ln in self.log_lines("sh")), timeout=30)
        self.assertFalse([ln for ln in self.log_lines("sh") if ln.endswith(" hello")])

    def test_attach_tty(self):
        self.pod = "atty"
        sid, _ = self.run_pod(self.pod, ["sleep", "3600"])
        cid = self.create(sid, self.pod, "sh", ["sh"], stdin=True, tty=True)
        # crictl's detach keys (^P^Q) end it; the shell stays. Its terminal is iottymux's,
        # made in the pod's devpts: ttyname() finds it inside.
        code, out = self.crictl_tty(["attach", "-it", cid],
                                    keys=[b"\r", b"echo x$((6*7))y\r",
                                          b"ls -l $(busybox tty) && echo tty-ok\r", b"\x10\x11"])
        self.assertIn("x42y", out)
        self.assertRegex(out, r"crw--w---- .* /dev/pts/[0-9]+\r\ntty-ok")
        self.assertEqual(self.rs.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid), timeout=10).status.state, pb.CONTAINER_RUNNING)


if __name__ == "__main__":
    unittest.main()
