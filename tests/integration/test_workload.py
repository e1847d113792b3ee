"""A kubelet-shaped workload on the real rkt 1.30.0, at a scale and a rate the real kubelet's
test (test_kubelet.py) does not reach, with every call's answer checked: kubelet's
behaviour, built from what kubelet does to a runtime:

- pod workers, one thread a pod, creating pods and their containers concurrently
  (RunPodSandbox with --wait, CreateContainer, StartContainer);
- the PLEG's relist every second (ListPodSandbox, ListContainers) and the housekeeping's stats
  every ten (ListContainerStats, ListPodSandboxStats);
- liveness probes through ExecSync every ten seconds, each with a deadline;
- containers that crash, restarted as kubelet restarts them (a new container, attempt + 1),
  dead ones garbage-collected beyond the last;
- log rotation: a log past a size is renamed and ReopenContainerLog called;
- image garbage collection: ImageFsInfo, then RemoveImage of the images no container uses
  and that are not pinned (the node's stage1);
- the client itself restarted mid-run (kubelet restarts): it finds its pods by relisting;
- the end: every pod stopped and removed, and nothing left.

Checked: every CRI call answers without an unexpected error, every probe answers in time, no
log line is lost (nor doubled) across rotations, nothing is left. The run's figures (calls,
errors, probe latency p99, rktlet's CPU and RSS) are printed (docs/performance.md records
them). RKL_WORKLOAD_PODS (default 30) and RKL_WORKLOAD_SECONDS (default 120; the documented run
is 300) size it."""
import glob
import json
import os
import re
import threading
import time
import unittest

import grpc

import harness
import test_logs

pb, pbg = harness.stubs()

BUSYBOX = "docker.io/library/busybox:latest"
SPARE = "docker.io/rktsim/nonroot:latest"  # pulled, never used: image GC's to remove
ROTATE_BYTES = 32 * 1024
PROBE_TIMEOUT = 5  # seconds, ExecSync's deadline (kubelet's timeoutSeconds)
PROBE_PERIOD = 10
LINE = re.compile(r"^line (\d+)$")


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = {}
        self.errors = []
        self.probes = []

    def call(self, name, fn, expected=()):
        """One CRI call; an error is recorded unless its code is expected."""
        t0 = time.monotonic()
        try:
            return fn()
        except grpc.RpcError as e:
            if e.code() not in expected:
                with self.lock:
                    self.errors.append("%s: %s %s" % (name, e.code().name, e.details()))
            raise
        finally:
            with self.lock:
                self.calls[name] = self.calls.get(name, 0) + 1
                if name == "ExecSync":
                    self.probes.append(time.monotonic() - t0)


class Kubelet:
    """One kubelet's life: a channel and its stubs. restart() is kubelet restarting."""

    def __init__(self, env, stats):
        self.env, self.stats = env, stats
        self.connect()

    def connect(self):
        self.ch = self.env.daemon.channel()
        self.rs = pbg.RuntimeServiceStub(self.ch)
        self.im = pbg.ImageServiceStub(self.ch)

    def restart(self):
        self.ch.close()
        self.connect()

    def c(self, name, req, timeout=30, expected=()):
        stub = self.im if name in ("PullImage", "ListImages", "RemoveImage", "ImageFsInfo",
                                   "ImageStatus") else self.rs
        return self.stats.call(name, lambda: getattr(stub, name)(req, timeout=timeout),
                               expected)


class Pod:
    """A pod as kubelet keeps it: its sandbox, its containers by name and attempt."""

    def __init__(self, k, index, logs):
        self.k, self.name = k, "kp-%02d" % index
        self.cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=self.name, uid=self.name + "-uid",
                                           namespace="kubelet"),
            hostname=self.name, log_directory=os.path.join(logs, self.name),
            labels={"io.kubernetes.pod.name": self.name})
        self.crashing = index % 5 == 0  # one pod in five has a container that crashes
        self.sid = None
        self.attempts = {}   # container name -> current attempt
        self.current = {}    # container name -> current container ID
        self.dead = {}       # container name -> [IDs of exited attempts]
        self.restarts = 0

    def script(self, name):
        if name == "crasher":
            return "echo up; sleep 8; exit 1"
        # Numbered lines, across restarts of the container too (the log's own numbering).
        return "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.05; done"

    def run(self):
        self.sid = self.k.c("RunPodSandbox", pb.RunPodSandboxRequest(config=self.cfg),
                            timeout=240).pod_sandbox_id
        self.start("app")
        if self.crashing:
            self.start("crasher")

    def start(self, name):
        attempt = self.attempts.get(name, -1) + 1
        cc = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=attempt),
            image=pb.ImageSpec(image=BUSYBOX), command=["sh", "-c", self.script(name)],
            log_path="%s/%d.log" % (name, attempt),
            labels={"io.kubernetes.container.name": name})
        cid = self.k.c("CreateContainer", pb.CreateContainerRequest(
            pod_sandbox_id=self.sid, config=cc, sandbox_config=self.cfg)).container_id
        self.k.c("StartContainer", pb.StartContainerRequest(container_id=cid), timeout=240)
        self.attempts[name] = attempt
        self.current[name] = cid

    def log_path(self, name):
        return os.path.join(self.cfg.log_directory, "%s/%d.log" % (name, self.attempts[name]))


