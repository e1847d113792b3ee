"""A two-node Kubernetes cluster on rktlet on the real rkt, brought up by scripts/try-cluster
as a user runs it (docs/cluster.md), and what a user does on it, through kubectl and the API
server:

- a Deployment of 4 replicas spread over both nodes (2 each), none restarted; a ClusterIP
  Service backed by a pod on node2, reached by its DNS name from a pod on node1 (CoreDNS,
  kube-proxy's iptables rules, the wire);
- kubectl logs -f to the container's end; kubectl exec -it in a real terminal (tty names the
  container's pty, and the shell answers what is typed); kubectl attach -i; kubectl
  port-forward from the machine's loopback to a pod: all through the API server and kubelet to
  rktlet's streaming server;
- a rolling update of the Deployment; kubectl drain of node2 moves its pods to node1; a Job to
  completion; a pod with resource limits, its memory limit in its cgroup and its usage read from
  the summary API as kubectl top reads it;
- try-cluster --stop leaves nothing: no process, mount, cgroup, link or iptables rule of the
  machine's, nor the directory.

Faults (FaultsTest, a cluster of its own): rktlet killed with SIGKILL on node1 during a
rolling update; kubelet restarted; node2's host restarted as a reboot would (try-cluster
--reboot); node2's wire cut for longer than the node grace period. Figures (FiguresTest):
20 pods from one kubectl apply to Ready, by node, and the API-visible pod startup latency.
Times are printed, never asserted."""
import calendar
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
import unittest
import urllib.request

import cluster
import harness

BUSYBOX = "busybox:1.36"


def deployment(name, replicas, script, node=None, env=None, spread=True, grace=2):
    spec = {"terminationGracePeriodSeconds": grace, "containers": [{
        "name": "main", "image": BUSYBOX, "command": ["sh", "-c", script],
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()]}]}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if spread:
        # Cordoned (drained) nodes are no place to spread to: nodeTaintsPolicy Honor.
        spec["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "Honor",
            "labelSelector": {"matchLabels": {"app": name}},
            "matchLabelKeys": ["pod-template-hash"]}]  # each revision spread on its own
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def web(name, replicas, **kw):
    """busybox's httpd on 8080 serving the pod's name, ready when it answers."""
    d = deployment(name, replicas, "mkdir -p /www && hostname >/www/index.html && "
                   "exec httpd -f -p 8080 -h /www", **kw)
    c = d["spec"]["template"]["spec"]["containers"][0]
    c["ports"] = [{"containerPort": 8080}]
    c["readinessProbe"] = {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}
    return d


def service(name):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]}}


def pod(name, script, node=None, **container):
    c = dict({"name": "main", "image": BUSYBOX, "command": ["sh", "-c", script]}, **container)
    spec = {"containers": [c], "restartPolicy": "Never", "terminationGracePeriodSeconds": 1}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def ready(p):
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in p.get("status", {}).get("conditions") or [])


def restarts(p):
    return sum(s.get("restartCount", 0) for s in p["status"].get("containerStatuses") or [])


def by_node(pods):
    out = {}
    for p in pods:
        out.setdefault(p["spec"].get("nodeName"), []).append(p["metadata"]["name"])
    return out


class ClusterCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = cluster.Cluster()
        try:
            cls.cluster.start()
        except BaseException:
            cls.cluster.stop()
            raise
        print("\n[figure] try-cluster: up in %.0f s" % cls.cluster.up_seconds)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def setUp(self):
        self.c = self.cluster

    def wait_pods(self, selector, what, fn, timeout=180):
        got = {}

        def check():
            got["pods"] = self.c.pods(selector)
            return fn(got["pods"]) and got["pods"]
        try:
            return harness.wait_for(what, check, timeout, interval=1)
        except AssertionError:
            raise AssertionError("%s: not after %d s: %s" % (what, timeout, [
                (p["metadata"]["name"], p["spec"].get("nodeName"), p["status"].get("phase"))
                for p in got.get("pods", [])])) from None

    def running_pod(self, name, script, node=None, **container):
        self.c.apply(pod(name, script, node, **container))
        self.c.kubectl("wait", "--for=condition=Ready", "pod/" + name, "--timeout=120s",
                       timeout=150)


