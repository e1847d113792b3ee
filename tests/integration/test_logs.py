"""Container logs end to end on the real rkt 1.30.0: what the app prints reaches
log_directory/log_path in kubelet's format (CRI), exactly once, through a kill -9 of the
daemon and a ReopenContainerLog; the paths are confined. Skipped when the real rkt cannot be
built here. Counts are asserted, times never."""
import glob
import os
import re
import signal
import stat
import time

import grpc

import harness
import test_rkt

pb, pbg = harness.stubs()

RECORD = re.compile(r"^(\S+) (stdout|stderr) ([PF]) (.*)$", re.S)


def records(path):
    """The file's CRI records as (stream, tag, content); every line must parse."""
    with open(path, "rb") as f:
        data = f.read()
    out = []
    for line in data.split(b"\n")[:-1]:
        m = RECORD.match(line.decode("utf-8", "surrogateescape"))
        if not m:
            raise AssertionError("not a CRI log record: %r" % line[:200])
        out.append((m.group(2), m.group(3), m.group(4)))
    assert data.endswith(b"\n") or not data, "the file ends inside a record"
    return out


def lines(recs, stream=None, ended=False):
    """The app's lines, P pieces joined up to their F; with ended (the app is gone), P pieces
    with no F after them too: its output ended without a newline (docs/logs.md)."""
    out, cur = [], ""
    for s, tag, content in recs:
        if stream and s != stream:
            continue
        cur += content
        if tag == "F":
            out.append(cur)
            cur = ""
    if ended and cur:
        out.append(cur)
    return out


