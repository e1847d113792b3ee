"""Faults of the world: rkt crashing halfway, hanging, a sandbox that never becomes
ready, a pod dying, a systemd unit failing. In each, the fault is injected with the rkt
simulator's fault file (or by killing a real process), the reconciler must report it
meanwhile (verbose status: lastError and attempts; the `unconverged` view in the database),
and once the fault is gone the machine must converge: the containers run, each exactly
once, and nothing is left behind (pod directories, units, processes)."""
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import time
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

IMAGE = "docker.io/library/busybox:latest"
# Short deadlines, so that a hang or a pod that never gets ready costs seconds, not minutes.
FLAGS = ["--rkt-timeout", "3", "--sandbox-ready-timeout", "2"]


class FaultsBase(unittest.TestCase):
    extra = FLAGS

    def setUp(self):
        self.env = harness.SimEnv(self, extra=self.extra).start()
        self.env.fetch("docker://" + IMAGE)
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)
        self.token = "8%06d" % random.randrange(10**6)
        self.n = 0

    # ---- CRI ----

    def run_pod(self, name):
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="faults"),
            hostname=name, log_directory=harness.LOG_ROOT + "/faults_" + name,
            labels={"app": name})
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=10).pod_sandbox_id
        self.cfg = cfg
        return sid

    def container(self, sid, name, start=True):
        """A long-running container whose process is found by its unique argument."""
        self.n += 1
        arg = "%s%03d" % (self.token, self.n)
        cfg = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                 image=pb.ImageSpec(image=IMAGE), command=["/bin/sleep", arg],
                                 log_path=name + ".log")
        cid = self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cfg, sandbox_config=self.cfg), timeout=10).container_id
        if start:
            self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
        return cid, arg

    def pod(self, sid):
        r = self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid,
                                                                verbose=True), timeout=10)
        return r.status, json.loads(r.info["info"])

    def ctr(self, cid):
        r = self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid, verbose=True),
                                    timeout=10)
        return r.status, json.loads(r.info["info"])

    def stop_remove(self, sid):
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=10)
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=10)

    # ---- The real world ----

    def procs(self, arg):
        return [pid for pid, argv in harness.processes()
                if len(argv) >= 2 and argv[1] == arg.encode()]

    def pods(self, sid):
        """[(uuid, running)] of the pods in pods/run marked with sandbox sid."""
        out = []
        run = os.path.join(self.env.rkt_dir, "pods", "run")
        for uuid in os.listdir(run) if os.path.isdir(run) else []:
            d = os.path.join(run, uuid)
            try:
                with open(os.path.join(d, "pod")) as f:
                    ua = json.load(f).get("userAnnotations") or {}
                fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            except (OSError, ValueError):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                running = False
            except BlockingIOError:
                running = True
            finally:
                os.close(fd)
            if ua.get("rktlet.io/sandbox-id") == sid:
                out.append((uuid, running))
        return out

    def apps_in_manifest(self, uuid):
        with open(os.path.join(self.env.rkt_dir, "pods", "run", uuid, "pod")) as f:
            return [a["name"] for a in json.load(f).get("apps") or []]

    def unit_state(self, sid):
        r = subprocess.run(["systemctl", "--user", "show", "-P", "ActiveState",
                            "rktlet-%s.service" % sid], capture_output=True, text=True,
                           env=dict(os.environ, XDG_RUNTIME_DIR=os.path.join(
                               self.env.dir, "systemd", "xdg")), timeout=30)
        return r.stdout.strip()

    def unconverged(self, oid):
        db = os.path.join(self.env.daemon.state_dir, "rktlet.db")
        return subprocess.run(["sqlite3", "-readonly", db,
                               "SELECT attempts, last_error FROM unconverged WHERE id = '%s'"
                               % oid], capture_output=True, text=True).stdout.strip()

    # ---- Waits ----

    def wait_running(self, sid, timeout=60):
        def ok():
            st, info = self.pod(sid)
            running = [u for u, r in self.pods(sid) if r]
            return (st.state == pb.SANDBOX_READY and info.get("phase") == "running" and
                    len(running) == 1 and self.unit_state(sid) == "active" and running[0])
        return harness.wait_for("sandbox %s running" % sid[:12], ok, timeout=timeout)

    def wait_ctr_running(self, cid, arg, timeout=60):
        def ok():
            st, info = self.ctr(cid)
            pids = self.procs(arg)
            return (st.state == pb.CONTAINER_RUNNING and len(pids) == 1 and
                    info.get("pid") == pids[0] and info.get("lastError") is None and pids[0])
        return harness.wait_for("container %s running" % cid[:12], ok, timeout=timeout)

    def wait_error(self, get, needle, timeout=60):
        """The fault is reported: lastError names it and attempts counts it."""
        def shown():
            info = get()
            return (needle in (info.get("lastError") or "") and info.get("attempts", 0) >= 1
                    and info)
        return harness.wait_for("%r in lastError" % needle, shown, timeout=timeout)

    def wait_gone(self, sid, timeout=60):
        harness.wait_for("no pod and no unit for %s" % sid[:12],
                         lambda: not self.pods(sid) and
                         self.unit_state(sid) in ("inactive", "failed", ""), timeout=timeout)


