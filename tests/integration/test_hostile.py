"""What a hostile or buggy client can send through the CRI socket, through the real daemon:
requests built to cost the daemon memory and time, metadata built to break every List,
log paths built to write where no log may go."""
import os
import signal
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

RUNTIME = "/runtime.v1.RuntimeService/"


def raw_call(channel, method, payload, timeout=60):
    call = channel.unary_unary(RUNTIME + method, request_serializer=lambda x: x,
                               response_deserializer=lambda x: x)
    return call(payload, timeout=timeout)


def proc_kib(pid, field):
    """A /proc/PID/status figure in KiB (VmRSS, VmHWM)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s for %d" % (field, pid))


class FakeRktDaemon(harness.FakeRktCase):
    """Each test's own daemon on the class's stub rkt, and a channel that lets requests past
    grpc's default size so that the daemon's own limits are what answers."""

    def setUp(self):
        self.d = harness.Daemon(harness.workdir(self), rkt_path=self.rkt,
                                bus=self.systemd.address)
        self.addCleanup(self.d.stop, signal.SIGKILL)
        harness.keep_log(self, self.d)
        self.d.start()
        self.ch = grpc.insecure_channel("unix://" + self.d.socket, options=[
            ("grpc.max_send_message_length", 64 << 20),
            ("grpc.max_receive_message_length", 64 << 20)])
        self.addCleanup(self.ch.close)
        self.rs = pbg.RuntimeServiceStub(self.ch)


def pod_config(name="web", labels=None, annotations=None):
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="default"),
        hostname=name, log_directory=harness.LOG_ROOT + "/hostile_" + name,
        labels=labels or {}, annotations=annotations or {})


class RequestCostTest(FakeRktDaemon):
    """protobuf-c merges every occurrence of a message field that is not repeated into the
    ones before (a copy of all it has gathered so far): a request made of one such field
    many times costs the square of its size to unpack. Such requests are refused before
    they are unpacked, and the daemon stays small and answering."""

    def refused(self, method, payload, code, needle):
        with self.assertRaises(grpc.RpcError) as cm:
            raw_call(self.ch, method, payload)
        self.assertEqual(cm.exception.code(), code, cm.exception.details())
        self.assertIn(needle, cm.exception.details())
        return cm.exception.details()

    def test_repeated_fields_refused_before_unpacking(self):
        self.rs.Version(pb.VersionRequest(), timeout=10)
        pid = self.d.proc.pid
        rss_before = proc_kib(pid, "VmRSS")

        # A ListContainersRequest's filter (one label selector), 40,000 times: 400 KB.
        entry = bytes.fromhex("0a0822060a0161120162")
        self.refused("ListContainers", entry * 40000, grpc.StatusCode.RESOURCE_EXHAUSTED,
                     "65536 bytes")
        # Within ListContainers' size, the same filter 6,000 times.
        self.refused("ListContainers", entry * 6000, grpc.StatusCode.INVALID_ARGUMENT,
                     "'filter'")
        # RunPodSandbox of 8 MB: its config (a label each) repeated.
        cfg = pb.RunPodSandboxRequest(config=pb.PodSandboxConfig(
            labels={"a": "b"})).SerializeToString()
        self.refused("RunPodSandbox", cfg * (8_000_000 // len(cfg)),
                     grpc.StatusCode.RESOURCE_EXHAUSTED, "bytes")
        # Within its size: the config repeated, then labels past the count of fields.
        self.refused("RunPodSandbox", cfg * 100_000, grpc.StatusCode.INVALID_ARGUMENT,
                     "'config'")
        # One config of 100,000 labels (800 KB): more fields than RunPodSandbox takes.
        label = pb.PodSandboxConfig(labels={"a": "b"}).SerializeToString()
        one_config = b"\x0a" + _varint(len(label) * 100_000) + label * 100_000
        self.refused("RunPodSandbox", one_config, grpc.StatusCode.RESOURCE_EXHAUSTED,
                     "fields")

        # Still answering, and small: the requests above, unpacked, would take gigabytes.
        self.assertEqual(self.rs.Version(pb.VersionRequest(), timeout=10).runtime_name,
                         "rktlet")
        self.assertIsNone(self.d.proc.poll())
        grown = proc_kib(pid, "VmHWM") - rss_before
        print("[figure] peak RSS grew by %d KiB over the costly requests" % grown)
        self.assertLess(grown, 256 * 1024)

    def test_ordinary_requests_still_pass(self):
        """What kubelet sends is far inside the limits: a sandbox with 100 KiB of
        annotations and a label selector are accepted."""
        ann = {"k%d" % i: "v" * 1000 for i in range(100)}
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(
            config=pod_config(labels={"app": "web"}, annotations=ann)),
            timeout=10).pod_sandbox_id
        items = self.rs.ListPodSandbox(pb.ListPodSandboxRequest(
            filter=pb.PodSandboxFilter(label_selector={"app": "web"})), timeout=10).items
        self.assertEqual([p.id for p in items], [sid])


class MetadataTest(FakeRktDaemon):
    """Labels and annotations are answered in every List: one client's megabytes of them
    must not break kubelet's relist."""

    def test_oversized_metadata_refused(self):
        # The five sandboxes of 4 MiB of annotations: past RunPodSandbox's size.
        big = {"a%d" % i: "x" * 65536 for i in range(64)}
        with self.assertRaises(grpc.RpcError) as cm:
            self.rs.RunPodSandbox(pb.RunPodSandboxRequest(
                config=pod_config("big", annotations=big)), timeout=30)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        # Within it, but past 256 KiB of annotations, or of labels: refused naming the field.
        over = {"a%d" % i: "x" * 65536 for i in range(4)}
        for field, kw in (("config.annotations", {"annotations": over}),
                          ("config.labels", {"labels": over})):
            with self.assertRaises(grpc.RpcError) as cm:
                self.rs.RunPodSandbox(pb.RunPodSandboxRequest(
                    config=pod_config("over", **kw)), timeout=30)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(field, cm.exception.details())
            self.assertIn("262144", cm.exception.details())
        self.assertEqual(
            len(self.rs.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=10).items), 0)


