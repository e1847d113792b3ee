"""End to end on the real rkt 1.30.0 (stage1 host) in a private systemd host: what a CRI
client sees, and what is left on the machine after. Skipped, saying why, when rkt cannot be
built here. Times are printed for the record (docs/performance.md), never asserted."""
import ipaddress
import json
import os
import re
import signal
import subprocess
import threading
import time
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

BUSYBOX = "docker.io/library/busybox:latest"


class RealRktBase(unittest.TestCase):
    extra = ()

    def setUp(self):
        self.env = harness.RktEnv(self, extra=self.extra).start()
        self.sandboxes = []
        self.connect()

    def connect(self):
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)
        self.im = pbg.ImageServiceStub(ch)

    def pull(self, ref=BUSYBOX):
        return self.im.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=ref)),
                                 timeout=120).image_ref

    def run_pod(self, name):
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="e2e"),
            hostname=name, log_directory=os.path.join(self.env.dir, "logs", name))
        t0 = time.monotonic()
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=10).pod_sandbox_id
        self.sandboxes.append(sid)
        # Running in rkt (its stage1 ready for apps), not only READY with an IP: a sandbox
        # that never gets ready is retried as a new pod, with another IP.
        harness.wait_for("sandbox %s running in rkt" % name, lambda: json.loads(
            self.pod(sid, verbose=True)[1]["info"]).get("phase") == "running", timeout=120)
        print("\n[figure] RunPodSandbox to running in rkt: %.0f ms" %
              ((time.monotonic() - t0) * 1000))
        st = self.pod(sid)
        self.assertEqual(st.state, pb.SANDBOX_READY)
        self.assertTrue(st.network.ip)
        return sid, cfg, st.network.ip

    def pod(self, sid, verbose=False):
        r = self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid,
                                                                verbose=verbose), timeout=10)
        return (r.status, r.info) if verbose else r.status

    def ctr(self, cid):
        return self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid),
                                       timeout=10).status

    def create(self, sid, cfg, name, command, image=BUSYBOX):
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                image=pb.ImageSpec(image=image), command=command,
                                log_path=name + ".log")
        return self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10).container_id

    def start(self, cid):
        t0 = time.monotonic()
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=120)
        return t0

    def wait_state(self, cid, state, timeout=60):
        return harness.wait_for("container %s in state %d" % (cid[:12], state),
                                lambda: (lambda s: s.state == state and s)(self.ctr(cid)),
                                timeout=timeout, interval=0.01)

    def stop_remove(self, sid):
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=30)
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=30)

    # ---- The machine, as seen inside the host ----

    def rkt_pods(self):
        out = self.env.rkt("list", "--format=json").stdout.strip()
        return json.loads(out) or []

    def units(self):
        out = self.env.run("systemctl", "list-units", "--all", "--plain", "--no-legend",
                           "rktlet-*.service").stdout
        return [line.split()[0] for line in out.splitlines() if line.strip()]

    def cgroups(self):
        """Cgroups of this test's sandboxes (hierarchies the host cannot confine, such as
        cpuset, are shared with every other host on the machine)."""
        out = self.env.run("sh", "-c", "ls -d /sys/fs/cgroup/*/system.slice/rktlet-* "
                           "/sys/fs/cgroup/system.slice/rktlet-* 2>/dev/null",
                           check=False).stdout
        return [p for p in out.split() if any(s in p for s in self.sandboxes)]

    def state_dirs(self):
        return os.listdir(os.path.join(self.env.daemon.state_dir, "pods")) \
            if os.path.isdir(os.path.join(self.env.daemon.state_dir, "pods")) else []

    def assert_nothing_left(self):
        def left():
            return (self.rkt_pods(), self.units(), self.cgroups(), self.state_dirs(),
                    self.env.cni_leftovers())
        harness.wait_for("no rkt pod, unit, cgroup, state directory or network left",
                         lambda: not any(left()), timeout=90, interval=1)
        self.assertFalse(any(left()), left())
        # The normal path is quiet: warnings are for real trouble (a normal removal once
        # warned of "leftover pod"s and rkt's exit status 254).
        # rkt's own intermittent never-ready sandbox (docs/rkt.md, 'Quirks') is real trouble, of
        # rkt's: its retry is warned of, rightly.
        noisy = [line for line in self.env.daemon.log().splitlines()
                 if line[:3] in ("<0>", "<1>", "<2>", "<3>", "<4>") and
                 "did not become ready in time" not in line]
        self.assertEqual(noisy, [])


