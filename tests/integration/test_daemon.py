"""The daemon through its real interfaces: gRPC on a unix socket, a real systemd manager,
signals, sd_notify, flags."""
import concurrent.futures
import os
import signal
import socket
import stat
import subprocess
import threading
import time
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

ALL_METHODS = [("RuntimeService", m.name, m.input_type._concrete_class, m.server_streaming)
               for m in pb.DESCRIPTOR.services_by_name["RuntimeService"].methods] + \
              [("ImageService", m.name, m.input_type._concrete_class, m.server_streaming)
               for m in pb.DESCRIPTOR.services_by_name["ImageService"].methods]


def raw_call(channel, path, payload, timeout=5):
    call = channel.unary_unary(path, request_serializer=lambda x: x,
                               response_deserializer=lambda x: x)
    return call(payload, timeout=timeout)


def raw_stream(channel, path, payload, endless=False, timeout=5):
    """A server-streaming call read to its end (raising its error); an endless one
    (GetContainerEvents) only until it began, then cancelled."""
    call = channel.unary_stream(path, request_serializer=lambda x: x,
                                response_deserializer=lambda x: x)(payload, timeout=timeout)
    if not endless:
        return list(call)
    call.initial_metadata()
    began = not call.done()
    call.cancel()
    return began


class DaemonTest(harness.FakeRktCase):
    def daemon(self, **kw):
        kw.setdefault("rkt_path", self.rkt)
        kw.setdefault("bus", self.systemd.address)
        d = harness.Daemon(harness.workdir(self), **kw)
        self.addCleanup(d.stop, signal.SIGKILL)
        return d

    def runtime(self, d):
        ch = d.channel()
        self.addCleanup(ch.close)
        return pbg.RuntimeServiceStub(ch), ch

    def test_version(self):
        d = self.daemon().start()
        rs, _ = self.runtime(d)
        v = rs.Version(pb.VersionRequest(version="v1"), timeout=5)
        self.assertEqual(v.runtime_name, "rktlet")
        self.assertEqual(v.runtime_api_version, "v1")
        self.assertTrue(v.version)
        # rkt's version rides along once rkt has been probed: Status waits for that probe
        # (Version does not, and leaves it out until then).
        rs.Status(pb.StatusRequest(), timeout=30)
        v = rs.Version(pb.VersionRequest(version="v1"), timeout=5)
        self.assertTrue(v.runtime_version.endswith("+rkt.1.30.0"), v.runtime_version)

    def conditions(self, rs, verbose=False):
        st = rs.Status(pb.StatusRequest(verbose=verbose), timeout=5)
        return {c.type: c for c in st.status.conditions}, dict(st.info)

    def test_status_ready(self):
        d = self.daemon().start()
        rs, _ = self.runtime(d)
        conds, info = self.conditions(rs)
        self.assertTrue(conds["RuntimeReady"].status)
        self.assertTrue(conds["NetworkReady"].status)
        self.assertEqual(info, {})
        _, info = self.conditions(rs, verbose=True)
        self.assertIn('"usable":true', info["rkt"])
        self.assertIn('"patched":true', info["rkt"])
        self.assertIn('"reachable":true', info["systemd"])
        self.assertIn(self.rkt, info["config"])

    def test_status_rkt_missing(self):
        d = self.daemon(rkt_path="/nonexistent/rkt").start()
        rs, _ = self.runtime(d)
        conds, _ = self.conditions(rs)
        self.assertFalse(conds["RuntimeReady"].status)
        self.assertEqual(conds["RuntimeReady"].reason, "RktUnavailable")
        self.assertIn("/nonexistent/rkt", conds["RuntimeReady"].message)
        self.assertFalse(conds["NetworkReady"].status)

    def test_status_rkt_not_runnable(self):
        wd = harness.workdir(self)
        bad = os.path.join(wd, "rkt")
        with open(bad, "w") as f:
            f.write("#!/bin/sh\necho 'segfault' >&2\nexit 2\n")
        os.chmod(bad, 0o755)
        d = self.daemon(rkt_path=bad).start()
        rs, _ = self.runtime(d)
        conds, _ = self.conditions(rs)
        self.assertFalse(conds["RuntimeReady"].status)
        self.assertIn("exit status 2", conds["RuntimeReady"].message)

    def test_status_rkt_unpatched(self):
        """An rkt without rktlet's fixes runs, and Status says at once what it lacks: a copy
        without its build record, then one whose record lacks a patch."""
        wd = harness.workdir(self)
        copy = os.path.join(wd, "elsewhere", "rkt")
        os.makedirs(os.path.dirname(copy))
        subprocess.run(["cp", self.rkt, copy], check=True)
        d = self.daemon(rkt_path=copy, extra=["--probe-interval", "1"]).start()
        rs, _ = self.runtime(d)
        conds, info = self.conditions(rs, verbose=True)
        self.assertFalse(conds["RuntimeReady"].status)
        self.assertEqual(conds["RuntimeReady"].reason, "RktUnpatched")
        self.assertIn("has no build record '%s.patches'" % copy, conds["RuntimeReady"].message)
        self.assertIn('"patched":false', info["rkt"])
        self.assertIn("lacks rktlet's fixes", d.log())

        harness.write_rkt_record(copy)
        with open(copy + ".patches") as f:
            record = [line for line in f if "stream-drain.patch" not in line]
        with open(copy + ".patches", "w") as f:
            f.writelines(record)
        harness.wait_for("the record read again", lambda: "without stream-drain" in self.conditions(
            rs)[0]["RuntimeReady"].message, timeout=15)
        self.assertEqual(self.conditions(rs)[0]["RuntimeReady"].reason, "RktUnpatched")

        harness.write_rkt_record(copy)
        harness.wait_for("RuntimeReady", lambda: self.conditions(rs)[0]["RuntimeReady"].status,
                         timeout=15)

    def test_status_systemd_unreachable(self):
        wd = harness.workdir(self)
        d = self.daemon(bus="unix:path=" + os.path.join(wd, "no-such-socket")).start()
        rs, _ = self.runtime(d)
        conds, _ = self.conditions(rs)
        self.assertFalse(conds["RuntimeReady"].status)
        self.assertEqual(conds["RuntimeReady"].reason, "SystemdUnreachable")
        self.assertTrue(conds["RuntimeReady"].message)
        # The network is rkt's business: it stays ready.
        self.assertTrue(conds["NetworkReady"].status)

    def test_status_follows_rkt(self):
        wd = harness.workdir(self)
        rkt = harness.fake_rkt(wd)
        d = self.daemon(rkt_path=rkt, extra=["--probe-interval", "1"]).start()
        rs, _ = self.runtime(d)
        self.assertTrue(self.conditions(rs)[0]["RuntimeReady"].status)
        # Gone, back, gone again: the probe keeps running (a timer that fired once only
        # would pass the first change and miss the next).
        for present in (False, True, False):
            if present:
                harness.fake_rkt(wd)
            else:
                os.unlink(rkt)
            harness.wait_for("RuntimeReady %s" % present, lambda: self.conditions(rs)[0][
                "RuntimeReady"].status == present, timeout=15)

    def test_every_method_answers(self):
        """All 43 CRI paths answer: implemented, or UNIMPLEMENTED naming the method."""
        self.assertEqual(len(ALL_METHODS), 43)
        d = self.daemon().start()
        _, ch = self.runtime(d)
        implemented = 0
        for service, name, req_class, streaming in ALL_METHODS:
            path = "/runtime.v1.%s/%s" % (service, name)
            payload = req_class().SerializeToString()
            try:
                if not streaming:
                    raw_call(ch, path, payload)
                elif name == "GetContainerEvents":
                    self.assertTrue(raw_stream(ch, path, payload, endless=True), path)
                else:
                    raw_stream(ch, path, payload)
                implemented += 1
            except grpc.RpcError as e:
                self.assertNotIn(e.code(), (grpc.StatusCode.UNKNOWN,
                                            grpc.StatusCode.DEADLINE_EXCEEDED), path)
                if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                    self.assertIn("%s/%s" % (service, name), e.details())
        self.assertGreaterEqual(implemented, 3)

    def test_checkpoint_says_why(self):
        """rkt 1.30 has no checkpoint and restore: the three calls say so."""
        d = self.daemon().start()
        rs, _ = self.runtime(d)
        for call, req in ((rs.CheckpointContainer, pb.CheckpointContainerRequest(
                              container_id="abc", location="/tmp/x.tar")),
                          (rs.CheckpointPod, pb.CheckpointPodRequest(pod_sandbox_id="abc")),
                          (rs.RestorePod, pb.RestorePodRequest(path="/tmp/x"))):
            with self.assertRaises(grpc.RpcError) as cm:
                call(req, timeout=5)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
            self.assertIn("no CRIU integration", cm.exception.details())

    def test_garbage_payload(self):
        d = self.daemon().start()
        _, ch = self.runtime(d)
        for payload in (b"\xff\xff\xff\xff", b"\x0a\x05ab"):
            with self.assertRaises(grpc.RpcError) as cm:
                raw_call(ch, "/runtime.v1.RuntimeService/Status", payload)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("StatusRequest", cm.exception.details())
        # The daemon is still fine.
        rs, _ = self.runtime(d)
        self.assertEqual(rs.Version(pb.VersionRequest(), timeout=5).runtime_name, "rktlet")

    def test_unknown_path(self):
        d = self.daemon().start()
        _, ch = self.runtime(d)
        with self.assertRaises(grpc.RpcError) as cm:
            raw_call(ch, "/runtime.v1alpha2.RuntimeService/Version", b"")
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertIn("v1alpha2", cm.exception.details())

    def test_message_limit(self):
        d = self.daemon().start()
        _, ch = self.runtime(d)
        big = pb.StatusRequest().SerializeToString() + b"\x92\x01" + b"\x80\x80\x80\x09" \
            + b"x" * (17 << 20)
        with self.assertRaises(grpc.RpcError) as cm:
            raw_call(ch, "/runtime.v1.RuntimeService/Status", big, timeout=30)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)

    def test_socket_mode(self):
        d = self.daemon().start()
        st = os.stat(d.socket)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)

    def test_clean_shutdown(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            d = self.daemon().start()
            rs, _ = self.runtime(d)
            rs.Version(pb.VersionRequest(), timeout=5)
            self.assertEqual(d.stop(sig), 0)
            self.assertFalse(os.path.exists(d.socket))

    def test_shutdown_under_load(self):
        """SIGTERM while clients hammer the socket: exit 0, socket gone, no crash."""
        d = self.daemon().start()
        stop = threading.Event()
        errors = []

        def client():
            ch = d.channel()
            rs = pbg.RuntimeServiceStub(ch)
            while not stop.is_set():
                try:
                    rs.Status(pb.StatusRequest(verbose=True), timeout=2)
                except grpc.RpcError as e:
                    if e.code() not in (grpc.StatusCode.UNAVAILABLE,
                                        grpc.StatusCode.CANCELLED):
                        errors.append(e)
            ch.close()

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            futs = [pool.submit(client) for _ in range(8)]
            time.sleep(0.5)
            rc = d.stop(signal.SIGTERM)
            stop.set()
            for f in futs:
                f.result()
        self.assertEqual(rc, 0, d.log())
        self.assertEqual(errors, [])
        self.assertFalse(os.path.exists(d.socket))

    def test_sd_notify_ready(self):
        wd = harness.workdir(self)
        path = os.path.join(wd, "notify")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(path)
        self.addCleanup(s.close)
        d = self.daemon(env=dict(os.environ, NOTIFY_SOCKET=path)).start()
        s.settimeout(10)
        msg = s.recv(4096).decode()
        self.assertIn("READY=1", msg)
        self.assertEqual(d.stop(), 0)
        self.assertIn("STOPPING=1", s.recv(4096).decode())

    def run_daemon_expect_failure(self, args):
        if "--state-dir" in args and "--rkt-data-dir" not in args:
            # Not the default /var/lib/rktlet/data: the machine's, which a daemon that gets as
            # far as its reconciler makes.
            args = args + ["--rkt-data-dir", os.path.join(harness.LOG_ROOT, "rkt-data")]
        p = subprocess.run([harness.DAEMON] + args, capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        return p

    def test_bad_flags(self):
        for args, needle in ((["--bogus"], "--bogus"), (["--log-level", "loud"], "loud"),
                             (["--api-threads", "0"], "--api-threads"), (["extra"], "extra"),
                             (["--listen"], "--listen")):
            p = self.run_daemon_expect_failure(args)
            self.assertEqual(p.returncode, 2)
            self.assertIn(needle, p.stderr)

    def test_help_and_version(self):
        p = subprocess.run([harness.DAEMON, "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        for flag in ("--listen", "--state-dir", "--rkt-path", "--rkt-data-dir",
                     "--systemd-bus", "--log-level"):
            self.assertIn(flag, p.stdout)
        p = subprocess.run([harness.DAEMON, "--version"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("rktlet", p.stdout)

    def test_every_documented_flag_is_accepted(self):
        """Each option --help names parses (a flag in the help but not in the option table
        was once rejected as unknown)."""
        samples = {"--listen": "/tmp/x.sock", "--socket-group": "0", "--state-dir": "/tmp/x",
                   "--rkt-path": "/bin/true", "--rkt-data-dir": "/tmp/y",
                   "--systemd-bus": "system", "--api-threads": "1", "--net": "default",
                   "--stage1-name": "coreos.com/rkt/stage1-host:1.30.0", "--max-actions": "2",
                   "--probe-interval": "5", "--stats-interval": "10", "--log-level": "info",
                   "--registry-mirror": "docker.io=http://127.0.0.1:5000",
                   "--sandbox-ready-timeout": "30", "--rkt-timeout": "60",
                   "--metrics-address": "127.0.0.1:9101", "--stream-address": "127.0.0.1:0",
                   "--cni-conf-dir": "/tmp/cni", "--cni-bin-dir": "/usr/lib/cni",
                   "--cni-timeout": "30", "--stream-netns": "/proc/self/ns/net", "--config": ""}
        import re
        text = subprocess.run([harness.DAEMON, "--help"], capture_output=True, text=True).stdout
        flags = re.findall(r"^\s+(--[a-z0-9-]+)( [A-Z=]+)?", text, re.M)
        self.assertGreater(len(flags), 10)
        for flag, arg in flags:
            if flag in ("--help", "--version"):
                continue
            args = [flag] + ([samples[flag]] if arg else [])
            p = subprocess.run([harness.DAEMON] + args + ["--version"], capture_output=True,
                               text=True, timeout=10)
            self.assertEqual(p.returncode, 0, "%s: %s" % (" ".join(args), p.stderr))

    def test_socket_path_is_a_file(self):
        wd = harness.workdir(self)
        path = os.path.join(wd, "rktlet.sock")
        with open(path, "w") as f:
            f.write("precious")
        p = self.run_daemon_expect_failure(["--listen", path, "--state-dir", wd + "/s",
                                            "--rkt-path", self.rkt])
        self.assertIn("not a socket", p.stderr)
        with open(path) as f:
            self.assertEqual(f.read(), "precious")

    def test_socket_in_use(self):
        d = self.daemon().start()
        p = self.run_daemon_expect_failure(["--listen", d.socket, "--state-dir",
                                            d.state_dir + "2", "--rkt-path", self.rkt])
        self.assertIn("another process is listening", p.stderr)
        rs, _ = self.runtime(d)
        self.assertEqual(rs.Version(pb.VersionRequest(), timeout=5).runtime_name, "rktlet")

    def test_store_created_private(self):
        d = self.daemon().start()
        db = os.path.join(d.state_dir, "rktlet.db")
        self.assertEqual(stat.S_IMODE(os.stat(db).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(d.state_dir).st_mode), 0o700)
        # Operators can read it while the daemon runs.
        out = subprocess.run(["sqlite3", "-readonly", db, "SELECT count(*) FROM sandboxes"],
                             capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.strip(), "0")

    def test_corrupt_store_refused(self):
        wd = harness.workdir(self)
        state = os.path.join(wd, "state")
        os.makedirs(state)
        db = os.path.join(state, "rktlet.db")
        garbage = b"this is not a database " * 100
        with open(db, "wb") as f:
            f.write(garbage)
        p = self.run_daemon_expect_failure(["--listen", os.path.join(wd, "s.sock"),
                                            "--state-dir", state, "--rkt-path", self.rkt])
        self.assertIn("rktlet.db", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(wd, "s.sock")))
        with open(db, "rb") as f:
            self.assertEqual(f.read(), garbage)

    def test_damaged_store_stops_before_writing(self):
        """A file that opens but fails quick_check: the check runs while the daemon starts
        serving reads; writes wait for it, so the daemon stops without writing."""
        d = self.daemon().start()
        self.assertEqual(d.stop(), 0)
        db = os.path.join(d.state_dir, "rktlet.db")
        out = subprocess.run(["sqlite3", "-readonly", db, "PRAGMA page_size; SELECT rootpage "
                              "FROM sqlite_schema WHERE name = 'sqlite_autoindex_container_1'"],
                             capture_output=True, text=True, check=True).stdout.split()
        page_size, root = int(out[0]), int(out[1])
        # An index that loading the cache never reads: only the check finds it.
        with open(db, "r+b") as f:
            f.seek((root - 1) * page_size)
            f.write(b"\xa5" * page_size)
        with open(db, "rb") as f:
            before = f.read()
        p = self.run_daemon_expect_failure(["--listen", d.socket, "--state-dir", d.state_dir,
                                            "--rkt-path", self.rkt])
        self.assertIn("damaged", p.stderr)
        # The reconciler waited for the check, and acted on nothing loaded from the file.
        self.assertIn("reconciler: not starting", p.stderr)
        with open(db, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_newer_store_refused(self):
        d = self.daemon().start()
        self.assertEqual(d.stop(), 0)
        db = os.path.join(d.state_dir, "rktlet.db")
        subprocess.run(["sqlite3", db, "PRAGMA user_version = 9999"], check=True)
        p = self.run_daemon_expect_failure(["--listen", d.socket, "--state-dir", d.state_dir,
                                            "--rkt-path", self.rkt])
        self.assertIn("newer", p.stderr)

    def test_stale_socket_replaced(self):
        d = self.daemon().start()
        d.stop(signal.SIGKILL)
        self.assertTrue(os.path.exists(d.socket))  # SIGKILL leaves it behind
        d2 = harness.Daemon(d.workdir, rkt_path=self.rkt, bus=self.systemd.address).start()
        self.addCleanup(d2.stop, signal.SIGKILL)
        rs, _ = self.runtime(d2)
        self.assertEqual(rs.Version(pb.VersionRequest(), timeout=5).runtime_name, "rktlet")


if __name__ == "__main__":
    unittest.main()