class ListFitsTest(FakeRktDaemon):
    """An unfiltered List answers every object whatever they hold: what would not fit goes out
    with less of its labels and annotations, kubelet's own kept longest."""

    KUBELET = {"io.kubernetes.pod.terminationGracePeriod": "30"}

    def list_all(self):
        return list(self.rs.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=60).items)

    def test_many_large_sandboxes(self):
        # 66 sandboxes of just under 256 KiB of annotations each: 16.7 MB, accepted one by one.
        ann = dict(self.KUBELET, **{"big%d" % k: "x" * (255 * 256) for k in range(4)})
        ids = set()
        for i in range(66):
            ids.add(self.rs.RunPodSandbox(pb.RunPodSandboxRequest(
                config=pod_config("p%d" % i, labels={"app": "p%d" % i}, annotations=ann)),
                timeout=30).pod_sandbox_id)
        items = self.list_all()
        self.assertEqual({p.id for p in items}, ids)
        trimmed = [p for p in items if "big0" not in p.annotations]
        self.assertTrue(0 < len(trimmed) < 66, len(trimmed))
        for p in items:
            self.assertEqual(p.annotations["io.kubernetes.pod.terminationGracePeriod"], "30")
            self.assertEqual(p.labels["app"], p.metadata.name)
        self.d.wait_log("ListPodSandbox: its answer of")
        # One sandbox asked for is whole.
        one = self.rs.ListPodSandbox(pb.ListPodSandboxRequest(filter=pb.PodSandboxFilter(
            id=trimmed[0].id)), timeout=60).items
        self.assertEqual(dict(one[0].annotations), ann)

    def test_records_of_an_older_database(self):
        """The issue's state: five sandboxes of 4 MiB of annotations, accepted before any
        cap (written into the database here), after which every unfiltered List failed."""
        import json
        import sqlite3
        ids = [self.rs.RunPodSandbox(pb.RunPodSandboxRequest(
            config=pod_config("old%d" % i, annotations=self.KUBELET)), timeout=30).pod_sandbox_id
            for i in range(5)]
        self.assertEqual(self.d.stop(), 0)
        ann = dict(self.KUBELET, **{"a%d" % k: "x" * 65536 for k in range(64)})
        db = sqlite3.connect(os.path.join(self.d.state_dir, "rktlet.db"))
        with db:
            db.executemany("UPDATE sandbox SET annotations = ? WHERE id = ?",
                           [(json.dumps(ann), i) for i in ids])
        db.close()
        self.d.start()
        harness.wait_answering(self.rs)
        items = self.list_all()
        self.assertEqual(sorted(p.id for p in items), sorted(ids))
        for p in items:
            self.assertEqual(p.annotations["io.kubernetes.pod.terminationGracePeriod"], "30")
        self.assertTrue(any(len(p.annotations) == 1 for p in items))
        st = self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=ids[0]),
                                      timeout=60).status
        self.assertEqual(len(st.annotations), 65)