class KubeletTest(unittest.TestCase):
    def test_kubelet_shaped_workload(self):
        n_pods = int(os.environ.get("RKL_WORKLOAD_PODS") or 30)
        seconds = int(os.environ.get("RKL_WORKLOAD_SECONDS") or 120)
        env = harness.RktEnv(self, extra=["--wait"]).start()
        stats = Stats()
        k = Kubelet(env, stats)
        for image in (BUSYBOX, SPARE):
            k.c("PullImage", pb.PullImageRequest(image=pb.ImageSpec(image=image)), timeout=120)
        logs = os.path.join(env.dir, "logs")
        pid = env.daemon.daemon_pid()
        cpu0, t_start = cpu_seconds(pid), time.monotonic()

        # Pod workers: one thread a pod, all at once, as kubelet's pod workers start them.
        pods = [Pod(k, i, logs) for i in range(n_pods)]
        workers = [threading.Thread(target=p.run) for p in pods]
        for w in workers:
            w.start()
        for w in workers:
            w.join(600)
        t_all_running = time.monotonic() - t_start
        self.assertEqual(stats.errors, [])
        print("\n[figure] %d pods of kubelet's workers running after %.1f s" % (
            n_pods, t_all_running))

        rotations = {"n": 0}
        probe_misses = []

        def relist(stop):
            tick = 0
            while not stop.is_set():
                k.c("ListPodSandbox", pb.ListPodSandboxRequest())
                k.c("ListContainers", pb.ListContainersRequest())
                if tick % 10 == 0:
                    k.c("ListContainerStats", pb.ListContainerStatsRequest())
                    k.c("ListPodSandboxStats", pb.ListPodSandboxStatsRequest())
                tick += 1
                stop.wait(1)

        def probes(stop, pod):
            # Each pod's liveness probe, at its own phase in the period.
            stop.wait(PROBE_PERIOD * (pods.index(pod) / len(pods)))
            while not stop.is_set():
                cid = pod.current["app"]
                t0 = time.monotonic()
                r = k.c("ExecSync", pb.ExecSyncRequest(container_id=cid, cmd=["true"],
                                                       timeout=PROBE_TIMEOUT),
                        timeout=PROBE_TIMEOUT + 5)
                if r.exit_code != 0 or time.monotonic() - t0 > PROBE_TIMEOUT:
                    probe_misses.append((pod.name, r.exit_code, time.monotonic() - t0))
                stop.wait(PROBE_PERIOD)

        def sync_loop(stop):
            """The pod workers' syncs: restart crashed containers with attempt + 1 and
            garbage-collect dead ones beyond the last; rotate logs past their size."""
            while not stop.is_set():
                for pod in pods:
                    if "crasher" in pod.current:
                        st = k.c("ContainerStatus", pb.ContainerStatusRequest(
                            container_id=pod.current["crasher"])).status
                        if st.state == pb.CONTAINER_EXITED:
                            self.assertEqual(st.exit_code, 1)
                            dead = pod.dead.setdefault("crasher", [])
                            dead.append(pod.current["crasher"])
                            pod.start("crasher")
                            pod.restarts += 1
                            while len(dead) > 1:  # kubelet keeps the last dead one
                                k.c("RemoveContainer", pb.RemoveContainerRequest(
                                    container_id=dead.pop(0)))
                    path = pod.log_path("app")
                    if os.path.exists(path) and os.path.getsize(path) > ROTATE_BYTES:
                        os.rename(path, "%s.%d" % (path, time.monotonic_ns()))
                        k.c("ReopenContainerLog", pb.ReopenContainerLogRequest(
                            container_id=pod.current["app"]))
                        rotations["n"] += 1
                stop.wait(1)

        def run_kubelet(seconds):
            """kubelet's loops for a while: they all end when it stops (a restart too)."""
            stop = threading.Event()
            threads = [threading.Thread(target=relist, args=(stop,)),
                       threading.Thread(target=sync_loop, args=(stop,))]
            threads += [threading.Thread(target=probes, args=(stop, p)) for p in pods]
            for t in threads:
                t.start()
            stop.wait(seconds)
            stop.set()
            for t in threads:
                t.join(120)

        run_kubelet(seconds / 2)
        # Image GC, then kubelet restarts: its loops end, the client goes away and comes back,
        # finding its pods by relisting.
        fs = k.c("ImageFsInfo", pb.ImageFsInfoRequest())
        self.assertTrue(fs.image_filesystems)
        used = {c.image_ref for c in k.c("ListContainers", pb.ListContainersRequest()).containers}
        images = k.c("ListImages", pb.ListImagesRequest()).images
        # The node's stage1, which every pod runs, is pinned, and kubelet's GC leaves pinned
        # images alone.
        self.assertEqual([im.pinned for im in images if im.id not in used].count(True), 1)
        for im in images:
            if im.id not in used and not im.pinned:
                # An image some container still uses (another tag of it) is refused as such.
                try:
                    k.c("RemoveImage", pb.RemoveImageRequest(image=pb.ImageSpec(image=im.id)),
                        expected=(grpc.StatusCode.FAILED_PRECONDITION,))
                except grpc.RpcError:
                    pass
        k.restart()
        found = {s.metadata.name: s.id for s in k.c(
            "ListPodSandbox", pb.ListPodSandboxRequest()).items}
        self.assertEqual(found, {p.name: p.sid for p in pods})
        run_kubelet(seconds / 2)
        cpu1, t_end = cpu_seconds(pid), time.monotonic()
        rss = rss_kib(pid)

        # The end: kubelet's StopPodSandbox and RemovePodSandbox of every pod.
        for p in pods:
            k.c("StopPodSandbox", pb.StopPodSandboxRequest(pod_sandbox_id=p.sid), timeout=120)
            k.c("RemovePodSandbox", pb.RemovePodSandboxRequest(pod_sandbox_id=p.sid),
                timeout=120)

        # No log line lost or doubled across rotations and container restarts' files.
        for p in pods:
            nums = []
            files = sorted(glob.glob(p.log_path("app") + ".*"), key=lambda f: int(
                f.rsplit(".", 1)[1])) + [p.log_path("app")]
            for f in files:
                if os.path.exists(f):
                    nums += [int(m.group(1)) for m in (LINE.match(line) for line in
                             test_logs.lines(test_logs.records(f))) if m]
            self.assertTrue(nums, p.name)
            self.assertEqual(nums, list(range(nums[0], nums[0] + len(nums))),
                             "%s: lines lost or doubled across %d files" % (p.name, len(files)))
            self.assertEqual(nums[0], 0)

        self.assertEqual(stats.errors, [])
        self.assertEqual(probe_misses, [])
        harness.wait_empty("nothing left", lambda: [
            line for line in env.rkt("list", "--no-legend").stdout.splitlines()
            if line.strip()] + env.cni_leftovers(), timeout=120, interval=1)

        probes_sorted = sorted(stats.probes)
        p99 = probes_sorted[int(len(probes_sorted) * 0.99) - 1] if probes_sorted else 0
        report = {
            "pods": n_pods, "seconds": seconds, "all_running_s": round(t_all_running, 1),
            "calls": sum(stats.calls.values()), "errors": len(stats.errors),
            "calls_by_method": stats.calls, "probes": len(stats.probes),
            "probe_p50_ms": round(probes_sorted[len(probes_sorted) // 2] * 1000, 1),
            "probe_p99_ms": round(p99 * 1000, 1), "rotations": rotations["n"],
            "crash_restarts": sum(p.restarts for p in pods),
            "images_removed": stats.calls.get("RemoveImage", 0),
            "rktlet_cpu_percent_of_a_core": round(100 * (cpu1 - cpu0) / (t_end - t_start), 1),
            "rktlet_rss_kib": rss[0], "rktlet_hwm_kib": rss[1],
        }
        print("[figure] kubelet-shaped workload: %s" % json.dumps(report, sort_keys=True))
        out = os.environ.get("RKL_WORKLOAD_REPORT")
        if out:
            with open(out, "w") as f:
                json.dump(report, f, indent=1, sort_keys=True)
        self.assertGreater(rotations["n"], 0)
        self.assertGreater(report["crash_restarts"], 0)
        self.assertGreater(report["images_removed"], 0)
        left = [im.repo_tags for im in k.c("ListImages", pb.ListImagesRequest()).images]
        self.assertNotIn([SPARE], left)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    rss = hwm = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    return rss, hwm


if __name__ == "__main__":
    unittest.main()