class RktFaultsTest(FaultsBase):
    def test_rkt_crashing_halfway(self):
        """rkt SIGKILLed in the middle of each command rktlet runs: partial on-disk changes
        are finished or undone, never done twice."""
        sid = self.run_pod("crashy")
        uuid = self.wait_running(sid)
        for rule, needle in [("app add crash-after rendered", "app add"),
                             ("app add crash-after created", "app add"),
                             ("app start crash-after started-file", "app start")]:
            with self.subTest(rule=rule):
                self.env.set_faults(rule + "\n")
                cid, arg = self.container(sid, "c%d" % (self.n + 1))
                info = self.wait_error(lambda: self.ctr(cid)[1], "killed by signal 9")
                self.assertTrue(self.unconverged(cid), "no row in the unconverged view")
                # Never reported running without a process.
                self.assertEqual(self.ctr(cid)[0].state, pb.CONTAINER_CREATED, info)
                self.assertEqual(self.procs(arg), [])
                self.env.set_faults("")
                self.wait_ctr_running(cid, arg)
                # Added once: one app of that container in the pod's manifest.
                app = self.ctr(cid)[1]["appName"]
                self.assertEqual(self.apps_in_manifest(uuid).count(app), 1)
                self.assertEqual(self.unconverged(cid), "")

        # app rm crashing halfway, for a removed container (an orphan app to reap).
        self.env.set_faults("app rm crash-after stopped\n")
        cid, arg = self.container(sid, "victim")
        self.wait_ctr_running(cid, arg)
        app = self.ctr(cid)[1]["appName"]
        self.rs.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=0), timeout=10)
        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=10)
        harness.wait_for("victim's process gone", lambda: not self.procs(arg))
        self.env.set_faults("")

        # Pod stop and rm crashing halfway.
        self.env.set_faults("stop crash-after signalled\nrm crash-after moved\n")
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=10)
        self.assertEqual(self.pod(sid)[0].state, pb.SANDBOX_NOTREADY)
        harness.wait_for("the pod's processes gone",
                         lambda: not any(self.procs("%s%03d" % (self.token, i))
                                         for i in range(1, self.n + 1)))
        self.wait_error(lambda: self.pod(sid)[1], "")
        self.env.set_faults("")
        self.wait_gone(sid)
        harness.wait_for("sandbox converged", lambda: self.unconverged(sid) == "")
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=10)

    def test_sandbox_crashing_halfway(self):
        for step in ("embryo", "prepare", "run"):
            with self.subTest(step=step):
                self.env.set_faults("sandbox crash-after %s\n" % step)
                sid = self.run_pod("half-" + step)
                self.wait_error(lambda: self.pod(sid)[1], "")
                self.assertEqual(self.pod(sid)[0].state, pb.SANDBOX_READY)
                self.assertTrue(self.unconverged(sid))
                self.env.set_faults("")
                self.wait_running(sid)
                cid, arg = self.container(sid, "after")
                self.wait_ctr_running(cid, arg)
                self.stop_remove(sid)
                self.wait_gone(sid)
                harness.wait_for("no process", lambda: not self.procs(arg))

    def test_rkt_hanging(self):
        """A hung rkt command is killed at --rkt-timeout, reported, and retried."""
        sid = self.run_pod("hung")
        self.wait_running(sid)
        self.env.set_faults("app start hang\n")
        cid, arg = self.container(sid, "c")
        info = self.wait_error(lambda: self.ctr(cid)[1], "")
        self.assertEqual(self.ctr(cid)[0].state, pb.CONTAINER_CREATED, info)
        self.assertTrue(self.unconverged(cid))
        self.env.set_faults("")
        self.wait_ctr_running(cid, arg)

        # A hung pod stop: reported, and retried. It shows while it lasts: until the stop of
        # the pod's unit that follows the two hung stops (test_stop_hanging_for_good) has
        # taken the pod down and the next try removed it.
        self.env.set_faults("stop hang\n")
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=10)
        self.assertEqual(self.pod(sid)[0].state, pb.SANDBOX_NOTREADY)
        self.assertTrue(self.unconverged(sid))
        self.wait_error(lambda: self.pod(sid)[1], "")
        self.env.set_faults("")
        self.wait_gone(sid)
        harness.wait_for("the app gone", lambda: not self.procs(arg))
        # No hung rkt-sim left behind. A killed one takes a moment to go (a sanitizer
        # build's teardown unmaps a lot): wait for it, but it must go.

        def hung():
            left = subprocess.run(["pgrep", "-f", "rkt-sim --dir=%s" % self.env.rkt_dir],
                                  capture_output=True, text=True).stdout.split()
            out = []
            for p in left:
                try:
                    with open("/proc/%s/cmdline" % p) as f:
                        if "sandbox" not in f.read():
                            out.append(p)
                except OSError:
                    pass  # gone meanwhile
            return out
        harness.wait_for("no hung rkt-sim left", lambda: not hung(), timeout=15)
        self.assertEqual(hung(), [])

    def test_stop_hanging_for_good(self):
        """Regression: with rkt's stop and stop --force both hanging for good, the
        pod ran on and its stop was retried for ever. Now, after them, its unit is stopped,
        which takes the pod down: NOTREADY, nothing of it left, and it can be removed."""
        sid = self.run_pod("stuck")
        self.wait_running(sid)
        cid, arg = self.container(sid, "c")
        self.wait_ctr_running(cid, arg)
        self.env.set_faults("stop hang\n")  # for the whole test
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=10)
        # Two hung stops (--rkt-timeout 3) and the waits after them (the grace, 10 s each).
        harness.wait_for("the pod down", lambda: not [u for u, running in self.pods(sid)
                                                      if running] and not self.procs(arg),
                         timeout=120)
        # rktlet reads the pod's end from its directory after rkt has written it: a loaded
        # machine may have the pod down a moment before rktlet says so.
        harness.wait_for("the sandbox and its container reported down", lambda: (
            self.pod(sid)[0].state == pb.SANDBOX_NOTREADY and
            self.ctr(cid)[0].state != pb.CONTAINER_RUNNING), timeout=30)
        self.assertIn("sandbox %s: rkt cannot stop pod" % sid[:12], self.env.daemon.log())
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=10)
        self.wait_gone(sid)
        with self.assertRaises(grpc.RpcError) as cm:
            self.pod(sid)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)


