"""Pod networking through CNI on the real rkt 1.30.0: the daemon runs the cluster's network
configuration (Debian's standard plugins) for every sandbox.

- Two nodes, as a cluster's are: two private systemd hosts, each with its rkt, its daemon and a
  .conflist of cniVersion 1.0.0 (bridge + host-local with the node's pod CIDR + portmap),
  joined by a veth pair between their network namespaces with host-gw routes (each node routes
  the other's pod CIDR through the wire, as flannel's host-gw backend does). Pods reach pods
  on the other node by pod IP, and its hostPort at the node's wire address.
- Status: NetworkReady follows the configuration directory, without a restart.
- Faults: a missing plugin, a plugin that fails, one that hangs, a malformed configuration:
  the client sees why, the attempt is retried, nothing is left behind.
- No leaks: sandboxes made and removed, with the daemon killed at random moments between,
  leave host-local's addresses, the host's interfaces and its iptables rules as they were.

Every address here lives in the hosts' own network namespaces; clients run there (nsenter) or
in pods (ExecSync). Nothing is sent from the machine's namespace. Times are printed, never
asserted."""
import ipaddress
import json
import os
import random
import signal
import subprocess
import time
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

BUSYBOX = "docker.io/library/busybox:latest"
WIRE = ("10.77.0.1", "10.77.0.2")  # the nodes' addresses on the wire between them
POD_CIDRS = ("10.244.1.0/24", "10.244.2.0/24")
PAGE = "hello from node two\n"


class Node:
    """One node: a private systemd host with rkt, a registry and the daemon on a CNI network
    of its own pod CIDR."""

    def __init__(self, test, subnet, extra=(), cni_bin_dirs=(harness.CNI_PLUGINS,)):
        self.env = harness.RktEnv(test, extra=["--wait"] + list(extra), pod_subnet=subnet,
                                  cni_bin_dirs=cni_bin_dirs)
        self.env.start()
        ch = self.env.daemon.channel()
        test.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)
        self.im = pbg.ImageServiceStub(ch)
        self.im.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=BUSYBOX)), timeout=120)
        self.sandboxes = []

    def run_pod(self, name, ports=(), annotations=None, timeout=120):
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="net"),
            hostname=name, annotations=annotations or {},
            log_directory=os.path.join(self.env.dir, "logs", name),
            port_mappings=[pb.PortMapping(container_port=c, host_port=h) for c, h in ports])
        t0 = time.monotonic()
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=timeout).pod_sandbox_id
        ms = (time.monotonic() - t0) * 1000
        self.sandboxes.append(sid)
        return sid, cfg, ms

    def status(self, sid, verbose=False):
        r = self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid,
                                                                verbose=verbose), timeout=10)
        return (r.status, json.loads(r.info["info"])) if verbose else r.status

    def start_container(self, sid, cfg, name, command):
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                image=pb.ImageSpec(image=BUSYBOX), command=command,
                                log_path=name + ".log")
        cid = self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=30).container_id
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=120)
        return cid

    def httpd(self, sid, cfg, page=PAGE):
        """busybox's httpd on port 80 of the pod, serving page."""
        script = "mkdir -p /www && printf '%s' '%s' >/www/index.html && exec busybox httpd -f " \
                 "-p 80 -h /www" % ("%s", page)
        cid = self.start_container(sid, cfg, "httpd", ["sh", "-c", script])
        harness.wait_for("httpd answering", lambda: self.fetch(cid, "http://127.0.0.1/") == page,
                         timeout=30, interval=0.2)
        return cid

    def exec(self, cid, cmd, timeout=20):
        return self.rs.ExecSync(pb.ExecSyncRequest(container_id=cid, cmd=cmd, timeout=timeout),
                                timeout=timeout + 10)

    def fetch(self, cid, url):
        """What a pod fetches from url (busybox's wget), or None."""
        # No -T: busybox-static 1.35's wget crashes with it; ExecSync's timeout bounds it.
        r = self.exec(cid, ["busybox", "wget", "-q", "-O", "-", url], timeout=10)
        return r.stdout.decode() if r.exit_code == 0 else None

    def remove_all(self):
        for sid in self.sandboxes:
            self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=60)
            self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=60)
        self.sandboxes = []

    def assert_no_network_left(self, test, before=None):
        """host-local's addresses, veths and portmap's chains: none once the sandboxes are
        gone, or exactly what was there before."""
        harness.wait_for("the pods' networks released",
                         lambda: self.env.cni_leftovers() == (before or []),
                         timeout=90, interval=0.5)

    def iptables(self):
        """The host's rules, without counters: what pods' networks add and take away."""
        out = self.env.run("iptables-save").stdout
        return [line for line in out.splitlines() if not line.startswith("#") and
                not line.startswith(":")]

    def links(self):
        return sorted(line.split(":")[1].strip().split("@")[0] for line in
                      self.env.run("ip", "-o", "link").stdout.splitlines())