class UserTest(ClusterCase):
    """One cluster; the tests run in their numbered order, each leaving it as it found it."""

    def test_1_deployment_and_service_by_name(self):
        c = self.c
        self.assertRegex(c.output.strip().splitlines()[-1],
                         r"^export KUBECONFIG=\S+/kubeconfig PATH=\S+/bin:\$PATH$")
        nodes = c.get("nodes")["items"]
        self.assertEqual(sorted(n["metadata"]["name"] for n in nodes), list(cluster.NODES))
        for n in nodes:
            self.assertTrue(n["status"]["nodeInfo"]["containerRuntimeVersion"].startswith(
                "rktlet://"), n["status"]["nodeInfo"])
        dns = c.pods("k8s-app=kube-dns", namespace="kube-system")
        self.assertTrue(dns and all(ready(p) for p in dns))

        t0 = time.monotonic()
        c.apply(web("web", 4), service("web"))
        c.wait_rollout("web")
        print("\n[figure] Deployment of 4: available after %.1f s" % (time.monotonic() - t0))
        pods = c.pods("app=web")
        self.assertEqual({n: len(p) for n, p in by_node(pods).items()}, {"node1": 2, "node2": 2})
        self.assertEqual([restarts(p) for p in pods], [0] * 4)

        # A Service whose only pod is on node2, by name from a pod on node1.
        c.apply(web("solo", 1, node="node2", spread=False), service("solo"))
        c.wait_rollout("solo")
        (solo,) = c.pods("app=solo")
        self.running_pod("client", "exec sleep 3600", node="node1")
        out = c.kubectl("exec", "client", "--", "busybox", "wget", "-q", "-O", "-",
                        "http://solo/").stdout
        self.assertEqual(out.strip(), solo["metadata"]["name"])
        out = c.kubectl("exec", "client", "--", "busybox", "nslookup",
                        "solo.default.svc.cluster.local")
        self.assertIn(c.get("service", "solo")["spec"]["clusterIP"], out.stdout)
        # And the Deployment's Service, from both nodes' pods.
        seen = set()
        for _ in range(12):
            seen.add(c.kubectl("exec", "client", "--", "busybox", "wget", "-q", "-O", "-",
                               "http://web.default.svc.cluster.local/").stdout.strip())
        names = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods}
        self.assertLessEqual(seen, set(names))
        print("[figure] the Service web answered from %d of its 4 pods in 12 requests "
              "(nodes %s)" % (len(seen), sorted({names[s] for s in seen})))
        c.kubectl("delete", "deployment/solo", "service/solo", "pod/client", "--wait=false")

    def test_2_logs_follow(self):
        c = self.c
        c.apply(pod("logger", "for i in 1 2 3 4 5 6; do echo line $i; sleep 1; done",
                    node="node2"))
        c.kubectl("wait", "--for=condition=Ready", "pod/logger", "--timeout=120s", timeout=150)
        # -f follows the file as it grows, and ends when the container does.
        t0 = time.monotonic()
        out = c.kubectl("logs", "-f", "logger", timeout=60).stdout
        self.assertEqual(out.splitlines(), ["line %d" % i for i in range(1, 7)])
        self.assertGreater(time.monotonic() - t0, 1.5)  # it waited for lines still to come
        c.kubectl("delete", "pod/logger", "--wait=false")

    def test_3_exec_in_a_terminal(self):
        c = self.c
        self.running_pod("shell", "exec sleep 3600", node="node1")
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
        p = c.popen("exec", "-it", "shell", "--", "sh", stdin=slave, stdout=slave,
                    stderr=slave, start_new_session=True)
        os.close(slave)
        out = b""
        typed = False
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                # Typed at the shell's prompt, as one does: kubectl has passed the terminal's
                # size on by then.
                if not typed and b"# " in out:
                    os.write(master, b"tty; stty size; echo answer=$((6*7)); exit\n")
                    typed = True
                r, _, _ = select.select([master], [], [], 1)
                if not r:
                    if p.poll() is not None:
                        break
                    continue
                try:
                    data = os.read(master, 4096)
                except OSError:  # EIO: kubectl closed the terminal
                    break
                if not data:
                    break
                out += data
            p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            os.close(master)
        text = out.decode(errors="replace")
        self.assertRegex(text, r"/dev/pts/\d+")
        self.assertIn("answer=42", text)
        self.assertIn("33 101", text)  # the terminal's size, passed on
        self.assertEqual(p.returncode, 0, text)
        c.kubectl("delete", "pod/shell", "--wait=false")

    def test_4_attach(self):
        c = self.c
        echo = pod("echo", 'while read l; do echo "got: $l"; done', node="node2", stdin=True)
        c.apply(echo)
        c.kubectl("wait", "--for=condition=Ready", "pod/echo", "--timeout=120s", timeout=150)
        p = c.popen("attach", "-i", "echo", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL)
        try:
            got = b""
            deadline = time.monotonic() + 60
            sent = 0
            # Lines typed before the stream is up may be lost: type one a second until one
            # comes back.
            while b"got: hello" not in got and time.monotonic() < deadline:
                sent += 1
                p.stdin.write(b"hello %d\n" % sent)
                p.stdin.flush()
                r, _, _ = select.select([p.stdout], [], [], 1)
                if r:
                    got += os.read(p.stdout.fileno(), 4096)
        finally:
            p.kill()
            p.wait()
        self.assertRegex(got.decode(), r"got: hello \d+")
        c.kubectl("delete", "pod/echo", "--wait=false")

    def test_5_port_forward(self):
        c = self.c
        pods = c.pods("app=web")
        name = pods[0]["metadata"]["name"]
        port = harness.free_port()
        p = c.popen("port-forward", "--address", "127.0.0.1", "pod/" + name, "%d:8080" % port,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            line = p.stdout.readline()
            self.assertIn("Forwarding from 127.0.0.1:%d" % port, line)
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            for _ in range(3):
                with opener.open("http://127.0.0.1:%d/" % port, timeout=30) as r:
                    self.assertEqual(r.read().decode().strip(), name)
        finally:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stdout.close()

    def test_6_rolling_update(self):
        c = self.c
        before = {p["metadata"]["name"] for p in c.pods("app=web")}
        t0 = time.monotonic()
        c.kubectl("set", "env", "deployment/web", "VERSION=2")
        c.wait_rollout("web")
        print("\n[figure] rolling update of 4: %.1f s" % (time.monotonic() - t0))
        pods = self.wait_pods("app=web", "the old pods gone", lambda ps: len(ps) == 4)
        self.assertFalse(before & {p["metadata"]["name"] for p in pods})
        for p in pods:
            self.assertTrue(ready(p))
            self.assertEqual(p["spec"]["containers"][0]["env"], [{"name": "VERSION",
                                                                  "value": "2"}])
        self.assertEqual({n: len(p) for n, p in by_node(pods).items()}, {"node1": 2, "node2": 2})
        # On each node, CRI holds a ready sandbox for exactly the pods the API puts there.
        for node in cluster.NODES:
            harness.wait_for("%s's old sandboxes stopped" % node, lambda: sorted(
                s["metadata"]["name"] for s in c.sandboxes(node) if s["state"] ==
                "SANDBOX_READY") == sorted(p["metadata"]["name"] for p in c.pods()
                                           if p["spec"].get("nodeName") == node and
                                           p["status"].get("phase") == "Running"), 90, 1)

    def test_7_drain(self):
        c = self.c
        t0 = time.monotonic()
        c.kubectl("drain", "node2", "--ignore-daemonsets", "--delete-emptydir-data",
                  "--timeout=180s", timeout=240)
        try:
            pods = self.wait_pods("app=web", "every pod on node1", lambda ps: len(ps) == 4 and
                                  all(ready(p) and p["spec"]["nodeName"] == "node1"
                                      for p in ps))
            print("\n[figure] drain of node2: its pods ready on node1 after %.1f s" % (
                time.monotonic() - t0))
            self.assertEqual(len(pods), 4)
            harness.wait_for("node2's sandboxes stopped", lambda: not [
                s for s in c.sandboxes("node2") if s["state"] == "SANDBOX_READY"], 90, 1)
        finally:
            c.kubectl("uncordon", "node2")

    def test_8_job(self):
        c = self.c
        c.apply({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "count"},
                 "spec": {"completions": 4, "parallelism": 2, "backoffLimit": 0,
                          "template": {"spec": {"restartPolicy": "Never", "containers": [{
                              "name": "main", "image": BUSYBOX,
                              "command": ["sh", "-c", "echo counted $(hostname)"]}]}}}})
        t0 = time.monotonic()
        c.kubectl("wait", "--for=condition=Complete", "job/count", "--timeout=240s",
                  timeout=270)
        print("\n[figure] Job of 4 completions, 2 at a time: %.1f s" % (time.monotonic() - t0))
        job = c.get("job", "count")
        self.assertEqual(job["status"].get("succeeded"), 4)
        pods = c.pods("job-name=count")
        self.assertEqual(sorted(p["status"]["phase"] for p in pods), ["Succeeded"] * 4)
        out = c.kubectl("logs", pods[0]["metadata"]["name"]).stdout
        self.assertEqual(out.strip(), "counted " + pods[0]["metadata"]["name"])
        c.kubectl("delete", "job/count", "--wait=false")

    def test_9_limits_and_usage(self):
        c = self.c
        # Busy on about a fifth of a CPU: its quota is 200m.
        self.running_pod("limited", "while :; do :; done", node="node1", resources={
            "limits": {"cpu": "200m", "memory": "64Mi"},
            "requests": {"cpu": "100m", "memory": "32Mi"}})
        p = c.get("pod", "limited")
        self.assertEqual(p["status"]["qosClass"], "Burstable")
        uid = p["metadata"]["uid"].replace("-", "_")
        found = c.in_node("node1", "sh", "-c", "grep -rlx 67108864 /sys/fs/cgroup/memory/"
                          "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice"
                          " --include=memory.limit_in_bytes" % uid, check=False).stdout
        self.assertTrue(found.strip(), "no cgroup of the pod has its 64Mi memory limit")

        def usage():
            s = c.kubectl("get", "--raw", "/api/v1/nodes/node1/proxy/stats/summary").stdout
            for q in json.loads(s)["pods"]:
                if q["podRef"]["name"] == "limited":
                    cs = q.get("containers") or [{}]
                    cpu = cs[0].get("cpu", {}).get("usageNanoCores")
                    mem = cs[0].get("memory", {}).get("workingSetBytes")
                    if cpu and mem:
                        return cpu, mem
            return None
        cpu, mem = harness.wait_for("the pod's usage in the summary API", usage, 90, 2)
        print("\n[figure] a busy loop limited to 200m: %.0f millicores, %.1f MiB working set "
              "(summary API, as kubectl top reads it)" % (cpu / 1e6, mem / 2**20))
        self.assertLess(cpu, 0.3e9)  # held by its quota
        self.assertGreater(cpu, 0.05e9)
        self.assertLess(mem, 64 << 20)
        c.kubectl("delete", "pod/limited", "--wait=false")