class SandboxFaultsTest(FaultsBase):
    def test_never_ready_then_healed(self):
        """A sandbox that does not get ready is undone and retried with backoff; when the
        fault goes, the retry gets the full --sandbox-ready-timeout to become ready."""
        self.env.set_faults("sandbox never-ready\n")
        sid = self.run_pod("slow")
        info = self.wait_error(lambda: self.pod(sid)[1], "did not become ready", timeout=30)
        self.assertEqual(self.pod(sid)[0].state, pb.SANDBOX_READY)  # not failed for good
        self.assertIn("did not become ready", self.unconverged(sid))
        self.env.set_faults("")
        self.wait_running(sid, timeout=90)
        st, info = self.pod(sid)
        self.assertEqual(info.get("phase"), "running", info)
        cid, arg = self.container(sid, "c")
        self.wait_ctr_running(cid, arg)

    def test_never_ready_fails_for_good(self):
        """Five attempts, then FAILED: NOTREADY with reason and message; nothing left."""
        self.env.set_faults("sandbox never-ready\n")
        sid = self.run_pod("never")
        harness.wait_for("sandbox failed for good",
                         lambda: self.pod(sid)[0].state == pb.SANDBOX_NOTREADY, timeout=120)
        st, info = self.pod(sid)
        self.assertEqual(info["phase"], "failed")
        self.assertEqual(info["reason"], "CreateFailed")
        self.assertIn("did not become ready", info["message"])
        self.assertEqual(info["attempts"], 5)  # a refused unit once counted twice: 6
        self.wait_gone(sid)
        with self.assertRaises(grpc.RpcError) as cm:
            self.container(sid, "c")
        self.assertEqual(cm.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.stop_remove(sid)

    def test_start_failing_fails_for_good(self):
        """A sandbox that cannot even be started (here: a cgroupfs cgroup_parent, which a
        systemd unit cannot take) fails for good after five attempts too; it used to be
        retried for ever while reported READY."""
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="cg", uid="cg-uid", namespace="faults"),
            hostname="cg", log_directory=harness.LOG_ROOT + "/faults_cg")
        cfg.linux.cgroup_parent = "/kubepods/besteffort/podcg"
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=10).pod_sandbox_id
        harness.wait_for("sandbox failed for good",
                         lambda: self.pod(sid)[0].state == pb.SANDBOX_NOTREADY, timeout=60)
        st, info = self.pod(sid)
        self.assertEqual((info["phase"], info["reason"]), ("failed", "CreateFailed"))
        self.assertIn("--cgroup-driver=systemd", info["message"])
        self.assertEqual(info["attempts"], 5)
        time.sleep(1)
        self.assertEqual(self.pod(sid)[1]["attempts"], 5)  # no more tries
        self.stop_remove(sid)

    def test_app_add_failing_fails_for_good(self):
        """Real rkt on systemd 252 without the stage1 fix fails every app add with "not yet
        ready" (rc 254): ContainerStatus says so with rkt's own words while it retries, and
        after eight attempts the container is EXITED with StartError and 128, for good."""
        sid = self.run_pod("addfail")
        self.wait_running(sid)
        msg = "supervisor for pod %s is not yet ready" % self.pods(sid)[0][0]
        self.env.set_faults("app add fail 254 %s\n" % msg)
        cid, _ = self.container(sid, "c")

        def retrying():
            st = self.ctr(cid)[0]
            return (st.state == pb.CONTAINER_CREATED and st.reason == "StartError" and
                    msg in st.message and "retrying" in st.message)
        harness.wait_for("the failure shown while retrying", retrying, timeout=30)
        harness.wait_for("container failed for good",
                         lambda: self.ctr(cid)[0].state == pb.CONTAINER_EXITED, timeout=180)
        st, info = self.ctr(cid)
        self.assertEqual((st.exit_code, st.reason), (128, "StartError"))
        self.assertIn(msg, st.message)
        self.assertIn("gave up after 8 attempts", st.message)
        self.assertEqual(info["attempts"], 8)
        self.assertIn("not yet ready (attempt 1 of 8)", self.env.daemon.log())
        # Failed for good means no more tries, even once rkt is healthy again.
        self.env.set_faults("")
        time.sleep(2)
        self.assertEqual(self.ctr(cid)[1]["attempts"], 8)
        self.assertEqual(self.ctr(cid)[0].state, pb.CONTAINER_EXITED)
        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=10)
        self.stop_remove(sid)

    def test_unit_failing_to_start(self):
        """The sandbox process exits at once: the unit fails; rkt's words are reported."""
        self.env.set_faults("sandbox fail 1 simulated stage1 failure\n")
        sid = self.run_pod("unitfail")
        self.wait_error(lambda: self.pod(sid)[1], "simulated stage1 failure", timeout=30)
        self.assertIn("simulated stage1 failure", self.unconverged(sid))
        self.env.set_faults("")
        self.wait_running(sid)

    def test_error_is_the_attempts_own(self):
        """Regression: every attempt appended its output to the sandbox's log, so
        the error quoted from its tail repeated earlier attempts' words."""
        self.env.set_faults("sandbox fail 1 first-attempt-failure\n")
        sid = self.run_pod("afresh")
        self.wait_error(lambda: self.pod(sid)[1], "first-attempt-failure", timeout=30)
        self.env.set_faults("sandbox fail 1 later-attempt-failure\n")
        info = self.wait_error(lambda: self.pod(sid)[1], "later-attempt-failure", timeout=30)
        self.assertNotIn("first-attempt-failure", info["lastError"])
        self.env.set_faults("")
        self.wait_running(sid)

    def test_retry_waits_for_the_old_unit(self):
        """Regression: a failed attempt's unit, still stopping when the retry
        came, has the retry's name: the retry's start found it, took it for its own, and
        counted its end as one more failed attempt. Now the retry waits until it is gone,
        and the one failure is all there is. Here the failed attempt's pod takes 3 s to go
        down once its unit is stopped, and rkt cannot stop it faster (its stop fails)."""
        lingering = "sandbox slow-stop 3000\nstop fail 254 simulated stop failure\n"
        self.env.set_faults("sandbox never-ready\n" + lingering)
        sid = self.run_pod("lingering")
        self.wait_error(lambda: self.pod(sid)[1], "did not become ready", timeout=30)
        self.env.set_faults(lingering)  # the retry gets ready
        self.wait_running(sid, timeout=60)
        failures = [line for line in self.env.daemon.log().splitlines()
                    if "sandbox %s:" % sid[:12] in line and "(attempt " in line]
        self.assertEqual(len(failures), 1, failures)
        cid, arg = self.container(sid, "c")
        self.wait_ctr_running(cid, arg)

    def test_pod_dying(self):
        """The pod's supervisor is killed: NOTREADY, containers exited, unit not active;
        kubelet's answer (stop, remove) leaves nothing behind."""
        sid = self.run_pod("mortal")
        self.wait_running(sid)
        cid, arg = self.container(sid, "c")
        self.wait_ctr_running(cid, arg)
        pid = self.pod(sid)[1]["pid"]
        os.kill(pid, signal.SIGKILL)
        harness.wait_for("sandbox NOTREADY",
                         lambda: self.pod(sid)[0].state == pb.SANDBOX_NOTREADY)
        harness.wait_for("container exited",
                         lambda: self.ctr(cid)[0].state == pb.CONTAINER_EXITED)
        harness.wait_for("unit not active",
                         lambda: self.unit_state(sid) != "active")
        self.stop_remove(sid)
        self.wait_gone(sid)
        harness.wait_for("no process", lambda: not self.procs(arg))

    def test_pod_dir_removed_leaves_no_cgroup(self):
        """Regression, found by the drain at the end of the real-rkt chaos: the
        cgroups a sandbox's unit leaves in the hierarchies systemd does not manage (rkt's
        stage1 leaves cpuset's, freezer's and cpuacct's) went with the rm of its pod, and a
        sandbox whose pod directory was removed by hand had no rm to take them: they stayed
        after the sandbox was removed. Here rkt's rm fails too, so that no rm takes them."""
        sid = self.run_pod("dirless")
        uuid = self.wait_running(sid)
        # The simulator removes its own cgroups: the one rkt's stage1 would leave is made.
        # Its parent too, where no pod has run in the machine's own cpuset tree yet.
        parent = "/sys/fs/cgroup/cpuset/system.slice"
        if not os.path.isdir(parent):
            os.mkdir(parent)
            self.addCleanup(os.rmdir, parent)
        left = os.path.join(parent, "rktlet-%s.service" % sid)
        os.mkdir(left)
        self.addCleanup(lambda: os.path.isdir(left) and os.rmdir(left))
        self.env.set_faults("rm fail 254 simulated rm failure\n")
        shutil.rmtree(os.path.join(self.env.rkt_dir, "pods", "run", uuid))
        harness.wait_for("sandbox NOTREADY",
                         lambda: self.pod(sid)[0].state == pb.SANDBOX_NOTREADY)
        self.stop_remove(sid)
        # At the next rescan (every 10 s).
        harness.wait_for("the unit's cgroup gone", lambda: not os.path.isdir(left), timeout=60)
        harness.wait_for("the sandbox's state directory gone", lambda: not os.path.exists(
            os.path.join(self.env.daemon.state_dir, "pods", sid)), timeout=60)

    def test_unit_killed(self):
        """systemd kills the unit (as an operator's `systemctl kill` would)."""
        sid = self.run_pod("killed")
        self.wait_running(sid)
        cid, arg = self.container(sid, "c")
        self.wait_ctr_running(cid, arg)
        subprocess.run(["systemctl", "--user", "kill", "--signal=SIGKILL",
                        "rktlet-%s.service" % sid], check=True, timeout=30,
                       env=dict(os.environ, XDG_RUNTIME_DIR=os.path.join(
                           self.env.dir, "systemd", "xdg")))
        harness.wait_for("sandbox NOTREADY",
                         lambda: self.pod(sid)[0].state == pb.SANDBOX_NOTREADY)
        harness.wait_for("no process", lambda: not self.procs(arg))
        self.stop_remove(sid)
        self.wait_gone(sid)


