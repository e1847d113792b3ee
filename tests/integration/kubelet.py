"""The real kubelet, standalone (static pods, no API server), run against rktlet inside a
RktEnv's private systemd host: a unit of the host's systemd, as a node runs it, with
rktlet's socket as its runtime and image endpoint and the cgroup driver rktlet reports.

Everything kubelet writes stays in the test's directory: its root (--root-dir), the pods'
logs (podLogsDir) and, in the host's mount namespace only, /var/log/containers. kubelet
sets six kernel-wide sysctls it wants (vm.overcommit_memory, kernel.panic, ...) on the
machine at start; in the host those files are shadowed by ones that already hold its
values, so that a test never changes the machine's kernel (kernel.panic=10 would reboot a CI
machine on a panic). Its API is on 127.0.0.1 of the host: the read-only port 10255 and the
authenticated one 10250 (anonymous, AlwaysAllow), read with get(). Its log is
env.dir/kubelet/kubelet.log, at --v=2 ($RKL_KUBELET_VERBOSITY sets another level)."""
import json
import os
import shutil
import subprocess

import harness

READ_ONLY_PORT = 10255
PORT = 10250
HEALTHZ_PORT = 10248
# The node's address: kubelet reports the address of the interface of the default route. The
# host's network namespace has none of its own, so one end of a veth pair carries it (what is
# sent there reaches the other end, which has no address, and goes no further).
NODE_IP = "10.87.0.1"
# Binds /var/log/containers and shadows the kernel tunables, in a host's mount namespace (the
# cluster's nodes are made the same way: scripts/try-cluster).
KUBELET_HOST = os.path.join(harness.SOURCE_DIR, "scripts", "lib", "kubelet-host")

_real_kubernetes = None


def real_kubernetes():
    """(bin directory, None) of Kubernetes built by scripts/build-kubernetes (cached outside
    the tree), or (None, why) when it cannot be had here. $RKL_KUBERNETES names a built one."""
    global _real_kubernetes
    if _real_kubernetes is None:
        if os.environ.get("RKL_KUBERNETES"):
            _real_kubernetes = (os.environ["RKL_KUBERNETES"], None)
        else:
            r = subprocess.run([os.path.join(harness.SOURCE_DIR, "scripts", "build-kubernetes")],
                               capture_output=True, text=True)
            path = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
            if r.returncode == 0 and os.access(os.path.join(path, "kubelet"), os.X_OK):
                _real_kubernetes = (path, None)
            else:
                _real_kubernetes = (None, "scripts/build-kubernetes failed (%d): %s" % (
                    r.returncode, r.stderr.strip()[-2000:]))
    return _real_kubernetes


def host_node(env, directory):
    """The host made a node: its address (NODE_IP on a veth of its own, the default route
    through it), and what kubelet writes outside its root kept in directory:
    /var/log/containers, and the kernel tunables it would set, in the host's mount namespace
    only."""
    env.run("sh", "-c", "ip link add node0 type veth peer name node0-end && "
            "ip addr add %s/24 dev node0 && ip link set node0-end up && ip link set node0 up && "
            "ip route add default dev node0" % NODE_IP)
    subprocess.run([KUBELET_HOST, str(env.pid1), directory], check=True, capture_output=True,
                   cwd="/")


