"""The real kubelet (scripts/build-kubernetes: v1.34) standalone on rktlet on the real rkt:
static pods from a manifest directory, no API server, kubelet and rktlet both units of the
private systemd host, rktlet with --wait and the cluster's CNI network (tests/integration/
kubelet.py says how the host is made a node). Checked through kubelet's own API (/pods,
/stats/summary, /containerLogs, /metrics/cadvisor) and through CRI:

- a pod of two containers running with its IP from the CNI network, kubelet's labels and
  annotations on its sandbox, httpGet and exec readiness and liveness probes answered;
- a liveness probe that fails: the container restarted, restartCount and the CRI attempt
  growing; a container that crashes: restarted with kubelet's backoff (CrashLoopBackOff,
  growing gaps between attempts), its dead containers removed as kubelet removes them, from
  CRI and from its rkt pod;
- an init container run to completion before the app container starts;
- kubelet's log rotation (a small containerLogMaxSize) through ReopenContainerLog: every line,
  in order, once, across the rotated files, and the newest read back through kubelet;
- /stats/summary with the pods' CPU and memory (and network, with
  PodAndContainerStatsFromCRI, which also makes /metrics/cadvisor from CRI metrics);
- kubelet restarted, and rktlet killed with SIGKILL and restarted, mid-run: nothing that was
  running is recreated;
- image garbage collection by kubelet: an unused image removed, the images in use and the
  pinned stage1 kept;
- every static pod's manifest removed: the pods and everything of them gone from kubelet,
  CRI, rkt, systemd, CNI and rktlet's store.

Twice: with kubelet's default gates, and with EventedPLEG (GetContainerEvents instead of the
relist) and PodAndContainerStatsFromCRI on."""
import glob
import ipaddress
import json
import gzip
import os
import re
import signal
import sqlite3
import time
import unittest

import harness
import kubelet
import test_logs

pb, pbg = harness.stubs()

# As a user writes it: kubelet asks rktlet for docker.io/library/busybox:1.36 (the test
# registry's, through --registry-mirror docker.io=...).
BUSYBOX = "busybox:1.36"
SPARE = "docker.io/rktsim/nonroot:latest"  # pulled, never used: kubelet's image GC takes it
LOG_LINES = 600
LINE = re.compile(r"^line (\d+)$")


def pod(name, containers, init=(), volumes=(), labels=None, annotations=None, **spec):
    meta = {"name": name, "namespace": "default", "labels": dict(labels or {}),
            "annotations": dict(annotations or {})}
    s = {"containers": list(containers), "terminationGracePeriodSeconds": 2}
    if init:
        s["initContainers"] = list(init)
    if volumes:
        s["volumes"] = list(volumes)
    s.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s}


def container(name, script, **kw):
    return dict({"name": name, "image": BUSYBOX, "command": ["sh", "-c", script]}, **kw)


WEB = pod("web", labels={"app": "web"}, annotations={"rktlet.test/note": "kept as given"},
          containers=[
              container("httpd", "mkdir -p /www && echo ok >/www/healthz && "
                        "exec httpd -f -p 8080 -h /www",
                        readinessProbe={"httpGet": {"path": "/healthz", "port": 8080},
                                        "periodSeconds": 2},
                        livenessProbe={"httpGet": {"path": "/healthz", "port": 8080},
                                       "periodSeconds": 2, "failureThreshold": 3}),
              container("sidecar", "touch /tmp/ready && exec sleep 100000",
                        readinessProbe={"exec": {"command": ["cat", "/tmp/ready"]},
                                        "periodSeconds": 2})])
# Healthy for 6 s, then its liveness probe fails until kubelet restarts it.
LIVENESS = pod("liveness", [container(
    "app", "touch /tmp/healthy; sleep 6; rm /tmp/healthy; exec sleep 100000",
    livenessProbe={"exec": {"command": ["cat", "/tmp/healthy"]}, "initialDelaySeconds": 1,
                   "periodSeconds": 1, "failureThreshold": 2})])
CRASHY = pod("crashy", [container("app", "echo crashing; exit 3")])
INIT = pod("init", init=[container("prepare", "echo prepared >/work/marker; sleep 2",
                                   volumeMounts=[{"name": "work", "mountPath": "/work"}])],
           containers=[container("main", "cat /work/marker; exec sleep 100000",
                                 volumeMounts=[{"name": "work", "mountPath": "/work"}])],
           volumes=[{"name": "work", "emptyDir": {}}])