class LifecycleTest(RealRktBase):
    def test_two_pods_two_containers(self):
        image_id = self.pull()
        self.assertRegex(image_id, r"^sha512-[0-9a-f]{64}$")
        st = self.im.ImageStatus(pb.ImageStatusRequest(image=pb.ImageSpec(image="busybox")),
                                 timeout=10)
        self.assertEqual(st.image.id, image_id)
        self.assertIn(BUSYBOX, st.image.repo_tags)

        pods = [self.run_pod("one"), self.run_pod("two")]
        net = ipaddress.ip_network("10.88.0.0/24")  # the test's CNI network in the host
        for _, _, ip in pods:
            self.assertIn(ipaddress.ip_address(ip), net)
        self.assertNotEqual(pods[0][2], pods[1][2])
        # The IP is on no interface of this machine's own network namespace.
        self.assertNotIn(pods[0][2], os.popen("ip -o addr").read())

        (s1, c1, ip1), (s2, c2, _) = pods
        web = self.create(s1, c1, "web",
                          ["/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/etc"])
        fail = self.create(s1, c1, "fail", ["sh", "-c", "sleep 1; exit 1"])
        stubborn = self.create(s2, c2, "stubborn", ["sh", "-c", "trap '' TERM; sleep 3600"])
        ok = self.create(s2, c2, "ok", ["sh", "-c", "sleep 1; exit 0"])
        for cid in (web, fail, stubborn, ok):
            st = self.ctr(cid)
            self.assertEqual(st.state, pb.CONTAINER_CREATED)
            self.assertEqual(st.image_ref, image_id)  # from create on, not the name
        for cid in (web, fail, stubborn, ok):
            t0 = self.start(cid)
            st = self.wait_state(cid, pb.CONTAINER_RUNNING)
            print("[figure] StartContainer to RUNNING: %.0f ms" %
                  ((time.monotonic() - t0) * 1000))
            self.assertGreater(st.started_at, 0)
        self.assertEqual(len(self.rs.ListContainers(pb.ListContainersRequest()).containers), 4)

        # The pod's IP answers, from inside the host's network namespace only.
        body = harness.wait_for("httpd answering on the pod IP", lambda: self.env.run(
            "busybox", "wget", "-qO-", "http://%s:8080/passwd" % ip1, check=False).stdout,
            timeout=30, interval=0.2)
        self.assertIn("root:x:0:0", body)

        self.assertEqual(self.wait_state(fail, pb.CONTAINER_EXITED).exit_code, 1)
        self.assertEqual(self.wait_state(ok, pb.CONTAINER_EXITED).exit_code, 0)
        for cid, timeout, code in ((web, 10, 143), (stubborn, 2, 137)):
            t0 = time.monotonic()
            self.rs.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=timeout),
                                  timeout=30)
            st = self.wait_state(cid, pb.CONTAINER_EXITED, timeout=60)
            print("[figure] StopContainer(timeout=%d) to EXITED: %.0f ms" % (
                timeout, (time.monotonic() - t0) * 1000))
            self.assertEqual(st.exit_code, code)
            self.assertGreaterEqual(st.finished_at, st.started_at)

        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=fail), timeout=10)
        for sid, _, _ in pods:
            self.stop_remove(sid)
        self.assertEqual(len(self.rs.ListPodSandbox(pb.ListPodSandboxRequest()).items), 0)
        self.assert_nothing_left()

    def test_app_rm_keeps_its_image_siblings(self):
        """rkt 1.30's app rm deleted its image's whole overlay directory in the pod, with the
        writable layer of every other app of that image (docs/rkt.md, 'Quirks'): a running
        one lost its files, and one added but not started yet could never start (exit
        226). The rkt that scripts/build-rkt makes takes only the app's own layer
        (packaging/rkt/app-rm-shared-image.patch), so the reconciler runs rkt's app rm for
        such an app at once (orphans.c), and the others keep their files."""
        self.pull()
        sid, cfg, _ = self.run_pod("siblings")
        keep = self.create(sid, cfg, "keep", ["sh", "-c", "echo kept > /marker; sleep 3600"])
        gone = self.create(sid, cfg, "gone", ["sleep", "3600"])
        for cid in (keep, gone):
            self.start(cid)
            self.wait_state(cid, pb.CONTAINER_RUNNING)
        self.rs.StopContainer(pb.StopContainerRequest(container_id=gone, timeout=0), timeout=30)
        self.wait_state(gone, pb.CONTAINER_EXITED, timeout=120)
        # Added to the pod (its layers made), not started.
        late = self.create(sid, cfg, "late", ["sleep", "3600"])
        harness.wait_for("late added to the pod", lambda: self.app_of(late) in
                         self.rkt_apps(sid), timeout=120)
        app = self.app_of(gone)
        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=gone), timeout=10)
        harness.wait_for("gone's app removed from the pod",
                         lambda: app not in self.rkt_apps(sid), timeout=120)
        out = self.rs.ExecSync(pb.ExecSyncRequest(container_id=keep, cmd=["cat", "/marker"],
                                                  timeout=30), timeout=60)
        self.assertEqual((out.exit_code, out.stdout), (0, b"kept\n"))
        self.start(late)
        self.wait_state(late, pb.CONTAINER_RUNNING, timeout=120)
        self.stop_remove(sid)
        self.assert_nothing_left()

    def test_args_run_with_the_image_entrypoint(self):
        """A container given args but no command runs them with its image's ENTRYPOINT
        (Kubernetes' rule), and one with neither runs ENTRYPOINT and CMD. rktlet gave rkt
        the args alone: the image's entrypoint was lost and the app could not start
        (agnhost's "entrypoint-tester" became the program)."""
        image = self.pull("docker.io/rktsim/nonroot:latest")  # ENTRYPOINT sleep, CMD 3600
        sid, cfg, _ = self.run_pod("entrypoint")
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="args"),
                                image=pb.ImageSpec(image=image), args=["1"], log_path="a.log")
        args = self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10).container_id
        none = self.create(sid, cfg, "none", None, image=image)
        for cid in (args, none):
            self.start(cid)
        st = self.wait_state(args, pb.CONTAINER_EXITED, timeout=120)  # sleep 1 ran
        self.assertEqual((st.exit_code, st.reason), (0, "Completed"))
        self.assertEqual(self.ctr(none).state, pb.CONTAINER_RUNNING)  # sleep 3600 runs
        self.stop_remove(sid)
        self.assert_nothing_left()

    def app_of(self, cid):
        return json.loads(self.rs.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid, verbose=True), timeout=10).info["info"])["appName"]

    def rkt_apps(self, sid):
        uuid = json.loads(self.pod(sid, verbose=True)[1]["info"])["rktUuid"]
        return self.env.rkt("app", "list", uuid).stdout

    def test_pod_with_empty_netinfo_is_removed(self):
        """rkt 1.30 cannot load a pod whose net-info.json is empty (stage1 creates the file,
        then writes it: a pod stopped in between keeps it empty, seen in chaos soaks), and
        its rm fails for ever. RemovePodSandbox still leaves nothing behind."""
        sid, cfg, ip = self.run_pod("netinfo")
        # Stopped behind rktlet's back: after its own stop it removes the pod at once.
        uuid = self.rkt_pods()[0]["name"]
        self.env.rkt("stop", uuid)
        harness.wait_for("the rkt pod exited", lambda: [
            p for p in self.rkt_pods() if p.get("state") == "exited"], timeout=60)
        harness.wait_for("the sandbox not ready", lambda: self.pod(sid).state ==
                         pb.SANDBOX_NOTREADY, timeout=60)
        path = os.path.join(self.env.rkt_dir, "pods", "run", uuid, "net-info.json")
        self.env.run("truncate", "-s", "0", path)
        # rkt itself is stuck on it.
        r = self.env.rkt("rm", uuid, check=False)
        self.assertEqual(r.returncode, 254)
        self.assertIn("cannot get pod: EOF", r.stderr)
        self.stop_remove(sid)

        def left():
            return (self.rkt_pods(), self.units(), self.cgroups(), self.state_dirs())
        harness.wait_for("no rkt pod, unit, cgroup or state directory left",
                         lambda: not any(left()), timeout=90, interval=1)
        self.assertIn("net-info.json being empty", self.env.daemon.log())