def parse_time(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def percentile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]


class FaultsTest(ClusterCase):
    """Faults on a cluster of its own, in their numbered order; each ends with the Deployment
    roll at 4 ready pods and both nodes Ready."""

    def setUp(self):
        super().setUp()
        if not self.c.pods("app=roll"):
            self.c.apply(web("roll", 4))
            self.c.wait_rollout("roll")

    def node_ready(self, node):
        conds = self.c.get("node", node)["status"]["conditions"]
        return {x["type"]: x["status"] for x in conds}["Ready"]

    def check_one_sandbox_per_pod(self):
        """On each node, CRI's ready sandboxes of the namespace are the API's running pods
        there: none doubled, none left of a pod that is gone."""
        c = self.c
        for node in cluster.NODES:
            def same():
                cri = sorted(s["metadata"]["name"] for s in c.sandboxes(node)
                             if s["state"] == "SANDBOX_READY")
                api = sorted(p["metadata"]["name"] for p in c.pods()
                             if p["spec"].get("nodeName") == node and
                             p["status"].get("phase") == "Running" and
                             not p["metadata"].get("deletionTimestamp"))
                return cri == api or None
            harness.wait_for("%s's sandboxes those of its running pods" % node, same, 120, 1)

    def all_ready(self, pods):
        return len(pods) == 4 and all(ready(p) and not p["metadata"].get("deletionTimestamp")
                                      for p in pods)

    def test_1_rktlet_killed_during_rolling_update(self):
        c = self.c
        before = {p["metadata"]["name"] for p in c.pods("app=roll")}
        t0 = time.monotonic()
        c.kubectl("set", "env", "deployment/roll", "VERSION=2")
        # Once the new pods are on their way: SIGKILL to rktlet's main process (its pods are
        # units of their own and run on); systemd starts it again, as a node's does.
        harness.wait_for("the rollout under way", lambda: len(c.pods("app=roll")) > 4, 60, 0.2)
        c.in_node("node1", "systemctl", "kill", "--signal=KILL", "--kill-whom=main",
                  "rktlet.service")
        c.wait_rollout("roll")
        pods = self.wait_pods("app=roll", "4 new pods ready", self.all_ready)
        print("\n[figure] rolling update with rktlet SIGKILLed on node1: done in %.1f s" % (
            time.monotonic() - t0))
        self.assertFalse(before & {p["metadata"]["name"] for p in pods})
        restarted = c.in_node("node1", "systemctl", "show", "-p", "NRestarts", "--value",
                              "rktlet.service").stdout.strip()
        self.assertGreaterEqual(int(restarted), 1)
        self.check_one_sandbox_per_pod()

    def test_2_kubelet_restarted(self):
        c = self.c
        pods = c.pods("app=roll")
        ids = {p["metadata"]["name"]: [s["containerID"] for s in
                                       p["status"]["containerStatuses"]] for p in pods}
        sandboxes = {s["id"] for s in c.sandboxes("node2")}
        c.in_node("node2", "systemctl", "restart", "kubelet.service")
        harness.wait_for("node2 Ready", lambda: self.node_ready("node2") == "True", 120, 1)
        time.sleep(15)  # a few of kubelet's syncs
        after = c.pods("app=roll")
        self.assertEqual({p["metadata"]["name"]: [s["containerID"] for s in
                                                  p["status"]["containerStatuses"]]
                          for p in after}, ids)
        self.assertTrue(all(ready(p) for p in after))
        self.assertEqual({s["id"] for s in c.sandboxes("node2")}, sandboxes)

    def reboot_seconds(self, r):
        m = re.search(r"booted in (\d+) s", r.stdout)
        return float(m.group(1)) if m else float("nan")

    def test_3_node_rebooted(self):
        c = self.c
        on2 = {p["metadata"]["name"]: p["metadata"]["uid"] for p in c.pods("app=roll")
               if p["spec"]["nodeName"] == "node2"}
        self.assertTrue(on2)
        old = {s["id"] for s in c.sandboxes("node2")}
        old_containers = {s["containerID"] for p in c.pods("app=roll")
                          for s in p["status"]["containerStatuses"]}
        t0 = time.monotonic()
        r = c.script("--reboot", "node2", c.dir)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

        def recreated(ps):
            return self.all_ready(ps) and all(
                s.get("containerID") not in old_containers and s.get("ready")
                for p in ps if p["metadata"]["name"] in on2
                for s in p["status"]["containerStatuses"])
        pods = self.wait_pods("app=roll", "node2's pods running again in new containers",
                              recreated, timeout=300)
        print("\n[figure] node2 rebooted (try-cluster --reboot: %.1f s): its pods running "
              "again after %.1f s, restart counts %s" % (
                  self.reboot_seconds(r), time.monotonic() - t0,
                  [restarts(p) for p in pods if p["metadata"]["name"] in on2]))
        self.assertEqual({p["metadata"]["name"] for p in pods} & set(on2), set(on2))
        # The same pods (the API's), each in a new sandbox; the old boot's reported exited.
        self.check_one_sandbox_per_pod()
        sandboxes = c.sandboxes("node2")
        for s in sandboxes:
            if s["id"] in old:
                self.assertEqual(s["state"], "SANDBOX_NOTREADY", s)
        # Nothing of the old boot left: rkt runs the ready sandboxes' pods only, host-local
        # holds their addresses only, and one veth each. The count of ready sandboxes is
        # taken at each look, as kubelet may still be settling one.
        last = [None]

        def leftovers():
            ready_n = len([s for s in c.sandboxes("node2", None)
                           if s["state"] == "SANDBOX_READY"])
            ipam = os.path.join(c.dir, "node2", "cni", "ipam")
            leases = sorted(f for _, _, fs in os.walk(ipam) for f in fs
                            if not f.startswith("last_reserved_ip") and f != "lock")
            veths = [x.split(":")[1].strip() for x in c.in_node(
                "node2", "ip", "-o", "link", "show", "type", "veth").stdout.splitlines()
                if ": veth" in x]
            running = [x.split()[0] for x in c.in_node(
                "node2", harness.real_rkt()[0], "--dir=" + os.path.join(c.dir, "node2", "rkt"),
                "list", "--no-legend").stdout.splitlines() if "running" in x]
            if (len(leases), len(veths), len(running)) == (ready_n,) * 3:
                return True
            last[0] = dict(ready=ready_n, leases=leases, veths=veths, running=running)
            return False
        try:
            harness.wait_for("node2 holding its ready sandboxes only", leftovers, 120, 2)
        except AssertionError as e:
            raise AssertionError("%s; node2 had %r" % (e, last[0])) from None

    def test_4_wire_cut(self):
        c = self.c
        on2 = {p["metadata"]["name"] for p in c.pods("app=roll")
               if p["spec"]["nodeName"] == "node2"}
        self.assertTrue(on2)
        t0 = time.monotonic()
        c.in_control("ip", "link", "set", "node2", "down")
        try:
            harness.wait_for("node2 not Ready", lambda: self.node_ready("node2") != "True",
                             120, 1)
            t_notready = time.monotonic() - t0
            pods = self.wait_pods("app=roll", "4 pods ready on node1", lambda ps: len(
                [p for p in ps if ready(p) and p["spec"]["nodeName"] == "node1" and
                 not p["metadata"].get("deletionTimestamp")]) == 4, timeout=300)
            t_moved = time.monotonic() - t0
            stuck = {p["metadata"]["name"] for p in pods if p["metadata"].get(
                "deletionTimestamp")}
            self.assertEqual(stuck, on2)  # terminating until node2 says they are gone
        finally:
            c.in_control("ip", "link", "set", "node2", "up")
        t1 = time.monotonic()
        harness.wait_for("node2 Ready again", lambda: self.node_ready("node2") == "True", 180, 1)
        self.wait_pods("app=roll", "node2's old pods gone", lambda ps: len(ps) == 4, 180)
        print("\n[figure] wire to node2 cut: NotReady after %.0f s, its pods ready on node1 "
              "after %.0f s; rejoined and cleaned %.0f s after the wire came back" % (
                  t_notready, t_moved, time.monotonic() - t1))
        self.check_one_sandbox_per_pod()


