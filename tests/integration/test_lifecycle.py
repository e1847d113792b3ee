"""Pods and containers end to end: CRI calls over gRPC into the real daemon, which drives the
rkt simulator under a real (private) systemd. What is checked is what a user sees: CRI
states, times, exit codes, and real processes and pod directories."""
import json
import os
import signal
import subprocess
import threading
import time
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

IMAGE = "docker.io/library/busybox:latest"


def sandbox_config(name, uid=None, labels=None, annotations=None, host_network=False):
    cfg = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=uid or name + "-uid",
                                       namespace="default", attempt=0),
        hostname=name,
        log_directory=harness.LOG_ROOT + "/default_%s" % name,
        labels=labels or {"app": name},
        annotations=annotations or {},
    )
    if host_network:
        cfg.linux.security_context.namespace_options.network = pb.NODE
    return cfg


def container_config(name, command, labels=None, log_path=None):
    return pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=name, attempt=0),
        image=pb.ImageSpec(image=IMAGE),
        command=command,
        labels=labels or {"container": name},
        log_path=log_path or name + "/0.log",
    )


class LifecycleTest(unittest.TestCase):
    def setUp(self):
        self.env = harness.SimEnv(self).start()
        self.env.fetch("docker://" + IMAGE)
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)

    # Helpers.

    def run_pod(self, name, **kw):
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=sandbox_config(name, **kw)),
                                    timeout=10).pod_sandbox_id
        self.assertEqual(len(sid), 64)
        return sid

    def pod_status(self, sid, verbose=False):
        return self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid,
                                                                   verbose=verbose), timeout=10)

    def wait_pod_running(self, sid):
        # Running in rkt: the verbose info says so and the pod has an IP.
        return harness.wait_for("sandbox %s running" % sid[:12],
                                lambda: self.pod_status(sid).status.network.ip and
                                self.pod_status(sid), timeout=30)

    def create(self, sid, name, command, **kw):
        cfg = container_config(name, command, **kw)
        return self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cfg, sandbox_config=sandbox_config("x")),
            timeout=10).container_id

    def status(self, cid):
        return self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid),
                                       timeout=10).status

    def wait_state(self, cid, state, timeout=30):
        return harness.wait_for("container %s in state %d" % (cid[:12], state),
                                lambda: self.status(cid).state == state and self.status(cid),
                                timeout=timeout)

    def start(self, cid):
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)

    def orphaned(self, c):
        try:
            self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=c.id), timeout=5)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                return False  # removed meanwhile, with its sandbox
            raise
        try:
            self.pod_status(c.pod_sandbox_id)
            return False  # made after the pod list was taken
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                return True
            raise

    def rkt_pods(self):
        out = self.env.rkt("list", "--format=json").stdout.strip()
        import json
        return json.loads(out) or []

    # Tests.

    def test_full_lifecycle(self):
        sid = self.run_pod("web")
        # Accepted: ready at once, before rkt has done anything.
        st = self.pod_status(sid).status
        self.assertEqual(st.state, pb.SANDBOX_READY)
        self.assertGreater(st.created_at, 10**18)
        st = self.wait_pod_running(sid).status
        self.assertTrue(st.network.ip.startswith("172.16.28."))
        self.assertEqual(st.labels["app"], "web")

        cid = self.create(sid, "sleeper", ["/bin/sleep", "1000"])
        self.assertEqual(self.status(cid).state, pb.CONTAINER_CREATED)
        self.start(cid)
        s = self.wait_state(cid, pb.CONTAINER_RUNNING)
        self.assertGreater(s.started_at, s.created_at - 1)
        self.assertEqual(s.log_path, harness.LOG_ROOT + "/default_web/sleeper/0.log")
        self.assertTrue(s.image_ref.startswith("sha512-"))
        # A real process runs: in its cgroup already, its exec may still be landing.
        harness.wait_for("the app's process", lambda: subprocess.run(
            ["pgrep", "-f", "sleep 1000"], capture_output=True, text=True).stdout.strip(),
            timeout=5)

        self.rs.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=10), timeout=20)
        s = self.wait_state(cid, pb.CONTAINER_EXITED)
        self.assertEqual(s.exit_code, 143)  # SIGTERM, as Kubernetes counts it
        self.assertGreaterEqual(s.finished_at, s.started_at)

        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=10)
        with self.assertRaises(grpc.RpcError) as cm:
            self.status(cid)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)

        uuid = self.pod_uuid(sid)
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=10)
        self.assertEqual(self.pod_status(sid).status.state, pb.SANDBOX_NOTREADY)
        # rkt's pod is stopped and removed (which frees its IP).
        harness.wait_for("rkt pod removed",
                         lambda: uuid not in [p["name"] for p in self.rkt_pods()])
        state = os.path.join(self.env.daemon.state_dir, "pods", sid)
        self.assertTrue(os.path.isdir(state))
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=10)
        with self.assertRaises(grpc.RpcError) as cm:
            self.pod_status(sid)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)
        # Idempotent.
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=10)
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=10)
        # Nothing left on disk either (state directories once outlived their sandboxes:
        # 756 after a load run); they go at the next resync, every 10 s.
        harness.wait_for("the sandbox's state directory removed",
                         lambda: not os.path.exists(state), timeout=30, interval=0.5)

    def pod_uuid(self, sid):
        import json
        info = json.loads(self.pod_status(sid, verbose=True).info["info"])
        return harness.wait_for("rkt uuid", lambda: json.loads(
            self.pod_status(sid, verbose=True).info["info"]).get("rktUuid") or
            info.get("rktUuid"))

    def test_several_containers_and_exit_codes(self):
        sid = self.run_pod("multi")
        self.wait_pod_running(sid)
        normal = self.create(sid, "normal", ["/bin/sh", "-c", "exit 7"])
        stubborn = self.create(sid, "stubborn",
                               ["/bin/sh", "-c", "trap '' TERM; touch /tmp/trap-set; "
                                "while :; do sleep 0.1; done"])
        killed = self.create(sid, "killed", ["/bin/sleep", "1000"])
        for c in (normal, stubborn, killed):
            self.start(c)
        s = self.wait_state(normal, pb.CONTAINER_EXITED)
        self.assertEqual(s.exit_code, 7)
        self.assertEqual(s.reason, "Error")  # containerd's word: kubelet shows it as it is
        self.wait_state(stubborn, pb.CONTAINER_RUNNING)
        self.wait_state(killed, pb.CONTAINER_RUNNING)

        # A SIGTERM-ignoring app is killed when its stop timeout expires (once it has
        # really started ignoring it: the file is in its own root).
        import glob
        harness.wait_for("the app's trap", lambda: glob.glob(os.path.join(
            self.env.rkt_dir, "pods/run/*/stage1/rootfs/opt/stage2/*/rootfs/tmp/trap-set")))
        t0 = time.monotonic()
        self.rs.StopContainer(pb.StopContainerRequest(container_id=stubborn, timeout=2),
                              timeout=20)
        s = self.wait_state(stubborn, pb.CONTAINER_EXITED, timeout=20)
        self.assertEqual(s.exit_code, 137)
        self.assertGreaterEqual(time.monotonic() - t0, 1.5)

        # Timeout 0: SIGKILL at once.
        self.rs.StopContainer(pb.StopContainerRequest(container_id=killed, timeout=0),
                              timeout=20)
        s = self.wait_state(killed, pb.CONTAINER_EXITED, timeout=20)
        self.assertEqual(s.exit_code, 137)

        listed = self.rs.ListContainers(pb.ListContainersRequest(
            filter=pb.ContainerFilter(pod_sandbox_id=sid)), timeout=10).containers
        self.assertEqual(sorted(c.metadata.name for c in listed),
                         ["killed", "normal", "stubborn"])

    def test_injected_failure_retried_and_healed(self):
        sid = self.run_pod("flaky")
        self.wait_pod_running(sid)
        self.env.set_faults("app add fail 254 simulated registry hiccup\n")
        cid = self.create(sid, "app", ["/bin/sleep", "1000"])
        self.start(cid)
        # The failure shows in verbose status while the reconciler retries.
        import json

        def error_shown():
            r = self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid,
                                                                  verbose=True), timeout=10)
            info = json.loads(r.info.get("info", "{}"))
            return "simulated registry hiccup" in json.dumps(info) and info
        info = harness.wait_for("the error in ContainerStatus", error_shown)
        self.assertGreaterEqual(info.get("attempts", 0), 1)
        self.assertEqual(self.status(cid).state, pb.CONTAINER_CREATED)
        # Operators see it in the database too.
        db = os.path.join(self.env.daemon.state_dir, "rktlet.db")
        out = subprocess.run(["sqlite3", "-readonly", db,
                              "SELECT last_error FROM unconverged WHERE id = '%s'" % cid],
                             capture_output=True, text=True).stdout
        self.assertIn("simulated registry hiccup", out)
        # Healed once the fault is gone.
        self.env.set_faults("")
        self.wait_state(cid, pb.CONTAINER_RUNNING, timeout=90)

    def test_stop_right_after_start(self):
        """Regression: a stop that lands before the start was carried out (before or
        during rkt's app add) left the container CREATED. Now it is EXITED at once: with
        143 if it got to run, else NotStarted."""
        sid = self.run_pod("hasty")
        self.wait_pod_running(sid)
        outcomes = set()
        for i in range(8):
            cid = self.create(sid, "c%d" % i, ["/bin/sleep", "1000"])
            self.start(cid)
            time.sleep(0.02 * (i % 4))
            self.rs.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=2),
                                  timeout=10)
            s = self.wait_state(cid, pb.CONTAINER_EXITED, timeout=15)
            self.assertIn((s.exit_code, s.reason), ((143, "Error"), (0, "NotStarted")))
            outcomes.add(s.reason)
            self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=10)
        self.assertIn("NotStarted", outcomes)  # the interleaving was really hit
        # Their leftover apps share one image, so they stay until their pod goes (rkt's app
        # rm deletes the image's overlay: docs/rkt.md, 'Quirks'); the pod's removal takes them.
        uuid = self.pod_uuid(sid)
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=10)
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=10)
        harness.wait_for("the rkt pod removed",
                         lambda: uuid not in [p["name"] for p in self.rkt_pods()])

    def test_pod_dying_on_its_own(self):
        sid = self.run_pod("mortal")
        self.wait_pod_running(sid)
        cid = self.create(sid, "app", ["/bin/sleep", "1000"])
        self.start(cid)
        self.wait_state(cid, pb.CONTAINER_RUNNING)
        import json
        pid = json.loads(self.pod_status(sid, verbose=True).info["info"])["pid"]
        os.kill(pid, signal.SIGKILL)
        harness.wait_for("sandbox not ready",
                         lambda: self.pod_status(sid).status.state == pb.SANDBOX_NOTREADY)
        s = self.wait_state(cid, pb.CONTAINER_EXITED)
        self.assertNotEqual(s.exit_code, 0)

    def test_relist_while_pods_churn(self):
        """kubelet relists every second while pods come and go: every answer is fast and
        consistent with what was acknowledged."""
        stop = threading.Event()
        errors = []
        lists = [0]

        def relist():
            while not stop.is_set():
                try:
                    pods = self.rs.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=5).items
                    ctrs = self.rs.ListContainers(pb.ListContainersRequest(),
                                                  timeout=5).containers
                    ids = {p.id for p in pods}
                    for c in ctrs:
                        # Two calls are two snapshots: the sandbox may have been made or
                        # removed between them. Only a container still there whose sandbox
                        # is gone is wrong.
                        if c.pod_sandbox_id not in ids and self.orphaned(c):
                            errors.append("container %s without its sandbox" % c.id)
                    lists[0] += 1
                except grpc.RpcError as e:
                    errors.append(e)
                time.sleep(0.2)

        t = threading.Thread(target=relist)
        t.start()
        try:
            for i in range(4):
                sid = self.run_pod("churn%d" % i)
                cid = self.create(sid, "c", ["/bin/sleep", "1000"])
                self.start(cid)
                if i % 2:
                    self.wait_state(cid, pb.CONTAINER_RUNNING)
                self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=10)
                self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid),
                                         timeout=10)
            # Relists go on while the reconciler cleans up behind the removals.
            seen = lists[0]
            harness.wait_for("three more relists", lambda: lists[0] >= seen + 3)
        finally:
            stop.set()
            t.join()
        self.assertEqual(errors, [])
        # Everything removed is gone from rkt too.
        # A generous bound: rm of a leftover pod waits for its pod to go down, slow under load.
        harness.wait_for("no pods left in rkt", lambda: self.rkt_pods() == [], timeout=180)