class DroppedBootTest(RealRktBase):
    """rkt 1.30's pod systemd (252) sometimes drops its boot transaction: no job left,
    default.target inactive, so the pod never gets ready (one sandbox in seven under load).
    The test puts a booting pod in that state by cancelling its jobs; the daemon must start
    default.target again, making the same rkt pod ready, long before the ready timeout
    (here 300 s, so that a replacement pod cannot pass for it)."""
    extra = ("--sandbox-ready-timeout", "300")

    # Inside the host: the pod's own systemd, once its bus is up; then the jobs of its boot
    # cancelled until it idles with default.target inactive ("dropped"), or "ready" when
    # the boot won the race.
    DROP = r"""
state=$1 rkt=$2 sid=$3
for i in $(seq 3000); do
  [ -z "$uuid" ] && [ -s $state/pods/$sid/uuid ] && read -r uuid < $state/pods/$sid/uuid
  [ -n "$uuid" ] && [ -s $rkt/pods/run/$uuid/ppid ] && read -r n < $rkt/pods/run/$uuid/ppid
  init=
  [ -n "$n" ] && read -r init rest < /proc/$n/task/$n/children 2>/dev/null
  # Not nspawn's passing child, which still has the host's root (and its systemd's socket).
  [ -n "$init" ] && [ -d /proc/$init/root/rkt ] && [ -S /proc/$init/root/run/systemd/private ] &&
    break
  sleep 0.005
done
[ -S /proc/$init/root/run/systemd/private ] || { echo "no pod systemd"; exit 1; }
for i in $(seq 400); do
  [ -L /proc/$init/root/rkt/supervisor-status ] && { echo ready; exit 0; }
  # Only the boot's own jobs: cancelling all of them may stop the pod altogether.
  ids=$(nsenter -t $init -m -p systemctl list-jobs --no-legend 2>/dev/null |
        awk '/default.target|supervisor-ready/ {print $1}')
  [ -n "$ids" ] && nsenter -t $init -m -p systemctl cancel $ids >/dev/null 2>&1
  if [ -z "$(nsenter -t $init -m -p systemctl list-jobs --no-legend 2>/dev/null)" ] &&
     [ "$(nsenter -t $init -m -p systemctl is-active default.target)" = inactive ]; then
    sleep 1
    [ -L /proc/$init/root/rkt/supervisor-status ] && { echo ready; exit 0; }
    echo dropped; exit 0
  fi
done
echo "still booting: $(nsenter -t $init -m -p systemctl list-jobs --no-legend 2>&1 | head -3)" \
  "default.target $(nsenter -t $init -m -p systemctl is-active default.target)"; exit 1
"""

    def test_pod_that_dropped_its_boot_gets_ready(self):
        for attempt in range(10):
            cfg = pb.PodSandboxConfig(metadata=pb.PodSandboxMetadata(
                name="dropped%d" % attempt, uid="dropped-uid%d" % attempt, namespace="e2e"))
            sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                        timeout=10).pod_sandbox_id
            self.sandboxes.append(sid)
            how = self.env.run("sh", "-c", self.DROP, "drop", self.env.daemon.state_dir,
                               self.env.rkt_dir, sid, timeout=120, check=False).stdout.strip()
            if how == "dropped":
                break
            print("\n[note] attempt %d: the boot won the race (%s)" % (attempt, how))
            self.stop_remove(sid)
        else:
            self.skipTest("every pod booted before its jobs could be cancelled")
        t0 = time.monotonic()
        harness.wait_for("the pod that dropped its boot running", lambda: json.loads(
            self.pod(sid, verbose=True)[1]["info"]).get("phase") == "running", timeout=60)
        print("\n[figure] dropped boot to running: %.1f s" % (time.monotonic() - t0))
        self.assertIn("had dropped its boot", self.env.daemon.log())
        self.assertNotIn("did not become ready", self.env.daemon.log())
        self.stop_remove(sid)
        self.assert_nothing_left()


