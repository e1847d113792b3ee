"""scripts/try-cluster as a user runs it, for the cluster tests: start it in a directory of the
test's own on a free port of the machine's loopback, read its last line for how to reach the
cluster, drive it with kubectl (the v1.34 one the script links into DIR/bin), run commands
inside a node's namespaces, and stop it, checking that nothing of it is left.

Nothing here sends a packet from the machine's network namespace but on its loopback: kubectl
reaches the API server at 127.0.0.1:PORT (the script's forwarder), and whatever talks to a pod
or service IP runs in a pod (kubectl exec) or in a node's namespaces (Cluster.in_node)."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import harness
import kubelet

SCRIPT = os.path.join(harness.SOURCE_DIR, "scripts", "try-cluster")
NODES = ("node1", "node2")
# What the script names in its own namespaces; none may appear in the machine's.
LINKS = {"wire", "wire0", "node1", "node2", "cni0"}


def machine_links():
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def machine_rules():
    """The machine's iptables rules that a cluster would add: kube-proxy's and the pod
    networks'."""
    out = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines()
            if "KUBE-" in line or "CNI-" in line or "10.244." in line or "10.96." in line]


class Cluster:
    """One try-cluster, started by start() and stopped by stop() (also the test's cleanup)."""

    def __init__(self):
        if not harness.real_rkt()[0]:
            raise unittest.SkipTest("the real rkt cannot be built here: " + harness.real_rkt()[1])
        if not kubelet.real_kubernetes()[0]:
            raise unittest.SkipTest("Kubernetes cannot be built here: " +
                                    kubelet.real_kubernetes()[1])
        self.dir = tempfile.mkdtemp(prefix="rktlet-cluster-", dir=os.environ.get("RKL_TEST_TMPDIR"))
        self.port = harness.free_port()
        self.env = dict(os.environ, RKTLET_CLUSTER_PORT=str(self.port),
                        RKTLET_BUILD_DIR=harness.BUILD_DIR)
        self.started = None

    def script(self, *args, timeout=600):
        return subprocess.run([SCRIPT] + list(args), capture_output=True, text=True,
                              env=self.env, timeout=timeout)

    def start(self):
        self.rules_before = machine_rules()
        t0 = time.monotonic()
        r = self.script(self.dir)
        self.up_seconds = time.monotonic() - t0
        if r.returncode != 0:
            raise AssertionError("try-cluster failed (%d): %s%s" % (
                r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
        self.output = r.stdout
        last = r.stdout.strip().splitlines()[-1]
        # export KUBECONFIG=DIR/kubeconfig PATH=DIR/bin:$PATH, as a user pastes it
        words = dict(w.split("=", 1) for w in last.split()[1:])
        self.kubeconfig = words["KUBECONFIG"]
        self.kubectl_bin = os.path.join(words["PATH"].split(":")[0], "kubectl")
        self.started = True
        return self

    def pid1(self, node):
        with open(os.path.join(self.dir, node, "host", "pid1")) as f:
            return int(f.read())

    def kubectl(self, *args, check=True, timeout=120, input=None):
        r = subprocess.run([self.kubectl_bin, "--kubeconfig", self.kubeconfig] + list(args),
                           capture_output=True, text=True, timeout=timeout, input=input)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s: exit %d: %s%s" % (
                " ".join(args), r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        return r

    def popen(self, *args, **kw):
        return subprocess.Popen([self.kubectl_bin, "--kubeconfig", self.kubeconfig] +
                                list(args), **kw)

    def get(self, *args):
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)

    def apply(self, *objects):
        text = "\n---\n".join(json.dumps(o) for o in objects)
        return self.kubectl("apply", "-f", "-", input=text)

    def pods(self, selector=None, namespace="default"):
        args = ["pods", "-n", namespace] + (["-l", selector] if selector else [])
        return self.get(*args)["items"]

    def in_node(self, node, *cmd, check=True, timeout=60):
        """cmd inside the node's namespaces, from /."""
        r = subprocess.run(["nsenter", "-t", str(self.pid1(node)), "-m", "-u", "-i", "-n", "-p",
                            "-C"] + list(cmd), capture_output=True, text=True, timeout=timeout,
                           cwd="/")
        if check and r.returncode != 0:
            raise AssertionError("%s on %s: exit %d: %s%s" % (
                " ".join(cmd), node, r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        return r

    def in_control(self, *cmd, check=True):
        """cmd in the control plane's network namespace only."""
        with open(os.path.join(self.dir, "control", "host", "pid1")) as f:
            pid1 = f.read().strip()
        return subprocess.run(["nsenter", "-t", pid1, "-n"] + list(cmd), capture_output=True,
                              text=True, check=check)

    def crictl(self, node, *args):
        kbin = os.path.dirname(os.path.realpath(self.kubectl_bin))
        sock = "unix://" + os.path.join(self.dir, node, "rktlet.sock")
        return self.in_node(node, os.path.join(kbin, "crictl"), "--runtime-endpoint", sock,
                            "--image-endpoint", sock, "--timeout", "60s", *args)

    def sandboxes(self, node, namespace="default"):
        """The node's sandboxes of that namespace (None: all), as CRI lists them."""
        ns = ["--namespace", namespace] if namespace else []
        out = json.loads(self.crictl(node, "pods", *ns, "-o", "json").stdout)
        return out.get("items") or []

    def wait_rollout(self, name, timeout=300):
        self.kubectl("rollout", "status", "deployment/" + name, "--timeout=%ds" % timeout,
                     timeout=timeout + 30)

    def log_tail(self, node, name, lines=40):
        try:
            with open(os.path.join(self.dir, node, "logs", name), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self, test=None):
        """--stop, then nothing of the cluster anywhere: no process, mount, cgroup, link in the
        machine's namespace, iptables rule of the machine's, nor the directory."""
        if self.started is None:
            shutil.rmtree(self.dir, ignore_errors=True)
            return
        self.started = None
        if test is not None and harness.test_failed(test):
            for node in NODES:
                print("\n--- %s: %s's kubelet and rktlet logs ---\n%s%s" % (
                    test.id(), node, self.log_tail(node, "kubelet.log"),
                    self.log_tail(node, "rktlet.log")))
        hosts = [os.path.join(self.dir, h, "host") for h in ("control",) + NODES]
        r = self.script("--stop", self.dir)
        assert r.returncode == 0, "try-cluster --stop: %s%s" % (r.stdout, r.stderr)
        assert not os.path.exists(self.dir), os.listdir(self.dir)
        left = [(pid, argv) for pid, argv in harness.processes()
                if any(self.dir.encode() in a for a in argv)]
        assert not left, "processes left: %r" % left
        with open("/proc/self/mounts") as f:
            mounts = [line for line in f if self.dir in line]
        assert not mounts, "mounts left: %r" % mounts
        names = ["rktlet-host-" + hashlib.sha256(h.encode()).hexdigest()[:8] for h in hosts]
        cgroups = []
        for root in os.listdir("/sys/fs/cgroup"):
            for n in names:
                p = os.path.join("/sys/fs/cgroup", root, n)
                if os.path.isdir(p):
                    cgroups.append(p)
        assert not cgroups, "cgroups left: %r" % cgroups
        assert not (machine_links() & LINKS), machine_links() & LINKS
        assert machine_rules() == self.rules_before, machine_rules()
