"""Running rktlet as an operator does: socket activation (the daemon starts on the first
CRI call), systemd's READY/STATUS/watchdog, the Prometheus endpoint, and the configuration
file with flags over it."""
import json
import os
import re
import signal
import socket
import subprocess
import time
import unittest

import grpc
import urllib.error
import urllib.request

import harness

pb, pbg = harness.stubs()


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
        return r.read().decode()


def sample(text, name):
    """The value of the sample `name` (with its labels, as written), or None."""
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


class Notify:
    """A NOTIFY_SOCKET that records what the daemon tells systemd."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.close = self.sock.close
        self.messages = []

    def wait_for(self, key, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in self.messages:
                for line in m.split("\n"):
                    if line.startswith(key):
                        return line
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except socket.timeout:
                pass
        raise AssertionError("no %s in %r" % (key, self.messages))


class OperationsTest(harness.FakeRktCase):
    tmp_prefix = "rktlet-ops-"

    def daemon(self, extra=(), env=None):
        d = harness.Daemon(harness.workdir(self), rkt_path=self.rkt, bus=self.systemd.address,
                           extra=extra, env=env)
        self.addCleanup(d.stop, signal.SIGKILL)
        return d

    def test_socket_activation(self):
        """systemd-socket-activate holds the socket; the first call starts the daemon on
        it, which answers it, tells systemd READY, STATUS and pings the watchdog, and leaves
        the socket in place when it stops."""
        d = self.daemon()
        notify = Notify(d.workdir)
        self.addCleanup(notify.close)
        env = dict(d.env, NOTIFY_SOCKET=notify.path, WATCHDOG_USEC="2000000")
        log = open(d.log_path, "ab")
        # The daemon's own --listen is ignored in favour of the socket it is given.
        proc = subprocess.Popen(["systemd-socket-activate", "-l", d.socket, "-E", "NOTIFY_SOCKET",
                                 "-E", "WATCHDOG_USEC"] + d.args[:1] + d.args[3:],
                                stdout=log, stderr=log, env=env)
        log.close()
        d.proc = proc
        deadline = time.monotonic() + 10
        while not os.path.exists(d.socket) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertTrue(os.path.exists(d.socket))
        time.sleep(0.3)
        # Nothing runs rktlet yet: only the socket waits.
        with open("/proc/%d/comm" % proc.pid) as f:
            self.assertNotIn("rktlet", f.read())
        self.assertFalse(os.path.exists(os.path.join(d.state_dir, "rktlet.db")))

        ch = d.channel()
        self.addCleanup(ch.close)
        rs = pbg.RuntimeServiceStub(ch)
        v = rs.Version(pb.VersionRequest(version="v1"), timeout=30)
        self.assertEqual(v.runtime_name, "rktlet")
        self.assertEqual(os.readlink("/proc/%d/exe" % proc.pid), harness.DAEMON)
        d.wait_log("(socket-activated)")
        # A second connection is accepted too.
        ch2 = d.channel()
        self.addCleanup(ch2.close)
        pbg.RuntimeServiceStub(ch2).Status(pb.StatusRequest(), timeout=30)

        notify.wait_for("READY=1")
        status = notify.wait_for("STATUS=serving: ")
        self.assertRegex(status, r"^STATUS=serving: 0 pods \(0 running\), 0 containers "
                                 r"\(0 running\), reconcile lag \d+\.\d s$")
        notify.wait_for("WATCHDOG=1")

        self.assertEqual(d.stop(signal.SIGTERM), 0)
        self.assertTrue(os.path.exists(d.socket), "the socket is systemd's, not the daemon's")
        self.assertIn("STOPPING=1", "".join(notify.messages) + self._drain(notify))

    @staticmethod
    def _drain(notify):
        out = ""
        try:
            while True:
                out += notify.sock.recv(4096).decode()
        except socket.timeout:
            return out

    def test_units(self):
        """packaging/rktlet.socket and rktlet.service, as shipped but for paths, in a
        private systemd: starting the socket starts nothing; the first call starts the
        service, which reports its STATUS; stopped, the socket starts it again."""
        w = harness.workdir(self)
        env = dict(os.environ, XDG_RUNTIME_DIR=os.path.join(self.tmp, "systemd", "xdg"))
        units = os.path.join(env["XDG_RUNTIME_DIR"], "systemd", "user")
        os.makedirs(units, exist_ok=True)
        sock = os.path.join(w, "rktlet.sock")
        with open(os.path.join(harness.SOURCE_DIR, "packaging", "rktlet.socket")) as f:
            text = re.sub(r"(?m)^ListenStream=.*$", "ListenStream=" + sock, f.read())
        with open(os.path.join(units, "rktlet.socket"), "w") as f:
            f.write(re.sub(r"(?m)^Socket(User|Group)=.*\n", "", text))  # a user manager's
        with open(os.path.join(harness.SOURCE_DIR, "packaging", "rktlet.service")) as f:
            text = re.sub(r"(?m)^ExecStart=.*$", "ExecStart=%s --state-dir %s/state "
                          "--rkt-path %s --rkt-data-dir %s/rkt --systemd-bus %s --config ''" % (
                              harness.DAEMON, w, self.rkt, w, self.systemd.address), f.read())
        with open(os.path.join(units, "rktlet.service"), "w") as f:
            f.write(text)

        def ctl(*args, check=True):
            return subprocess.run(["systemctl", "--user"] + list(args), env=env, text=True,
                                  capture_output=True, check=check, timeout=60).stdout.strip()

        ctl("daemon-reload")
        ctl("start", "rktlet.socket")
        self.addCleanup(ctl, "stop", "rktlet.service", "rktlet.socket", check=False)
        self.assertTrue(os.path.exists(sock))
        self.assertEqual(ctl("is-active", "rktlet.service", check=False), "inactive")
        for _ in range(2):
            ch = grpc.insecure_channel("unix://" + sock)
            try:
                v = pbg.RuntimeServiceStub(ch).Version(pb.VersionRequest(version="v1"),
                                                       timeout=30)
            finally:
                ch.close()
            self.assertEqual(v.runtime_name, "rktlet")
            self.assertEqual(ctl("is-active", "rktlet.service"), "active")
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                status = ctl("show", "-P", "StatusText", "rktlet.service")
                if status.startswith("serving: "):
                    break
                time.sleep(0.5)
            self.assertRegex(status, r"^serving: 0 pods \(0 running\), 0 containers")
            self.assertEqual(ctl("show", "-P", "WatchdogUSec", "rktlet.service"), "3min")
            ctl("stop", "rktlet.service")
            self.assertEqual(ctl("is-active", "rktlet.socket"), "active")
            self.assertTrue(os.path.exists(sock))

    def test_metrics(self):
        port = harness.free_port()
        d = self.daemon(extra=["--metrics-address", "127.0.0.1:%d" % port]).start()
        ch = d.channel()
        self.addCleanup(ch.close)
        rs = pbg.RuntimeServiceStub(ch)
        rs.Status(pb.StatusRequest(), timeout=30)  # waits for the first probe of rkt

        before = scrape(port)
        for _ in range(5):
            rs.Version(pb.VersionRequest(version="v1"), timeout=5)
        with self.assertRaises(Exception):
            rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id="nope"), timeout=5)
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="m", uid="m-uid", namespace="ops"),
            log_directory=harness.LOG_ROOT + "/ops_m")
        rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=10)
        after = scrape(port)

        count = 'rktlet_cri_request_duration_seconds_count{method="Version"}'
        self.assertEqual(sample(after, count) - (sample(before, count) or 0), 5)
        self.assertEqual(sample(after, 'rktlet_cri_request_duration_seconds_bucket'
                                       '{method="Version",le="+Inf"}'), sample(after, count))
        self.assertGreater(sample(after, 'rktlet_cri_request_duration_seconds_sum'
                                         '{method="Version"}'), 0)
        self.assertEqual(sample(after, 'rktlet_cri_request_failures_total'
                                       '{method="PodSandboxStatus"}'), 1)
        self.assertGreaterEqual(sample(after, 'rktlet_rkt_command_duration_seconds_count'
                                              '{verb="version"}'), 1)
        self.assertGreaterEqual(sample(after, "rktlet_store_commit_duration_seconds_count"), 1)
        self.assertEqual(sample(after, 'rktlet_cache_objects{kind="sandbox"}'), 1)
        self.assertEqual(sum(sample(after, 'rktlet_pods{phase="%s"}' % p)
                             for p in ("pending", "running", "failed", "stopped")), 1)
        self.assertEqual(sample(after, 'rktlet_reconcile_queue_depth{kind="sandbox"}'), 1)
        self.assertIsNotNone(sample(after, "rktlet_reconcile_lag_seconds"))
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=5)
        self.assertEqual(e.exception.code, 404)

    def test_metrics_off_by_default(self):
        d = self.daemon().start()
        d.wait_log("serving CRI runtime.v1")
        self.assertNotIn("metrics on", d.log())

    def test_config_file(self):
        port = harness.free_port()
        w = harness.workdir(self)
        conf = os.path.join(w, "rktlet.conf")
        with open(conf, "w") as f:
            f.write("# flags override these\n"
                    "metrics-address = 127.0.0.1:%d\n"
                    "log-level = err\n"
                    "max-actions = 2\n" % port)
        d = self.daemon(extra=["--config", conf]).start()
        self.assertIn("rktlet_cri_request_duration_seconds", scrape(port))
        # The harness passes --log-level debug: the flag wins over the file's err.
        d.wait_log("serving CRI runtime.v1")

    def test_config_errors_name_the_line(self):
        w = harness.workdir(self)
        conf = os.path.join(w, "rktlet.conf")
        cases = [
            ("max-actions = 2\n\nrkt-timout = 5\n",
             "%s:3: unknown key 'rkt-timout'" % conf),
            ("# c\nmax-actions = many\n",
             "%s:2: max-actions takes 1 to 256, not 'many'" % conf),
            ("sync-full = maybe\n", "%s:1: sync-full takes true or false, not 'maybe'" % conf),
            ("metrics-address = localhost\n", "%s:1: metrics address 'localhost'" % conf),
            ("listen /run/x.sock\n", "%s:1: expected 'key = value'" % conf),
        ]
        for text, want in cases:
            with open(conf, "w") as f:
                f.write(text)
            r = subprocess.run([harness.DAEMON, "--config", conf], capture_output=True,
                               text=True, timeout=10)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(want, r.stderr)
        r = subprocess.run([harness.DAEMON, "--config", os.path.join(w, "missing.conf")],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing.conf", r.stderr)


class JournalTest(unittest.TestCase):
    """The daemon as a service of a systemd host (the private one real rkt runs in, with its
    journald): lines about a sandbox or container carry its IDs, name and namespace as
    journal fields, so that `journalctl POD_ID=...` finds them."""

    def test_journal_fields(self):
        env = harness.RktEnv(self)
        d = env.daemon
        unit = "rktlet-journal-test"
        # Type=notify: systemd-run returns once the daemon said READY.
        env.run("systemd-run", "--unit", unit, "--collect", "-p", "Type=notify", "--",
                *d.args)
        self.addCleanup(env.run, "systemctl", "stop", unit, check=False)
        ch = d.channel()
        self.addCleanup(ch.close)
        rs = pbg.RuntimeServiceStub(ch)
        harness.wait_answering(rs)
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="journal", uid="journal-uid",
                                           namespace="ops-journal"),
            log_directory=harness.LOG_ROOT + "/ops_journal")
        sid = rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=60).pod_sandbox_id

        def entries():
            out = env.run("journalctl", "--no-pager", "-o", "json", "POD_ID=" + sid,
                          check=False).stdout
            return [json.loads(line) for line in out.splitlines() if line.strip()]
        found = harness.wait_for("a journal entry with the sandbox's ID", entries, timeout=90)
        for e in found:
            self.assertEqual(e["POD_NAME"], "journal")
            self.assertEqual(e["POD_NAMESPACE"], "ops-journal")
            self.assertEqual(e["_SYSTEMD_UNIT"], unit + ".service")
            self.assertIn(sid[:12], e["MESSAGE"])
            self.assertIn("CODE_FILE", e)
        # A line about no object has none of the fields.
        out = env.run("journalctl", "--no-pager", "-o", "json", "_SYSTEMD_UNIT=%s.service" % unit,
                      check=False).stdout
        serving = [json.loads(line) for line in out.splitlines() if "serving CRI" in line]
        self.assertEqual(len(serving), 1)
        self.assertNotIn("POD_ID", serving[0])


if __name__ == "__main__":
    unittest.main()