LOGGER = pod("logger", [container(
    "log", "i=1; while [ $i -le %d ]; do echo line $i; i=$((i+1)); sleep 0.1; done; "
    "exec sleep 100000" % LOG_LINES)])
ALL = {"web": WEB, "liveness": LIVENESS, "crashy": CRASHY, "init": INIT, "logger": LOGGER}


def parse_time(s):
    return time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


class KubeletBase:
    gates = {}
    image_gc = False

    def setUp(self):
        self.env = harness.RktEnv(self, extra=["--wait"]).start()
        self.ch = self.env.daemon.channel()
        self.addCleanup(self.ch.close)
        self.rs = pbg.RuntimeServiceStub(self.ch)
        self.im = pbg.ImageServiceStub(self.ch)
        config = {
            # Rotation that a minute of LOGGER's lines goes through several times over, with
            # room to keep every file.
            "containerLogMaxSize": "4Ki", "containerLogMaxFiles": 12,
            "containerLogMonitorInterval": "3s",
        }
        if self.image_gc:
            # Every unused image is over the threshold: kubelet's image GC (at its start, then
            # every 5 minutes) removes those it has known for longer than a second.
            config.update({"imageGCHighThresholdPercent": 1, "imageGCLowThresholdPercent": 0,
                           "imageMinimumGCAge": "1s"})
        self.kubelet = kubelet.Kubelet(self, self.env, config=config, feature_gates=self.gates)

    def reconnect(self):
        self.ch.close()
        self.ch = self.env.daemon.channel()
        self.rs = pbg.RuntimeServiceStub(self.ch)
        self.im = pbg.ImageServiceStub(self.ch)

    def sandboxes(self, name):
        return self.rs.ListPodSandbox(pb.ListPodSandboxRequest(filter=pb.PodSandboxFilter(
            label_selector={"io.kubernetes.pod.name": "%s-%s" % (name, self.kubelet.node)})),
            timeout=30).items

    def containers(self, name, container_name=None):
        sel = {"io.kubernetes.pod.name": "%s-%s" % (name, self.kubelet.node)}
        if container_name:
            sel["io.kubernetes.container.name"] = container_name
        return sorted(self.rs.ListContainers(pb.ListContainersRequest(
            filter=pb.ContainerFilter(label_selector=sel)), timeout=30).containers,
            key=lambda c: c.metadata.attempt)

    def running_ids(self):
        """{pod: (sandbox id, {container: id})} of what runs now."""
        out = {}
        for name in ("web", "init", "logger"):
            sb = [s for s in self.sandboxes(name) if s.state == pb.SANDBOX_READY]
            self.assertEqual(len(sb), 1, name)
            out[name] = (sb[0].id, {c.metadata.name: c.id for c in self.containers(name)
                                    if c.state == pb.CONTAINER_RUNNING})
        return out

    def watch_crashy(self):
        """Every attempt of crashy's container as CRI lists it, polled each second from the
        start (kubelet removes a pod's older dead containers as soon as a newer one dies):
        {attempt: created_at}, and the most containers it had at once."""
        import threading
        self.attempts, self.most_at_once = {}, 0
        stop = threading.Event()

        def poll():
            while not stop.wait(1):
                try:
                    cs = self.containers("crashy", "app")
                except Exception:  # rktlet killed meanwhile
                    continue
                for c in cs:
                    self.attempts.setdefault(c.metadata.attempt, c.created_at / 1e9)
                self.most_at_once = max(self.most_at_once, len(cs))
        t = threading.Thread(target=poll, daemon=True)
        t.start()
        self.addCleanup(t.join)
        self.addCleanup(stop.set)

    def test_node(self):
        k = self.kubelet
        self.im.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=SPARE)), timeout=300)
        k.start()
        for name, manifest in ALL.items():
            k.put_manifest(name, manifest)
        self.watch_crashy()

        self.check_web()
        self.check_init()
        before = self.running_ids()

        # kubelet restarted mid-run: it finds its pods and recreates nothing.
        k.restart()
        restarted = time.monotonic()
        self.kubelet_started_at = time.time()  # its backoffs start afresh
        self.wait_settled(before)

        # rktlet killed and restarted mid-run: the pods run on; kubelet sees the same ones.
        self.env.daemon.stop(signal.SIGKILL)
        self.env.daemon.start(wrapper=self.env.enter)
        self.reconnect()
        self.wait_settled(before)

        self.check_liveness_restarts()
        self.check_crash_loop()
        self.check_log_rotation()
        self.check_stats()
        if self.image_gc:
            self.check_image_gc(restarted)
        self.check_removal()

    def check_web(self):
        k = self.kubelet
        p = k.wait_pod("web", "running and ready", kubelet.running)
        ip = p["status"].get("podIP", "")
        self.assertIn(ipaddress.ip_address(ip), self.env.pod_net, p["status"])
        self.assertEqual(p["status"]["phase"], "Running")
        # One sandbox, its containers never restarted: kubelet kills a pod whose cgroup it
        # misses in a hierarchy, and when the host's cpuset tree was the machine's (shared
        # by every host: scripts/lib/cgroup.sh) another kubelet removed it there.
        self.assertEqual([c["restartCount"] for c in p["status"]["containerStatuses"]],
                         [0, 0], p["status"])
        self.assertEqual([s.metadata.attempt for s in self.sandboxes("web")], [0])
        # kubelet creates containers by the image's ID; each shows the image as the pod names
        # it (the runtime's user_specified_image), as on containerd.
        self.assertEqual({c["name"]: c["image"] for c in p["status"]["containerStatuses"]},
                         {c["name"]: c["image"] for c in p["spec"]["containers"]}, p["status"])
        with open("/proc/%d/cgroup" % self.env.pid1) as f:
            own = [line.split(":", 2)[2].strip() for line in f if ":cpuset:" in line]
        with open(os.path.join(self.env.dir, "host", "cgroup-name")) as f:
            self.assertEqual(own, ["/" + f.read().strip()])
        (sb,) = self.sandboxes("web")
        uid = p["metadata"]["uid"]
        self.assertEqual(sb.labels["io.kubernetes.pod.uid"], uid)
        self.assertEqual(sb.labels["io.kubernetes.pod.namespace"], "default")
        self.assertEqual(sb.labels["app"], "web")
        self.assertEqual(sb.annotations["rktlet.test/note"], "kept as given")
        self.assertEqual(sb.annotations["kubernetes.io/config.source"], "file")
        self.assertEqual(sb.metadata.uid, uid)
        st = self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sb.id),
                                      timeout=30).status
        self.assertEqual(st.network.ip, ip)
        # The pod answers from the node, as kubelet's probes reach it.
        self.assertEqual(self.env.run("curl", "-sf", "-m", "5",
                                      "http://%s:8080/healthz" % ip).stdout.strip(), "ok")
        for c in self.containers("web"):
            self.assertEqual(c.state, pb.CONTAINER_RUNNING, c.metadata.name)
            self.assertEqual(c.labels["io.kubernetes.container.name"], c.metadata.name)
            self.assertIn("io.kubernetes.container.hash", c.annotations)

    def check_init(self):
        k = self.kubelet
        p = k.wait_pod("init", "running", kubelet.running)
        init = kubelet.container_status(p, "prepare")
        done = init["state"].get("terminated")
        self.assertTrue(done, init)
        self.assertEqual((done["exitCode"], done["reason"]), (0, "Completed"))
        main = kubelet.container_status(p, "main")
        self.assertLessEqual(parse_time(done["finishedAt"]),
                             parse_time(main["state"]["running"]["startedAt"]))
        log = k.get("/containerLogs/default/init-%s/main" % k.node, secure=True, raw=True)
        self.assertEqual(log.strip(), "prepared")

    def wait_settled(self, before, seconds=15):
        """kubelet and rktlet both back: the pods as before, for a while (kubelet's PLEG and
        pod workers have looked at each in that time)."""
        harness.wait_for("kubelet healthy", self.kubelet.healthy, 120, interval=1)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                now = self.running_ids()
            except Exception:  # rktlet still starting
                time.sleep(1)
                deadline = max(deadline, time.monotonic() + 1)
                continue
            self.assertEqual(now, before, "a pod or container was recreated")
            time.sleep(1)
        for name in ("web", "init", "logger"):
            self.kubelet.wait_pod(name, "running", kubelet.running, timeout=120)

    def check_liveness_restarts(self):
        k = self.kubelet

        def restarted_twice(p):
            st = kubelet.container_status(p, "app") or {}
            # Settled: see check_crash_loop on the status between a death and the next sync.
            return st.get("restartCount", 0) >= 2 and "terminated" in st.get("lastState", {})
        p = k.wait_pod("liveness", "restarted twice by its liveness probe", restarted_twice,
                       timeout=240)
        st = kubelet.container_status(p, "app")
        attempts = [c.metadata.attempt for c in self.containers("liveness", "app")]
        self.assertGreaterEqual(max(attempts), 2, attempts)
        self.assertGreaterEqual(max(attempts), st["restartCount"] - 1)
        self.assertIn("terminated", st["lastState"], st)

    def check_crash_loop(self):
        k = self.kubelet
        seen_backoff = []

        def crashed_thrice(p):
            st = kubelet.container_status(p, "app") or {}
            if (st.get("state", {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff":
                seen_backoff.append(True)
            since = [t for t in self.attempts.values() if t > self.kubelet_started_at]
            # Between an attempt's death and kubelet's next sync the status says
            # "terminated" with no lastState: kubelet has already removed the attempt before
            # it (one dead container kept). Wait for the settled status, waiting or running.
            return (st.get("restartCount", 0) >= 3 and seen_backoff and len(since) >= 4
                    and "terminated" in st.get("lastState", {}))
        p = k.wait_pod("crashy", "restarted three times by this kubelet, in CrashLoopBackOff",
                       crashed_thrice, timeout=300)
        st = kubelet.container_status(p, "app")
        self.assertEqual(st["lastState"]["terminated"]["exitCode"], 3, st)
        self.assertEqual(st["lastState"]["terminated"]["reason"], "Error", st)
        # kubelet's backoff (10 s, doubling, counted from the previous attempt's end; the
        # first restart is at once; kept in memory, so afresh after kubelet's restart): each
        # attempt waits longer than the one before.
        created = [self.attempts[a] for a in sorted(self.attempts)
                   if self.attempts[a] > self.kubelet_started_at]
        gaps = [b - a for a, b in zip(created, created[1:])]
        self.assertGreaterEqual(len(gaps), 3, self.attempts)
        self.assertEqual(gaps, sorted(gaps), "the waits between attempts do not grow")
        self.assertGreaterEqual(gaps[-1], 10, gaps)
        # kubelet keeps one dead container a container, removing older ones as soon as a
        # newer one dies (and the rest with its GC, once a minute): from CRI and from rkt.
        self.assertLessEqual(self.most_at_once, 2, self.attempts)
        (sb,) = [s for s in self.sandboxes("crashy") if s.state == pb.SANDBOX_READY]
        st = self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sb.id,
                                                                 verbose=True), timeout=30)
        uuid = json.loads(st.info["info"])["rktUuid"]
        harness.wait_for("crashy's dead apps removed from its rkt pod", lambda: len([
            line for line in self.env.rkt("app", "list", uuid,
                                          "--no-legend").stdout.splitlines()
            if line.strip()]) <= 2, 60, interval=1)

    def check_log_rotation(self):
        k = self.kubelet
        p = k.wait_pod("logger", "running", kubelet.running)
        uid = p["metadata"]["uid"]
        d = os.path.join(k.pod_logs, "default_logger-%s_%s" % (k.node, uid), "log")

        def files():
            return sorted(glob.glob(os.path.join(d, "0.log.*")))
        current = os.path.join(d, "0.log")

        def numbers():
            """The lines of every file, oldest first; read again whenever kubelet rotated or
            compressed a file while they were read."""
            while True:
                nums, seen = [], files()
                try:
                    for f in seen + [current]:
                        if f.endswith(".gz"):
                            plain = os.path.join(self.env.dir, "rotated.log")
                            with gzip.open(f, "rb") as src, open(plain, "wb") as dst:
                                dst.write(src.read())
                            f = plain
                        nums += [int(m.group(1)) for m in (LINE.match(line) for line in
                                 test_logs.lines(test_logs.records(f))) if m]
                except FileNotFoundError:
                    continue
                if files() == seen:
                    return nums
        harness.wait_for("the logger's last line", lambda: LOG_LINES in numbers(), 240,
                         interval=2)
        nums = numbers()
        self.assertGreaterEqual(len(files()), 2, "kubelet rotated the log less than twice")
        self.assertEqual(nums, list(range(1, LOG_LINES + 1)),
                         "lines lost or doubled across %d files" % (len(files()) + 1))
        # kubelet's log API reads the current file: the newest lines, in order.
        got = k.get("/containerLogs/default/logger-%s/log" % k.node, secure=True, raw=True)
        api = [int(m.group(1)) for m in (LINE.match(line) for line in got.splitlines()) if m]
        self.assertTrue(api, got[-500:])
        self.assertEqual(api, list(range(api[0], LOG_LINES + 1)))

    def check_stats(self):
        k = self.kubelet
        from_cri = self.gates.get("PodAndContainerStatsFromCRI", False)

        def usage():
            s = k.get("/stats/summary")
            pods = {p["podRef"]["name"]: p for p in s.get("pods") or []}
            web = pods.get("web-" + k.node)
            if not web:
                return None
            cs = {c["name"]: c for c in web.get("containers") or []}
            if set(cs) != {"httpd", "sidecar"}:
                return None
            for c in cs.values():
                if not (c.get("cpu", {}).get("usageCoreNanoSeconds", 0) > 0 and
                        c.get("memory", {}).get("workingSetBytes", 0) > 0):
                    return None
            if web.get("memory", {}).get("workingSetBytes", 0) <= 0:
                return None
            if from_cri and not (web.get("network") or {}).get("rxBytes", 0) > 0:
                return None
            return web
        harness.wait_for("the web pod's CPU, memory%s in /stats/summary" % (
            " and network" if from_cri else ""), usage, 120, interval=2)
        if from_cri:
            metrics = k.get("/metrics/cadvisor", raw=True)
            mine = [line for line in metrics.splitlines()
                    if line.startswith("container_cpu_usage_seconds_total{") and
                    'pod="web-%s"' % k.node in line]
            self.assertTrue(mine, metrics[:2000])

    def check_image_gc(self, restarted):
        """kubelet's image GC (its second run, 5 minutes after its start): the spare image
        goes; busybox, in use, and the pinned stage1 stay."""
        def images():
            return self.im.ListImages(pb.ListImagesRequest(), timeout=30).images
        left = 330 - (time.monotonic() - restarted)
        harness.wait_for("kubelet's image GC of %s" % SPARE, lambda: not any(
            SPARE in im.repo_tags for im in images()), max(left, 30) + 60, interval=5)
        tags = [t for im in images() for t in im.repo_tags]
        self.assertIn("docker.io/library/busybox:1.36", tags)
        self.assertEqual(len([im for im in images() if im.pinned]), 1, images())

    def check_removal(self):
        k = self.kubelet
        for name in ALL:
            k.remove_manifest(name)
        harness.wait_empty("kubelet's pods gone", lambda: list(k.pods()), 120, interval=1)
        # kubelet removes a deleted pod's sandboxes with its container GC (once a minute).
        harness.wait_empty("every sandbox removed", lambda: [
            s.id for s in self.rs.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=30).items],
            150, interval=2)
        self.assertEqual(list(self.rs.ListContainers(pb.ListContainersRequest(),
                                                     timeout=30).containers), [])
        harness.wait_empty("nothing of the pods left in rkt, systemd or CNI", lambda: [
            line for line in self.env.rkt("list", "--no-legend").stdout.splitlines()
            if line.strip()] + [
            line for line in self.env.run("systemctl", "list-units", "--all", "--no-legend",
                                          "--plain", "rktlet-*.service").stdout.splitlines()
            if line.strip()] + self.env.cni_leftovers(), 120, interval=1)
        db = sqlite3.connect(os.path.join(self.env.daemon.state_dir, "rktlet.db"))
        try:
            left = [r[0] for r in db.execute("SELECT id FROM sandbox")] + \
                [r[0] for r in db.execute("SELECT id FROM container")]
        finally:
            db.close()
        self.assertEqual(left, [], "records left in rktlet's store")


class KubeletTest(KubeletBase, unittest.TestCase):
    """kubelet's default gates: the relisting PLEG, stats partly from cAdvisor."""
    image_gc = True


class KubeletEventedTest(KubeletBase, unittest.TestCase):
    """EventedPLEG and PodAndContainerStatsFromCRI on."""
    gates = {"EventedPLEG": True, "PodAndContainerStatsFromCRI": True}


if __name__ == "__main__":
    unittest.main()