class Kubelet:
    """One kubelet for a RktEnv (started with --wait), in env.dir/kubelet: manifests/ is its
    static pod path, root/ its root directory, pods/ the pods' logs. config: more fields of
    its KubeletConfiguration; feature_gates: its gates."""

    def __init__(self, test, env, config=None, feature_gates=None, node="rktlet-node"):
        bindir, why = real_kubernetes()
        if not bindir:
            test.skipTest("kubelet cannot be built here: " + why)
        self.test, self.env, self.node = test, env, node
        self.bin = os.path.join(bindir, "kubelet")
        self.dir = os.path.join(env.dir, "kubelet")
        self.manifests = os.path.join(self.dir, "manifests")
        self.root = os.path.join(self.dir, "root")
        self.pod_logs = os.path.join(self.dir, "pods")
        self.log_path = os.path.join(self.dir, "kubelet.log")
        for d in (self.manifests, self.root, self.pod_logs):
            os.makedirs(d, exist_ok=True)
        host_node(env, self.dir)
        socket = "unix://" + env.daemon.socket
        self.config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "containerRuntimeEndpoint": socket,
            "imageServiceEndpoint": socket,
            "cgroupDriver": "systemd",
            "failSwapOn": False,
            "staticPodPath": self.manifests,
            "fileCheckFrequency": "2s",
            "podLogsDir": self.pod_logs,
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "readOnlyPort": READ_ONLY_PORT,
            "address": "127.0.0.1",
            "healthzBindAddress": "127.0.0.1",
            "runtimeRequestTimeout": "4m",
            "featureGates": dict(feature_gates or {}),
        }
        self.config.update(config or {})
        self.config_path = os.path.join(self.dir, "config.yaml")
        test.addCleanup(self.cleanup)

    def write_config(self):
        # JSON is YAML: kubelet reads either.
        with open(self.config_path, "w") as f:
            json.dump(self.config, f, indent=2)

    def start(self, timeout=120):
        self.write_config()
        self.env.run("systemd-run", "--quiet", "--unit=kubelet", "--collect",
                     "--property=Delegate=yes",
                     "--property=StandardOutput=append:" + self.log_path,
                     "--property=StandardError=append:" + self.log_path,
                     self.bin, "--config", self.config_path, "--root-dir", self.root,
                     "--hostname-override", self.node, "--node-ip", NODE_IP,
                     "--v=" + os.environ.get("RKL_KUBELET_VERBOSITY", "2"))
        harness.wait_for("kubelet's healthz", self.healthy, timeout, interval=0.5)
        return self

    def healthy(self):
        if not self.active():
            raise AssertionError("kubelet exited: %s" % self.log()[-3000:])
        r = self.env.run("curl", "-sf", "-m", "5", "http://127.0.0.1:%d/healthz" % HEALTHZ_PORT,
                         check=False)
        return r.returncode == 0 and r.stdout.strip() == "ok"

    def active(self):
        r = self.env.run("systemctl", "is-active", "kubelet.service", check=False)
        return r.stdout.strip() in ("active", "activating")

    def stop(self):
        self.env.run("systemctl", "stop", "kubelet.service", check=False, timeout=120)

    def restart(self):
        self.stop()
        harness.wait_for("kubelet stopped", lambda: not self.active(), 60)
        return self.start()

    def cleanup(self):
        if os.path.exists(self.log_path) and os.environ.get("RKL_TEST_KEEP_LOGS"):
            shutil.copy(self.log_path, os.path.join(
                os.environ["RKL_TEST_KEEP_LOGS"], self.test.id() + ".kubelet.log"))
        if harness.test_failed(self.test):
            tail = [line for line in self.log().splitlines() if line.startswith("E")][-40:]
            print("\n--- %s: kubelet's last errors ---\n%s\n---" % (
                self.test.id(), "\n".join(tail)))
        self.stop()

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def get(self, path, secure=False, raw=False, timeout=30):
        """GET path of kubelet's API: the read-only port, or the main one (TLS, kubelet's
        own self-signed certificate)."""
        url = ("https://127.0.0.1:%d" % PORT if secure else
               "http://127.0.0.1:%d" % READ_ONLY_PORT) + path
        r = self.env.run("curl", "-sS", "-k", "-m", str(timeout), "-w", "\n%{http_code}", url,
                         check=False, timeout=timeout + 10)
        body, _, code = r.stdout.rpartition("\n")
        if r.returncode != 0 or code != "200":
            raise AssertionError("GET %s: curl %d, HTTP %s: %s%s" % (
                path, r.returncode, code, body[-1000:], r.stderr[-500:]))
        return body if raw else json.loads(body)

    def put_manifest(self, name, pod):
        """A static pod: its manifest, written whole (rename), as an operator would."""
        tmp = os.path.join(self.dir, ".%s.json" % name)
        with open(tmp, "w") as f:
            json.dump(pod, f, indent=2)
        os.rename(tmp, os.path.join(self.manifests, name + ".json"))

    def remove_manifest(self, name):
        os.unlink(os.path.join(self.manifests, name + ".json"))

    def pods(self):
        """kubelet's /pods: {name: pod}."""
        return {p["metadata"]["name"]: p for p in self.get("/pods").get("items") or []}

    def pod(self, name):
        """A static pod as kubelet names it (name-node), or None."""
        return self.pods().get("%s-%s" % (name, self.node))

    def wait_pod(self, name, what, fn, timeout=180):
        """Waits until fn(pod) is true of the static pod name; returns the pod."""
        got = {}

        def check():
            p = self.pod(name)
            got["pod"] = p
            return p is not None and fn(p)
        try:
            harness.wait_for("%s: %s" % (name, what), check, timeout, interval=1)
        except AssertionError:
            raise AssertionError("%s: not %s after %d s; kubelet says %s" % (
                name, what, timeout, json.dumps((got.get("pod") or {}).get("status"))[:3000]))
        return got["pod"]


def container_status(pod, name):
    for s in (pod.get("status", {}).get("containerStatuses") or []) + \
            (pod.get("status", {}).get("initContainerStatuses") or []):
        if s["name"] == name:
            return s
    return None


def running(pod, *names):
    """Every container of names (all of the pod's when none) running and ready."""
    st = pod.get("status", {})
    statuses = st.get("containerStatuses") or []
    if not statuses:
        return False
    want = set(names) or {s["name"] for s in statuses}
    return all("running" in (s.get("state") or {}) and s.get("ready")
               for s in statuses if s["name"] in want) and \
        want <= {s["name"] for s in statuses}