class LogPlacementTest(FakeRktDaemon):
    """Container logs go where the client says, within what may hold a log: not through a
    symlink to /, not into the daemon's own files, never into a file rktlet did not make."""

    def run_pod(self, log_directory):
        return self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="logs", uid="logs-uid", namespace="default"),
            log_directory=log_directory)), timeout=30).pod_sandbox_id

    def create(self, sid, log_path, name="c"):
        return self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=pb.ContainerConfig(
                metadata=pb.ContainerMetadata(name=name), image=pb.ImageSpec(image="busybox"),
                command=["sleep", "1000"], log_path=log_path)), timeout=30).container_id

    def start(self, cid):
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=30)

    def invalid(self, fn, *args):
        with self.assertRaises(grpc.RpcError) as cm:
            fn(*args)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT,
                         cm.exception.details())
        return cm.exception.details()

    def test_symlink_to_root_refused(self):
        link = os.path.join(self.d.workdir, "root-link")
        os.symlink("/", link)
        details = self.invalid(self.run_pod, link)
        self.assertIn("log_directory", details)
        self.assertIn("'/'", details)
        self.assertIn("not a log directory", self.invalid(self.run_pod, "/"))

    def test_daemon_files_refused(self):
        # The parent of --state-dir and of rkt's data dir is an acceptable log directory;
        # the daemon's database, a new file beside it and rkt's data are not log paths.
        sid = self.run_pod(self.d.workdir)
        db = os.path.join(self.d.state_dir, "rktlet.db")
        for path in ("state/rktlet.db", "state/x.log", "rkt/x.log"):
            details = self.invalid(self.create, sid, path)
            self.assertIn("log_path", details)
            self.assertIn("the daemon's own directory", details)
        self.assertFalse(os.path.exists(os.path.join(self.d.state_dir, "x.log")))
        with open(db, "rb") as f:
            self.assertEqual(f.read(16), b"SQLite format 3\x00")

    def test_foreign_file_not_written(self):
        logdir = os.path.join(harness.LOG_ROOT, "hostile_foreign_" + self.id().split(".")[-1])
        os.makedirs(os.path.join(logdir, "c"))
        foreign = os.path.join(logdir, "c", "0.log")
        with open(foreign, "w") as f:
            f.write("someone's\n")
        os.chmod(foreign, 0o600)
        sid = self.run_pod(logdir)
        cid = self.create(sid, "c/0.log")
        details = self.invalid(self.start, cid)
        self.assertIn("not the log file rktlet made", details)
        with open(foreign) as f:
            self.assertEqual(f.read(), "someone's\n")
        self.assertEqual(os.stat(foreign).st_mode & 0o777, 0o600)
        # Its own file: made at the start, and a repeated start keeps it.
        cid2 = self.create(sid, "c/1.log", name="d")
        self.start(cid2)
        self.start(cid2)
        own = os.path.join(logdir, "c", "1.log")
        self.assertEqual(os.stat(own).st_mode & 0o777, 0o640)

    def test_directory_swapped_after_the_check(self):
        logdir = os.path.join(self.d.workdir, "swapped")
        os.makedirs(logdir)
        sid = self.run_pod(logdir)
        cid = self.create(sid, "x.log")
        os.rmdir(logdir)
        os.symlink(self.d.state_dir, logdir)
        details = self.invalid(self.start, cid)
        self.assertIn("the daemon's own directory", details)
        self.assertFalse(os.path.exists(os.path.join(self.d.state_dir, "x.log")))


def _varint(n):
    out = b""
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


if __name__ == "__main__":
    unittest.main()
