"""The simulator's pod network, as real rkt's ptp network makes it: each pod in a network
namespace of its own, eth0 on a veth whose outer end is on a bridge in a namespace the test
made (harness.PodNetwork). Pod IPs are real, and reachable from that namespace only; no
traffic is ever sent from the machine's own namespace."""
import json
import os
import subprocess
import unittest

import harness

pb, pbg = harness.stubs()

IMAGE = "docker.io/library/busybox:latest"
PORT = 8080

# An HTTP/1.0 GET from inside the test's namespace, retried while the server comes up.
CLIENT = """
import socket, sys, time
deadline = time.monotonic() + 30
while True:
    try:
        s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.1)
s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
data = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
sys.stdout.write(data.decode(errors="replace"))
"""


def sandbox_config(name, host_network=False):
    cfg = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="default",
                                       attempt=0),
        hostname=name,
        log_directory=harness.LOG_ROOT + "/default_%s" % name,
        labels={"app": name},
    )
    if host_network:
        cfg.linux.security_context.namespace_options.network = pb.NODE
    return cfg


def http_server(body):
    """busybox httpd serving body at / on PORT, in the foreground."""
    return ["/bin/sh", "-c", "mkdir -p /tmp/www && echo %s >/tmp/www/index.html && "
            "exec /bin/busybox httpd -f -p %d -h /tmp/www" % (body, PORT)]


class SimNetTest(unittest.TestCase):
    def setUp(self):
        self.env = harness.SimEnv(self).start()
        self.env.fetch("docker://" + IMAGE)
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)

    # Helpers.

    def pod_status(self, sid, verbose=False):
        return self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid,
                                                                   verbose=verbose), timeout=10)

    def run_pod(self, name):
        """Runs a pod with an HTTP server answering its name; returns (sid, ip, rkt uuid)."""
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=sandbox_config(name)),
                                    timeout=10).pod_sandbox_id
        ip = harness.wait_for("pod %s's IP" % name,
                              lambda: self.pod_status(sid).status.network.ip)
        uuid = harness.wait_for("pod %s's rkt uuid" % name, lambda: json.loads(
            self.pod_status(sid, verbose=True).info["info"]).get("rktUuid"))
        cfg = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="web", attempt=0),
                                 image=pb.ImageSpec(image=IMAGE), command=http_server(name),
                                 log_path="web/0.log")
        cid = self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cfg, sandbox_config=sandbox_config(name)),
            timeout=10).container_id
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
        harness.wait_for("container of %s running" % name, lambda: self.rs.ContainerStatus(
            pb.ContainerStatusRequest(container_id=cid), timeout=10).status.state ==
            pb.CONTAINER_RUNNING)
        return sid, ip, uuid

    def remove_pod(self, sid):
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=30)
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=30)

    def get_from_netns(self, ip):
        """GET / from the test's namespace."""
        return self.env.in_netns(harness.PYTHON, "-c", CLIENT, ip, str(PORT)).stdout

    def get_from_pod(self, uuid, ip):
        """GET / from inside a pod (busybox nc: Debian's static busybox wget crashes)."""
        return self.in_pod(uuid, "/bin/sh", "-c", "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | "
                           "/bin/busybox nc -w 10 %s %d" % (ip, PORT))

    def in_pod(self, uuid, *cmd):
        """cmd in the pod's one app, as `rkt app exec` runs it (in the pod's namespaces)."""
        return self.env.rkt("app", "exec", uuid, *cmd).stdout

    def bridge_ports(self):
        out = self.env.in_netns("ip", "-o", "link", "show", "master", harness.POD_BRIDGE).stdout
        return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}

    def pod_dir(self, uuid):
        return os.path.join(self.env.rkt_dir, "pods", "run", uuid)

    # Tests.

    def test_pods_have_their_own_network(self):
        sid_a, ip_a, uuid_a = self.run_pod("alpha")
        sid_b, ip_b, uuid_b = self.run_pod("beta")
        self.assertTrue(ip_a.startswith("172.16.28."), ip_a)
        self.assertTrue(ip_b.startswith("172.16.28."), ip_b)
        self.assertNotEqual(ip_a, ip_b)

        # The IP is on eth0 inside the pod, and on no interface of the machine's namespace.
        for uuid, ip in ((uuid_a, ip_a), (uuid_b, ip_b)):
            self.assertIn("inet %s/24" % ip,
                          self.in_pod(uuid, "/bin/busybox", "ip", "-4", "addr", "show", "eth0"))
            with open(os.path.join(self.pod_dir(uuid), "netns")) as f:
                netns = f.read().strip()
            self.assertNotEqual(os.stat(netns).st_ino, os.stat("/proc/self/ns/net").st_ino)
            inside = subprocess.run(["nsenter", "--net=" + netns, "ip", "-o", "-4", "addr"],
                                    capture_output=True, text=True, check=True).stdout
            self.assertIn(" eth0 ", inside)
            self.assertIn("inet %s/24" % ip, inside)
        machine = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True,
                                 check=True).stdout
        for ip in (ip_a, ip_b):
            self.assertNotIn("inet %s/" % ip, machine)

        # Each pod's outer veth end is on the test's bridge.
        veth_a, veth_b = "veth" + uuid_a[:8], "veth" + uuid_b[:8]
        self.assertEqual(self.bridge_ports(), {veth_a, veth_b})

        # The servers answer TCP from inside the test's namespace.
        self.assertIn("alpha", self.get_from_netns(ip_a))
        self.assertIn("beta", self.get_from_netns(ip_b))

        # The pods reach each other over the bridge.
        self.assertIn("beta", self.get_from_pod(uuid_a, ip_b))
        self.assertIn("alpha", self.get_from_pod(uuid_b, ip_a))

        # Removed, a pod's veth leaves the bridge; the other pod keeps its own.
        self.remove_pod(sid_a)
        harness.wait_for("veth of the removed pod gone", lambda: self.bridge_ports() ==
                         {veth_b})
        self.assertIn("beta", self.get_from_netns(ip_b))
        self.remove_pod(sid_b)
        harness.wait_for("no veth left on the bridge", lambda: self.bridge_ports() == set())

    def test_stopped_pod_takes_its_network_along(self):
        sid, ip, uuid = self.run_pod("gamma")
        with open(os.path.join(self.pod_dir(uuid), "netns")) as f:
            netns = f.read().strip()
        self.assertIn("gamma", self.get_from_netns(ip))
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=30)
        harness.wait_for("veth gone with the stopped pod", lambda: self.bridge_ports() == set())
        # The namespace's file goes with rkt's rm, which follows the stop.
        harness.wait_for("netns gone with the stopped pod", lambda: not os.path.exists(netns))
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=30)

    def test_host_network_pod_stays_in_the_host_namespace(self):
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(
            config=sandbox_config("hostnet", host_network=True)), timeout=10).pod_sandbox_id
        uuid = harness.wait_for("the rkt uuid", lambda: json.loads(
            self.pod_status(sid, verbose=True).info["info"]).get("rktUuid"))
        # ppid is written once networking is done, as stage1 does.
        harness.wait_for("the pod's supervisor", lambda: os.path.exists(
            os.path.join(self.pod_dir(uuid), "ppid")))
        self.assertFalse(os.path.exists(os.path.join(self.pod_dir(uuid), "netns")))
        self.assertEqual(self.bridge_ports(), set())
        self.remove_pod(sid)


if __name__ == "__main__":
    unittest.main()