def join(a, b):
    """A veth pair between the two hosts' network namespaces, made from inside the first with
    its peer put straight into the second (nothing appears in the machine's namespace), the
    wire addresses, forwarding, and host-gw routes to the other node's pod CIDR."""
    subprocess.run(["nsenter", "-t", str(a.env.pid1), "-n", "ip", "link", "add", "wire0", "type",
                    "veth", "peer", "name", "wire0", "netns", str(b.env.pid1)], check=True)
    sides = ((a, WIRE[0], WIRE[1], POD_CIDRS[1]), (b, WIRE[1], WIRE[0], POD_CIDRS[0]))
    for node, mine, other_wire, other_cidr in sides:
        node.env.run("ip", "addr", "add", mine + "/24", "dev", "wire0")
        node.env.run("ip", "link", "set", "wire0", "up")
        node.env.run("sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
        node.env.run("ip", "route", "add", other_cidr, "via", other_wire)


class TwoNodesTest(unittest.TestCase):
    def test_pods_reach_pods_across_nodes(self):
        one = Node(self, POD_CIDRS[0])
        two = Node(self, POD_CIDRS[1])
        join(one, two)

        # A web server on node two, with a host port; a client pod and a second one on one.
        sid_web, cfg_web, t_web = two.run_pod("web", ports=[(80, 8080)])
        web = two.status(sid_web)
        self.assertEqual(web.state, pb.SANDBOX_READY)
        self.assertIn(ipaddress.ip_address(web.network.ip), ipaddress.ip_network(POD_CIDRS[1]))
        two.httpd(sid_web, cfg_web)
        sid_c, cfg_c, t_c = one.run_pod("client")
        client = one.status(sid_c)
        self.assertIn(ipaddress.ip_address(client.network.ip),
                      ipaddress.ip_network(POD_CIDRS[0]))
        cid_c = one.start_container(sid_c, cfg_c, "sh", ["sleep", "3600"])
        print("\n[figure] RunPodSandbox --wait on CNI: %.0f ms, %.0f ms" % (t_web, t_c))

        # Pod to pod across the nodes, by pod IP.
        got = harness.wait_for("node one's pod fetching from node two's pod", lambda: one.fetch(
            cid_c, "http://%s/" % web.network.ip), timeout=30, interval=0.5)
        self.assertEqual(got, PAGE)
        # Node one to node two's pod through its host port at node two's wire address, from
        # the pod and from node one itself.
        self.assertEqual(one.fetch(cid_c, "http://%s:8080/" % WIRE[1]), PAGE)
        out = one.env.run("curl", "-s", "-m", "5", "http://%s:8080/" % WIRE[1]).stdout
        self.assertEqual(out, PAGE)
        # And node two's own pods, and node one's, reach each other on their node.
        sid_n, cfg_n, _ = two.run_pod("neighbour")
        cid_n = two.start_container(sid_n, cfg_n, "sh", ["sleep", "3600"])
        self.assertEqual(two.fetch(cid_n, "http://%s/" % web.network.ip), PAGE)
        self.assertEqual(two.fetch(cid_n, "http://%s:8080/" % WIRE[1]), PAGE)
        sid_c2, cfg_c2, _ = one.run_pod("client-two")
        one.httpd(sid_c2, cfg_c2, page="next door\n")
        self.assertEqual(one.fetch(cid_c, "http://%s/" % one.status(sid_c2).network.ip),
                         "next door\n")

        # What the store says of each network (docs/networking.md, operators).
        rows = one.env.run("sqlite3", os.path.join(one.env.daemon.state_dir, "rktlet.db"),
                           "SELECT sandbox_id, state, addresses FROM pod_networks").stdout
        self.assertIn("%s|ready|%s/24" % (sid_c, client.network.ip), rows)

        one.remove_all()
        two.remove_all()
        one.assert_no_network_left(self)
        two.assert_no_network_left(self)


class NetworkStatusTest(unittest.TestCase):
    """NetworkReady follows the configuration directory, without a restart."""

    def network_ready(self, node):
        st = node.rs.Status(pb.StatusRequest(), timeout=30).status
        return {c.type: c for c in st.conditions}["NetworkReady"]

    def test_network_ready_follows_the_directory(self):
        node = Node(self, "10.88.0.0/24")
        conf = os.path.join(node.env.cni_dir, "10-podnet.conflist")
        self.assertTrue(self.network_ready(node).status)
        saved = conf + ".saved"
        os.rename(conf, saved)
        c = harness.wait_for("NetworkReady false", lambda: (
            lambda c: not c.status and c)(self.network_ready(node)), timeout=10)
        self.assertEqual(c.reason, "NetworkPluginNotReady")
        self.assertIn(node.env.cni_dir, c.message)
        # A sandbox meanwhile gets no pod booted: its attempts fail, saying why, and then
        # RunPodSandbox (--wait) does.
        with self.assertRaises(grpc.RpcError) as e:
            node.run_pod("no-network", timeout=120)
        self.assertIn("network: no network configuration in '%s'" % node.env.cni_dir,
                      e.exception.details())

        # A malformed one names its file and why.
        with open(os.path.join(node.env.cni_dir, "05-broken.conflist"), "w") as f:
            f.write('{"cniVersion": "1.0.0", "name": "broken", "plugins": [}')
        c = harness.wait_for("NetworkReady naming the broken file", lambda: (
            lambda c: "05-broken.conflist" in c.message and c)(self.network_ready(node)),
            timeout=10)
        self.assertFalse(c.status)
        self.assertIn("invalid JSON", c.message)
        os.unlink(os.path.join(node.env.cni_dir, "05-broken.conflist"))
        os.rename(saved, conf)
        harness.wait_for("NetworkReady again", lambda: self.network_ready(node).status,
                         timeout=10)
        info = json.loads(node.rs.Status(pb.StatusRequest(verbose=True), timeout=30)
                          .info["network"])
        self.assertIn("10-podnet.conflist", info["config"])
        sid, _, _ = node.run_pod("after")
        self.assertTrue(node.status(sid).network.ip)
        node.remove_all()
        node.assert_no_network_left(self)


class DualStackTest(unittest.TestCase):
    """A configuration that gives both families: the sandbox's IP is the IPv4 address and
    additional_ips the IPv6 one, both from the result."""

    def test_dual_stack(self):
        node = Node(self, "10.88.0.0/24")
        path = os.path.join(node.env.cni_dir, "10-podnet.conflist")
        with open(path) as f:
            conf = json.load(f)
        conf["plugins"][0]["ipam"]["ranges"] = [[{"subnet": "10.88.0.0/24"}],
                                                [{"subnet": "fd00:10:88::/64"}]]
        del conf["plugins"][0]["ipam"]["subnet"]
        with open(path + ".tmp", "w") as f:
            json.dump(conf, f)
        os.rename(path + ".tmp", path)
        time.sleep(0.5)  # the daemon reads the directory again on its change
        sid, cfg, _ = node.run_pod("dual")
        st = node.status(sid)
        self.assertIn(ipaddress.ip_address(st.network.ip), ipaddress.ip_network("10.88.0.0/24"))
        self.assertEqual(len(st.network.additional_ips), 1)
        self.assertIn(ipaddress.ip_address(st.network.additional_ips[0].ip),
                      ipaddress.ip_network("fd00:10:88::/64"))
        cid = node.start_container(sid, cfg, "sh", ["sleep", "3600"])
        addrs = node.exec(cid, ["busybox", "ip", "-o", "addr"]).stdout.decode()
        self.assertIn(st.network.ip + "/24", addrs)
        self.assertIn(st.network.additional_ips[0].ip + "/64", addrs)
        node.remove_all()
        node.assert_no_network_left(self)


class FaultsTest(unittest.TestCase):
    """What a client sees when the network cannot be set up, and what is left: nothing."""

    def setUp(self):
        # The test's plugins are found before Debian's.
        self.bin = os.path.join(harness.workdir(self), "cni-bin")
        os.makedirs(self.bin)
        self.node = Node(self, "10.88.0.0/24", extra=["--cni-timeout", "3"],
                         cni_bin_dirs=(self.bin, harness.CNI_PLUGINS))

    def use_chain(self, fault_type):
        """The node's configuration with a plugin of the test's after bridge."""
        path = os.path.join(self.node.env.cni_dir, "10-podnet.conflist")
        with open(path) as f:
            conf = json.load(f)
        conf["plugins"] = conf["plugins"][:1] + [{"type": fault_type}]
        with open(path + ".tmp", "w") as f:
            json.dump(conf, f)
        os.rename(path + ".tmp", path)

    def plugin(self, name, script):
        path = os.path.join(self.bin, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + script)
        os.chmod(path, 0o755)

    def expect_failed_attempt(self, name, needle, code=grpc.StatusCode.UNAVAILABLE):
        """RunPodSandbox answers with the plugins' words and the code they name once the
        attempts are spent, and only once the sandbox is undone (--wait): it is not listed
        and nothing of its networks is left."""
        before = self.node.env.cni_leftovers()
        with self.assertRaises(grpc.RpcError) as e:
            self.node.run_pod(name, timeout=240)
        self.assertIn(needle, e.exception.details())
        self.assertEqual(e.exception.code(), code, e.exception.details())
        lst = self.node.rs.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=10).items
        self.assertEqual([s.id for s in lst if s.metadata.name == name], [])
        self.node.assert_no_network_left(self, before)
        return e.exception

    def test_faults(self):
        node = self.node
        # A plugin that is not installed.
        self.use_chain("flannel-not-installed")
        e = self.expect_failed_attempt("missing", "plugin 'flannel-not-installed' not found")
        print("\n[figure] a missing plugin: %s" % e.details())

        # A plugin that answers ADD with a CNI error: its code, msg and details reach the
        # client. (Its DEL succeeds, as the specification wants of a DEL with nothing to do.)
        self.plugin("fails", "cat >/dev/null\n[ \"$CNI_COMMAND\" = ADD ] || exit 0\n"
                    "echo '{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"no more addresses\","
                    "\"details\":\"the pool is spent\"}'\nexit 1\n")
        self.use_chain("fails")
        self.expect_failed_attempt(
            "failing", "plugin 'fails' (ADD): no more addresses: the pool is spent (CNI error 11)",
            grpc.StatusCode.RESOURCE_EXHAUSTED)

        # A plugin whose ADD hangs: killed at --cni-timeout, said so.
        self.plugin("hangs", "cat >/dev/null\n[ \"$CNI_COMMAND\" = ADD ] || exit 0\n"
                    "trap '' TERM\nsleep 1000\n")
        self.use_chain("hangs")
        self.expect_failed_attempt("hanging", "plugin 'hangs' (ADD) did not finish within 3 s")
        self.assertEqual(node.env.run("pgrep", "-f", "sleep 1000", check=False).stdout, "")

        # Fixed: the next sandbox gets its network.
        self.use_chain("portmap")
        sid, _, _ = node.run_pod("fixed")
        self.assertTrue(node.status(sid).network.ip)
        node.remove_all()
        node.assert_no_network_left(self)