class WaitTest(RealRktBase):
    """--wait: each mutating call answers once rkt has carried it out, so that the very next
    status call shows it (without --wait each of these reads would see the call only
    recorded: no IP, CREATED, RUNNING)."""
    extra = ("--wait",)

    def test_calls_answer_once_carried_out(self):
        self.pull()
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="waited", uid="waited-uid", namespace="e2e"),
            log_directory=os.path.join(self.env.dir, "logs", "waited"))
        t0 = time.monotonic()
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=240).pod_sandbox_id
        self.sandboxes.append(sid)
        print("\n[figure] RunPodSandbox --wait: %.0f ms" % ((time.monotonic() - t0) * 1000))
        st, info = self.pod(sid, verbose=True)
        self.assertEqual(st.state, pb.SANDBOX_READY)
        self.assertTrue(st.network.ip)
        self.assertEqual(json.loads(info["info"])["phase"], "running")
        # Its start, step by step (the network's steps and stage1's overlap).
        steps = json.loads(info["info"])["timelineUs"]
        print("[figure] RunPodSandbox --wait, its steps in ms: %s" % ", ".join(
            "%s %.0f" % (k, v / 1e3) for k, v in steps.items()))
        order = ("unit_started", "pod_seen", "netns_seen", "net_add_begun", "net_add_done",
                 "running")
        self.assertEqual([steps[k] for k in order], sorted(steps[k] for k in order), steps)
        self.assertLessEqual(steps["stage1_ready"], steps["running"])

        sleeper = self.create(sid, cfg, "sleeper", ["sh", "-c", "trap '' TERM; sleep 3600"])
        quick = self.create(sid, cfg, "quick", ["sh", "-c", "sleep 3600"])
        t0 = self.start(sleeper)
        print("[figure] StartContainer --wait: %.0f ms" % ((time.monotonic() - t0) * 1000))
        self.assertEqual(self.ctr(sleeper).state, pb.CONTAINER_RUNNING)
        self.start(quick)
        self.assertEqual(self.ctr(quick).state, pb.CONTAINER_RUNNING)
        # A repeated start waits as well, and finds it done.
        self.start(quick)

        # SIGTERM is ignored: the answer comes after the SIGKILL at the 2 s deadline.
        self.rs.StopContainer(pb.StopContainerRequest(container_id=sleeper, timeout=2),
                              timeout=60)
        st = self.ctr(sleeper)
        self.assertEqual((st.state, st.exit_code), (pb.CONTAINER_EXITED, 137))

        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=120)
        self.assertEqual(self.pod(sid).state, pb.SANDBOX_NOTREADY)
        self.assertEqual(self.ctr(quick).state, pb.CONTAINER_EXITED)
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=30)
        self.assert_nothing_left()