POD_STEPS = ("unit_started", "pod_seen", "netns_seen", "stage1_ready", "running")
CONTAINER_STEPS = ("add_begun", "add_done", "start_begun", "start_done", "running")


class TimelineTest(unittest.TestCase):
    """Each start, step by step, where operators and clients read it: verbose status, the
    store's views and the log line that ends it (docs/performance.md). Times are only ordered
    here, never measured."""

    def test_steps_of_a_start(self):
        env = harness.SimEnv(self, extra=["--wait"]).start()
        env.fetch("docker://" + IMAGE)
        ch = env.daemon.channel()
        self.addCleanup(ch.close)
        rs = pbg.RuntimeServiceStub(ch)
        cfg = sandbox_config("timed")
        sid = rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=60).pod_sandbox_id
        cid = rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=container_config("c", ["/bin/sleep", "1000"]),
            sandbox_config=cfg), timeout=10).container_id
        rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)

        # --wait answered once each ran: the start is over and its steps all recorded.
        info = json.loads(rs.PodSandboxStatus(pb.PodSandboxStatusRequest(
            pod_sandbox_id=sid, verbose=True), timeout=10).info["info"])
        pod = info["timelineUs"]
        self.assertEqual([s for s in POD_STEPS if s in pod], list(POD_STEPS), pod)
        self.assertEqual(sorted(pod.values()), [pod[s] for s in POD_STEPS], pod)
        self.assertNotIn("net_add_begun", pod)  # rkt's own networking (--net): no CNI
        info = json.loads(rs.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid, verbose=True), timeout=10).info["info"])
        ctr = info["timelineUs"]
        self.assertEqual(list(ctr), list(CONTAINER_STEPS), ctr)
        self.assertEqual(sorted(ctr.values()), list(ctr.values()), ctr)

        # The same in the store's views, in milliseconds.
        db = os.path.join(env.daemon.state_dir, "rktlet.db")
        out = subprocess.run(["sqlite3", "-readonly", db,
                              "SELECT running_ms FROM sandbox_timelines WHERE id = '%s';"
                              "SELECT add_begun_ms, running_ms FROM container_timelines "
                              "WHERE id = '%s'" % (sid, cid)],
                             capture_output=True, text=True, check=True).stdout.split()
        self.assertAlmostEqual(float(out[0]), pod["running"] / 1e3, places=3)
        self.assertEqual([float(v) for v in out[1].split("|")],
                         [ctr["add_begun"] / 1e3, ctr["running"] / 1e3])

        # And in the log, on the line that ends each start, with the monotonic clock.
        lines = [line for line in env.daemon.log().splitlines() if "running after" in line]
        self.assertEqual(len(lines), 2, lines)
        self.assertRegex(lines[0], r"^<6>\[ *\d+\.\d{6}\] sandbox %s: pending -> running "
                         r"after \d+\.\d\d s \(unit_started \d+ ms, pod_seen" % sid[:12])
        self.assertRegex(lines[1], r"container %s: created -> running after .*\(add_begun "
                         % cid[:12])


if __name__ == "__main__":
    unittest.main()