class LeakTest(unittest.TestCase):
    """Sandboxes made and removed, a few at once, and the daemon SIGKILLed at random moments
    between RunPodSandbox and RemovePodSandbox: host-local's address files, the host's
    interfaces and its iptables rules end exactly as they began. RKL_CNI_CYCLES and
    RKL_CNI_KILL_CYCLES set the counts (docs/reliability.md has the long run)."""

    def test_no_leaks(self):
        cycles = int(os.environ.get("RKL_CNI_CYCLES") or 12)
        kills = int(os.environ.get("RKL_CNI_KILL_CYCLES") or 6)
        node = Node(self, "10.88.0.0/24")
        # A first pod makes the bridge and portmap's top-level chains, which stay by design.
        sid, _, _ = node.run_pod("warm-up", ports=[(80, 9000)])
        node.remove_all()
        node.assert_no_network_left(self)
        links, rules = node.links(), node.iptables()
        rng = random.Random(int(os.environ.get("RKL_CNI_SEED") or random.randrange(1 << 30)))
        t0 = time.monotonic()
        for i in range(cycles):
            for j in range(3):
                node.run_pod("p%d-%d" % (i, j), ports=[(80, 9000 + j)],
                             annotations={"kubernetes.io/ingress-bandwidth": "10M"})
            node.remove_all()
        print("\n[figure] %d cycles of 3 sandboxes: %.1f s" % (cycles, time.monotonic() - t0))
        for i in range(kills):
            # Without --wait's answer: the kill lands anywhere in the sandbox's life.
            ids = []
            for j in range(2):
                cfg = pb.PodSandboxConfig(metadata=pb.PodSandboxMetadata(
                    name="k%d-%d" % (i, j), uid="k%d-%d" % (i, j), namespace="net"),
                    port_mappings=[pb.PortMapping(container_port=80, host_port=9100 + j)])
                try:
                    ids.append(node.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                                     timeout=0.5 + rng.random()).pod_sandbox_id)
                except grpc.RpcError:
                    pass  # --wait's answer cut short: the sandbox is recorded all the same
            time.sleep(rng.uniform(0, 3))
            node.env.daemon.stop(signal.SIGKILL)
            node.env.daemon.expected_exit = False
            node.env.daemon.start(wrapper=node.env.enter)
            harness.wait_answering(node.rs)
            lst = node.rs.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=10).items
            node.sandboxes = [s.id for s in lst]
            node.remove_all()
        node.assert_no_network_left(self)
        self.assertEqual(node.links(), links)
        self.assertEqual(node.iptables(), rules)
        print("[figure] %d kills between RunPodSandbox and RemovePodSandbox: nothing left"
              % kills)


if __name__ == "__main__":
    unittest.main()