class Stage1ImportTest(RealRktBase):
    """A new node's store has no stage1, and rkt imports it from the file with every pod it
    prepares until one import has ended: a first batch hashed the same image once a pod.
    rktlet imports it once, as soon as it has listed the store, and sandboxes wait for that."""

    def test_imported_once_before_any_pod(self):
        harness.wait_for("the import under way", lambda: "importing '" in self.env.daemon.log(),
                         timeout=60)
        self.assertEqual(self.rkt_pods(), [])
        self.pull()
        names = ["first-%d" % i for i in range(3)]
        done = []
        threads = [threading.Thread(target=lambda n=n: done.append(self.run_pod(n)))
                   for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        self.assertEqual(len(done), len(names))
        out = self.env.rkt("image", "list", "--format=json", "--full").stdout
        self.assertEqual([i["name"] for i in json.loads(out)].count(
            "coreos.com/rkt/stage1-host:1.30.0"), 1)
        lines = self.env.daemon.log().splitlines()
        imported = [k for k, line in enumerate(lines) if "imported stage1 from" in line]
        started = [k for k, line in enumerate(lines) if ": started rktlet-" in line]
        self.assertEqual(len(imported), 1, lines)
        self.assertTrue(started and min(started) > imported[0], lines)
        self.assert_assets_have_what_ldd_lists()
        for sid in self.sandboxes:
            self.stop_remove(sid)
        self.assert_nothing_left()

    def assert_assets_have_what_ldd_lists(self):
        """stage1 copies the host's systemd, bash and mount with their libraries, which its
        files' own loader lists (stage1-so-libs-by-loader.patch), and keeps the list in the
        store (stage1-host-assets-cache.patch): it holds every library ldd names for them."""
        with open(os.path.join(self.env.rkt_dir, "cache", "stage1-host-assets.json")) as f:
            cache = json.load(f)

        def local(asset):  # as stage1 names a file: its directory's symlinks resolved
            path = asset.split(":", 1)[1]
            return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        copied = {local(r["asset"]) for r in cache["records"]}
        binaries = [local(a) for a in cache["input"]]
        checked = 0
        for b in binaries:
            out = subprocess.run(["ldd", b], capture_output=True, text=True)
            if out.returncode != 0:  # a unit file: not a dynamic executable
                continue
            for lib in re.findall(r"^\t(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)$",
                                  out.stdout, re.M):
                self.assertIn(local(":" + lib), copied, "%s needs %s" % (b, lib))
                checked += 1
        self.assertGreater(checked, 10)


class PodResourcesTest(RealRktBase):
    """UpdatePodSandboxResources (in-place pod resize): the pod's own limits on its unit's
    cgroups, as systemd writes them."""

    def cgroup_value(self, sid, controller, name):
        path = "/sys/fs/cgroup/%s/system.slice/rktlet-%s.service/%s" % (controller, sid, name)
        r = self.env.run("cat", path, check=False)
        return r.stdout.strip() if r.returncode == 0 else None

    def test_update_pod_sandbox_resources(self):
        self.pull()
        sid, _, _ = self.run_pod("resized")
        res = pb.LinuxContainerResources(memory_limit_in_bytes=256 << 20, cpu_period=100000,
                                         cpu_quota=50000, cpu_shares=512)
        self.rs.UpdatePodSandboxResources(pb.UpdatePodSandboxResourcesRequest(
            pod_sandbox_id=sid, resources=res,
            overhead=pb.LinuxContainerResources(memory_limit_in_bytes=1 << 20)), timeout=10)
        harness.wait_for("the pod's memory limit", lambda: self.cgroup_value(
            sid, "memory", "memory.limit_in_bytes") == str(256 << 20), timeout=30)
        self.assertEqual(self.cgroup_value(sid, "cpu", "cpu.cfs_quota_us"), "50000")
        self.assertEqual(self.cgroup_value(sid, "cpu", "cpu.shares"), "512")
        # Raised again, as a resize does.
        res.memory_limit_in_bytes = 512 << 20
        self.rs.UpdatePodSandboxResources(pb.UpdatePodSandboxResourcesRequest(
            pod_sandbox_id=sid, resources=res), timeout=10)
        harness.wait_for("the raised memory limit", lambda: self.cgroup_value(
            sid, "memory", "memory.limit_in_bytes") == str(512 << 20), timeout=30)
        for req, code in (
                (pb.UpdatePodSandboxResourcesRequest(pod_sandbox_id="f" * 64, resources=res),
                 grpc.StatusCode.NOT_FOUND),
                (pb.UpdatePodSandboxResourcesRequest(pod_sandbox_id=sid, resources=pb.
                                                     LinuxContainerResources(cpuset_cpus="0")),
                 grpc.StatusCode.INVALID_ARGUMENT),
                (pb.UpdatePodSandboxResourcesRequest(pod_sandbox_id=sid, resources=pb.
                                                     LinuxContainerResources(cpu_shares=-5)),
                 grpc.StatusCode.INVALID_ARGUMENT)):
            with self.assertRaises(grpc.RpcError) as e:
                self.rs.UpdatePodSandboxResources(req, timeout=10)
            self.assertEqual(e.exception.code(), code, e.exception.details())
        self.stop_remove(sid)
        self.assert_nothing_left()


class RestartTest(RealRktBase):
    def test_restart_adopts_running_pods(self):
        self.pull()
        sid, cfg, ip = self.run_pod("adopt")
        cid = self.create(sid, cfg, "sleeper", ["sleep", "3600"])
        self.start(cid)
        before = self.wait_state(cid, pb.CONTAINER_RUNNING)
        pid = self.env.daemon.daemon_pid()
        self.env.daemon.stop(signal.SIGKILL)
        self.env.daemon.expected_exit = False
        self.env.daemon.start(wrapper=self.env.enter)
        self.assertNotEqual(self.env.daemon.daemon_pid(), pid)
        self.connect()
        harness.wait_answering(self.rs)
        # The same pod and container, still running, not made again.
        st = self.pod(sid)
        self.assertEqual((st.state, st.network.ip), (pb.SANDBOX_READY, ip))
        after = self.ctr(cid)
        self.assertEqual(after.state, pb.CONTAINER_RUNNING)
        self.assertEqual(after.started_at, before.started_at)
        self.assertEqual(len(self.rkt_pods()), 1)
        self.rs.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=10), timeout=30)
        self.assertEqual(self.wait_state(cid, pb.CONTAINER_EXITED).exit_code, 143)
        self.stop_remove(sid)
        self.assert_nothing_left()


if __name__ == "__main__":
    unittest.main()