class LogsTest(test_rkt.RealRktBase):
    def container(self, sid, cfg, name, script, log_path=None):
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                image=pb.ImageSpec(image=test_rkt.BUSYBOX),
                                command=["sh", "-c", script],
                                log_path=log_path or name + "/0.log")
        cid = self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10).container_id
        return cid, os.path.join(cfg.log_directory, cc.log_path)

    def wait_lines(self, path, n, stream=None, timeout=120):
        return harness.wait_for("%d lines in %s" % (n, path), lambda: os.path.exists(path) and (
            lambda got: len(got) >= n and got)(lines(records(path), stream)), timeout=timeout,
            interval=0.2)

    def rkt_lines(self, sid):
        """What rkt's iottymux wrote to its own file for the sandbox's newest container, as
        (stdout lines, stderr lines): "<time> <stream> <line>" records."""
        files = sorted(glob.glob(os.path.join(self.env.daemon.state_dir, "pods", sid, "logs",
                                              "*.log")), key=os.path.getmtime)
        out = {"stdout": [], "stderr": []}
        if files:
            with open(files[-1], errors="replace") as f:
                for rec in f.read().split("\n"):
                    parts = rec.split(" ", 2)
                    if len(parts) == 3 and parts[1] in out:
                        out[parts[1]].append(parts[2])
        return out["stdout"], out["stderr"]

    def whole(self, sid, path, stdout, stderr, what="the container"):
        """At the exit, the log holds every line rkt wrote (rktlet's part: a failure here is
        rktlet's). Returns whether those were all the app's lines: rkt still loses some
        now and then (docs/logs.md), which the callers count and bound."""
        def short(ls):
            return [ln if len(ln) < 40 else "%s...(%d)" % (ln[:8], len(ln)) for ln in ls[-4:]]
        got = (lines(records(path), "stdout", True), lines(records(path), "stderr", True))
        rkt = self.rkt_lines(sid)
        if got == rkt:
            if got != (stdout, stderr):
                print("\n[figure] %s: rkt wrote %d+%d of %d+%d lines, ending %r/%r" % (
                    what, len(rkt[0]), len(rkt[1]), len(stdout), len(stderr), short(rkt[0]),
                    short(rkt[1])))
            return got == (stdout, stderr)
        time.sleep(6)  # late, or never?
        later = (lines(records(path), "stdout", True), lines(records(path), "stderr", True))
        self.fail("%s: at the exit %d+%d lines ending %r/%r, 6 s later %d+%d ending %r/%r; "
                  "rkt's file %d+%d ending %r/%r" % (
                      what, len(got[0]), len(got[1]), short(got[0]), short(got[1]),
                      len(later[0]), len(later[1]), short(later[0]), short(later[1]),
                      len(rkt[0]), len(rkt[1]), short(rkt[0]), short(rkt[1])))

    def test_format_and_file(self):
        self.pull()
        sid, cfg, _ = self.run_pod("fmt")
        script = ("sleep 2; echo out1; echo err1 >&2; echo; printf '%020000d\\n' 0; "
                  "echo out2; printf last")
        # A second container when rkt lost a line of the first (not rktlet's doing).
        for k in range(2):
            cid, path = self.container(sid, cfg, "fmt%d" % k, script)
            self.start(cid)
            # There from StartContainer on, before the app printed anything, 0640 and root's.
            st = os.stat(path)
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o640)
            self.assertEqual((st.st_uid, st.st_gid), (0, 0))
            self.wait_state(cid, pb.CONTAINER_EXITED)
            # All there once it is reported exited. Each line under its stream, stderr's
            # too (packaging/rkt/stderr-fd.patch); iottymux reads the two apart, so their
            # lines may interleave either way. The last line has no newline: rkt lost it
            # before packaging/rkt/stream-drain.patch (docs/logs.md).
            if self.whole(sid, path, ["out1", "", "0" * 20000, "out2", "last"], ["err1"]):
                break
        else:
            self.fail("rkt lost lines of both containers")
        recs = records(path)
        long = [r for r in recs if set(r[2]) == {"0"}]
        self.assertEqual([(r[1], len(r[2])) for r in long], [("P", 16384), ("F", 3616)])
        self.stop_remove(sid)

    def test_whole_on_exit(self):
        """A client that reads the log as soon as the container is reported exited (what
        critest and `kubectl logs` of a finished job do) reads every line: rkt's iottymux
        writes the last ones after the app's exit, and the exit waits for them."""
        self.pull()
        sid, cfg, _ = self.run_pod("whole")
        n, runs = 300, 6
        want = ["line %d" % i for i in range(1, n + 1)]
        complete = 0
        for k in range(runs):
            cid, path = self.container(
                sid, cfg, "whole%d" % k,
                "i=0; while [ $i -lt %d ]; do i=$((i+1)); echo line $i; done; echo bye >&2" % n)
            self.start(cid)
            self.wait_state(cid, pb.CONTAINER_EXITED)
            complete += self.whole(sid, path, want, ["bye"], "container %d" % k)
        print("\n[figure] rkt wrote all of the output of %d of %d containers" % (complete, runs))
        # rkt's losses are counted apart (docs/logs.md): before stream-drain.patch most
        # containers lost lines, before its last fixes about 1 in 100 under load.
        self.assertGreaterEqual(complete, runs - 1)
        self.stop_remove(sid)

    def test_kill_9_while_printing(self):
        """Every line exactly once, in order, though the daemon was killed mid-stream and
        lines were printed while it was down."""
        self.pull()
        sid, cfg, _ = self.run_pod("kill")
        n = 30000
        cid, path = self.container(
            sid, cfg, "kill", "i=0; while [ $i -lt %d ]; do i=$((i+1)); echo line $i; "
            "[ $((i %% 1000)) = 0 ] && sleep 0.2; done" % n)
        self.start(cid)
        self.wait_lines(path, 3000)
        self.env.daemon.stop(signal.SIGKILL)
        self.env.daemon.start(wrapper=self.env.enter)
        self.connect()
        harness.wait_answering(self.rs)
        self.wait_state(cid, pb.CONTAINER_EXITED, timeout=120)
        got = self.wait_lines(path, n)
        self.assertEqual(got, ["line %d" % i for i in range(1, n + 1)])
        self.stop_remove(sid)

    def test_reopen(self):
        """kubelet's rotation: rename, ReopenContainerLog; every line in one of the two."""
        self.pull()
        sid, cfg, _ = self.run_pod("rot")
        n = 4000
        cid, path = self.container(
            sid, cfg, "rot", "i=0; while [ $i -lt %d ]; do i=$((i+1)); echo line $i; "
            "[ $((i %% 100)) = 0 ] && sleep 0.1; done; sleep 1" % n)
        self.start(cid)
        self.wait_lines(path, 500)
        os.rename(path, path + ".1")
        self.rs.ReopenContainerLog(pb.ReopenContainerLogRequest(container_id=cid), timeout=10)
        self.assertTrue(os.path.exists(path))
        self.wait_state(cid, pb.CONTAINER_EXITED, timeout=120)
        harness.wait_for("all lines", lambda: len(lines(records(path + ".1"))) +
                         len(lines(records(path))) >= n, timeout=60, interval=0.2)
        first, second = lines(records(path + ".1")), lines(records(path))
        self.assertTrue(first and second)
        self.assertEqual(first + second, ["line %d" % i for i in range(1, n + 1)])
        # An exited container has no log to reopen.
        with self.assertRaises(grpc.RpcError) as e:
            self.rs.ReopenContainerLog(pb.ReopenContainerLogRequest(container_id=cid),
                                       timeout=10)
        self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.stop_remove(sid)


class PathsTest(test_rkt.RealRktBase):
    def test_confined(self):
        def run(log_directory):
            cfg = pb.PodSandboxConfig(
                metadata=pb.PodSandboxMetadata(name="p", uid="p-uid", namespace="e2e"),
                log_directory=log_directory)
            return self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=10)

        link = os.path.join(self.env.dir, "etc-link")
        os.symlink("/etc", link)
        for bad in ("relative/dir", "/", "/etc", "/etc/pods", link,
                    os.path.join(self.env.daemon.state_dir, "x"), "/var/../etc"):
            with self.assertRaises(grpc.RpcError, msg=bad) as e:
                run(bad)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, bad)
            self.assertIn("log_directory", e.exception.details())

        logs = os.path.join(self.env.dir, "logs", "p")
        os.makedirs(logs)
        os.symlink("/etc", os.path.join(logs, "out"))
        sid = run(logs).pod_sandbox_id
        self.sandboxes.append(sid)
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="p", uid="p-uid", namespace="e2e"),
            log_directory=logs)
        for bad in ("/abs.log", "../up.log", "a/../../up.log", "./x.log", "out/passwd"):
            cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="c" + str(len(bad))),
                                    image=pb.ImageSpec(image=test_rkt.BUSYBOX),
                                    log_path=bad)
            with self.assertRaises(grpc.RpcError, msg=bad) as e:
                self.rs.CreateContainer(pb.CreateContainerRequest(
                    pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, bad)
            self.assertIn("log_path", e.exception.details())
        self.stop_remove(sid)