class SharedImageTest(FaultsBase):
    """Regression (found by the chaos test): rkt's app rm deletes the overlay of its image,
    so an orphan app's rm that ran while another app of the same image was being added took
    the new app's rootfs with it; the new app then died at start (exit 226). rkt's real
    latencies make the two overlap."""

    def setUp(self):
        self.env = harness.SimEnv(self, extra=FLAGS, profile="real").start()
        self.env.fetch("docker://" + IMAGE)
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)
        self.token = "9%06d" % random.randrange(10**6)
        self.n = 0

    def test_remove_while_adding_same_image(self):
        sid = self.run_pod("shared")
        self.wait_running(sid)
        old, arg = self.container(sid, "old")
        self.wait_ctr_running(old, arg)
        for i in range(3):
            self.rs.StopContainer(pb.StopContainerRequest(container_id=old, timeout=0),
                                  timeout=10)
            harness.wait_for("old exited",
                             lambda: self.ctr(old)[0].state == pb.CONTAINER_EXITED)
            # In one breath, as kubelet replaces a container.
            self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=old), timeout=10)
            new, arg = self.container(sid, "new%d" % i)
            self.wait_ctr_running(new, arg)
            old = new


class ChurnTest(FaultsBase):
    """Regression: threads creating, starting, stopping and removing containers in
    one pod, on rkt's real latencies. rkt takes one app command at a time per pod, and each
    added app is one rm owed: removals must keep up with the adds, or removed apps pile up
    in the pod (their rootfs on disk, the daemon's memory, every pass longer) until the load
    stops. CI runs a short churn; a long one (docs/reliability.md) prints the same figures:

        RKL_CHURN_CYCLES=200 python3 -m unittest -v test_faults.ChurnTest
    """
    threads = int(os.environ.get("RKL_CHURN_THREADS", "4"))
    cycles = int(os.environ.get("RKL_CHURN_CYCLES", "12"))  # a thread's

    def setUp(self):
        # --wait: StartContainer and StopContainer answer once done, as kubelet is served.
        self.env = harness.SimEnv(self, extra=["--wait"], profile="real").start()
        self.env.fetch("docker://" + IMAGE)
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)
        self.token = "7%06d" % random.randrange(10**6)
        self.n = 0

    def leftover(self, uuid, removed):
        """Apps still in the pod's manifest whose container was removed."""
        try:
            return len(set(self.apps_in_manifest(uuid)) & removed)
        except (OSError, ValueError):
            return 0  # being rewritten

    def test_removals_keep_up_with_adds(self):
        import threading
        sid = self.run_pod("churn")
        uuid = self.wait_running(sid)
        removed = set()  # app names of removed containers
        lock = threading.Lock()
        cycle_times, errors = [], []
        stop = threading.Event()

        def churn(t):
            try:
                for i in range(self.cycles):
                    t0 = time.monotonic()
                    with lock:
                        cid, _ = self.container(sid, "t%dc%d" % (t, i), start=False)
                    self.rs.StartContainer(pb.StartContainerRequest(container_id=cid),
                                           timeout=120)
                    self.rs.StopContainer(pb.StopContainerRequest(container_id=cid,
                                                                  timeout=0), timeout=120)
                    app = self.ctr(cid)[1]["appName"]
                    self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cid),
                                            timeout=60)
                    with lock:
                        removed.add(app)
                        cycle_times.append((t0, time.monotonic() - t0))
            except Exception as e:  # reported by the test's thread
                errors.append(e)

        samples = []  # (seconds since the start, leftover apps, the daemon's RSS in KiB)

        def monitor(t0):
            while not stop.wait(0.5):
                with lock:
                    names = set(removed)
                samples.append((time.monotonic() - t0, self.leftover(uuid, names),
                                rss_kib(self.env.daemon.proc.pid)))

        t0 = time.monotonic()
        mon = threading.Thread(target=monitor, args=(t0,))
        mon.start()
        workers = [threading.Thread(target=churn, args=(t,)) for t in range(self.threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        load_s = time.monotonic() - t0
        stop.set()
        mon.join()
        self.assertEqual(errors, [])
        drained = harness.wait_for("the removed apps gone from the pod", lambda: (
            self.leftover(uuid, removed) == 0 and time.monotonic()), timeout=300)

        most = max(n for _, n, _ in samples)
        times = [d for _, d in sorted(cycle_times)]
        q = max(1, len(times) // 4)
        print("\n[figure] %d threads x %d cycles in %.1f s; leftover apps: at most %d, by "
              "time %s; cycle p50 first quarter %.2f s, last %.2f s; RSS %d -> %d KiB; "
              "drained %.1f s after the load" % (
                  self.threads, self.cycles, load_s, most,
                  " ".join("%d:%d" % (s, n) for s, n, _ in samples[::max(1, len(samples) // 12)]),
                  sorted(times[:q])[q // 2], sorted(times[-q:])[q // 2],
                  samples[0][2], samples[-1][2], drained - t0 - load_s))
        # Every add owes one rm, and an add waits for the rm owed before it: about one
        # leftover a thread (without the rule: nearly every app of the run).
        self.assertLessEqual(most, 2 * self.threads, samples)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class FirstLookTest(unittest.TestCase):
    """Right after a start the daemon answers from its store before it has looked at the
    machine: what needs that first look (Status: the rkt and systemd probe; image reads:
    rkt's image list) waits for it, the rest does not."""

    def test_answers_while_rkt_hangs(self):
        env = harness.SimEnv(self, extra=["--rkt-timeout", "3", "--probe-interval", "1"])
        env.fetch("docker://" + IMAGE)
        env.set_faults("version hang\nimage list hang\n")
        env.start()
        ch = env.daemon.channel()
        self.addCleanup(ch.close)
        rs, img = pbg.RuntimeServiceStub(ch), pbg.ImageServiceStub(ch)

        v = rs.Version(pb.VersionRequest(), timeout=5)
        self.assertEqual(v.runtime_api_version, "v1")
        self.assertNotIn("+rkt", v.runtime_version)  # not probed yet
        self.assertEqual(len(rs.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=5).items), 0)
        self.assertEqual(len(rs.ListContainers(pb.ListContainersRequest(), timeout=5).containers),
                         0)
        for call, req in ((rs.Status, pb.StatusRequest()),
                          (img.ListImages, pb.ListImagesRequest())):
            with self.assertRaises(grpc.RpcError) as e:
                call(req, timeout=0.5)
            self.assertEqual(e.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED, call)

        # The hung `rkt version` is killed at --rkt-timeout: the first probe is a failure,
        # and Status says so (a second Status waits for nothing).
        st = rs.Status(pb.StatusRequest(), timeout=30).status
        ready = {c.type: c for c in st.conditions}["RuntimeReady"]
        self.assertFalse(ready.status)
        self.assertEqual(ready.reason, "RktUnavailable")
        # Without the fault, the next probes find rkt, and the image list is tried again
        # until it worked once.
        env.set_faults("")
        harness.wait_for("rkt probed again", lambda: "+rkt" in rs.Version(
            pb.VersionRequest(), timeout=5).runtime_version)
        harness.wait_for("busybox listed", lambda: [
            i for i in img.ListImages(pb.ListImagesRequest(), timeout=5).images
            if any(t.endswith("busybox:latest") for t in i.repo_tags)])


class PoolsTest(unittest.TestCase):
    """Each kind of slow work waits on a pool of its own."""

    def test_stats_not_behind_hung_pulls(self):
        """Regression: a stats call that finds its snapshot stale waits for the collector
        to read it again; that wait ran on the pool of pulls, so with as many pulls under
        way as the pool has threads (4) it waited for the pulls, here for ever."""
        env = harness.SimEnv(self, extra=["--stats-interval", "3600"], net=False).start()
        ch = env.daemon.channel()
        self.addCleanup(ch.close)
        rs, img = pbg.RuntimeServiceStub(ch), pbg.ImageServiceStub(ch)
        rs.ListContainerStats(pb.ListContainerStatsRequest(), timeout=10)
        env.set_faults("image fetch hang\n")
        pulls = [img.PullImage.future(pb.PullImageRequest(
            image=pb.ImageSpec(image="docker.io/library/hung:%d" % i)), timeout=120)
            for i in range(6)]
        self.addCleanup(lambda: [f.cancel() for f in pulls])
        harness.wait_for("4 fetches hanging", lambda: len(subprocess.run(
            ["pgrep", "-f", "image fetch.*library/hung:"], capture_output=True,
            text=True).stdout.split()) >= 4, 30, 0.1)
        time.sleep(1)  # the snapshot is stale (older than 0.5 s)
        self.assertFalse(any(f.done() for f in pulls))
        for call, req in ((rs.ListContainerStats, pb.ListContainerStatsRequest()),
                          (rs.ListPodSandboxStats, pb.ListPodSandboxStatsRequest())):
            call(req, timeout=10)


class FlagsTest(unittest.TestCase):
    def test_every_documented_flag_is_accepted(self):
        """Regression: --sync-full, --net, --stage1-name and --max-actions were in --help and
        README but missing from getopt's table ("unknown option")."""
        out = subprocess.run([harness.DAEMON, "--help"], capture_output=True, text=True,
                             check=True).stdout
        import re
        flags = dict(re.findall(r"^\s+(--[a-z0-9-]+) ?([A-Z=]*)", out, re.M))
        for flag in ("--max-actions", "--sync-full", "--net", "--stage1-name",
                     "--rkt-timeout", "--sandbox-ready-timeout"):
            self.assertIn(flag, flags)
        values = {"--log-level": "info", "--socket-group": "root", "--net": "default",
                  "--registry-mirror": "registry.k8s.io=http://127.0.0.1:5000",
                  "--systemd-bus": "unix:path=/nonexistent", "--stage1-name": "stage1",
                  "--metrics-address": "127.0.0.1:9101", "--stream-address": "127.0.0.1:0",
                  "--config": ""}
        for flag, meta in flags.items():
            if flag in ("--help", "--version"):
                continue
            argv = [harness.DAEMON, flag]
            if meta:
                argv.append(values.get(flag, "/nonexistent" if meta in ("PATH", "DIR")
                                       else "2"))
            # --version last: parsed after the flag, it exits before anything starts.
            r = subprocess.run(argv + ["--version"], capture_output=True, text=True,
                               timeout=10, stdin=subprocess.DEVNULL)
            self.assertEqual((r.returncode, r.stderr), (0, ""), argv)
        for flag in ("--rkt-timeout", "--sandbox-ready-timeout"):
            r = subprocess.run([harness.DAEMON, flag, "0"], capture_output=True, text=True,
                               timeout=10)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("1 to 3600", r.stderr)


if __name__ == "__main__":
    unittest.main()