class FiguresTest(ClusterCase):
    """20 pods from one kubectl apply to Ready, on a fresh cluster whose nodes pulled busybox
    already: the time to all Ready, by node, and each pod's startup latency as the API server
    records it (creation to its container running, whole seconds: the SLO's definition),
    and as kubectl saw it (apply to Ready, polled every 0.25 s)."""

    def test_twenty_pods(self):
        c = self.c
        for node in cluster.NODES:
            self.running_pod("warm-" + node, "exec sleep 3600", node=node)
        c.kubectl("delete", "pod", "warm-node1", "warm-node2", "--wait=true", timeout=120)
        pods = [dict(pod("p%02d" % i, "exec sleep 3600"), metadata={
            "name": "p%02d" % i, "labels": {"app": "density"}}) for i in range(20)]
        t0 = time.monotonic()
        c.apply({"apiVersion": "v1", "kind": "List", "items": pods})
        seen = {}
        deadline = t0 + 300
        while len(seen) < 20 and time.monotonic() < deadline:
            now = time.monotonic()
            for p in c.pods("app=density"):
                if ready(p) and p["metadata"]["name"] not in seen:
                    seen[p["metadata"]["name"]] = (now - t0, p["spec"]["nodeName"])
            time.sleep(0.25)
        self.assertEqual(len(seen), 20)
        final = c.pods("app=density")
        api = []
        for p in final:
            started = [parse_time(s["state"]["running"]["startedAt"])
                       for s in p["status"]["containerStatuses"]]
            api.append(max(started) - parse_time(p["metadata"]["creationTimestamp"]))
        lines = ["\n[figure] 20 pods, one kubectl apply: all Ready after %.1f s" % max(
            t for t, _ in seen.values())]
        for node in cluster.NODES:
            ts = sorted(t for t, n in seen.values() if n == node)
            if ts:
                lines.append("[figure]   %s: %d pods, the last Ready after %.1f s" % (
                    node, len(ts), ts[-1]))
        lines.append("[figure] startup latency as the API records it (creation to running, "
                     "whole seconds): p50 %d s, p99 %d s" % (
                         percentile(api, 50), percentile(api, 99)))
        client = [t for t, _ in seen.values()]
        lines.append("[figure] as kubectl saw it (apply to Ready): p50 %.1f s, p99 %.1f s" % (
            percentile(client, 50), percentile(client, 99)))
        print("\n".join(lines))
        c.kubectl("delete", "pods", "-l", "app=density", "--wait=true", timeout=300)


if __name__ == "__main__":
    unittest.main()
