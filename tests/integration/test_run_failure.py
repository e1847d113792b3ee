"""A RunPodSandbox that fails under --wait leaves nothing: the client got no sandbox ID, so
it cannot remove what it does not know, and it asks again with a new attempt (containerd and
CRI-O undo such a sandbox too). The call answers once rktlet has undone everything (rkt's
pod, the unit, the CNI network and its address, the state directory, the store's record),
with the code its cause names (docs/architecture.md, 'Error codes'); the same holds after
the daemon is killed between the failure and its undo. On the rkt simulator (its faults),
and on the real rkt with the cluster's CNI network and a range of a few addresses."""
import ipaddress
import os
import sqlite3
import time
import unittest

import grpc

import harness
import test_faults

pb, pbg = harness.stubs()


def config(name, attempt=0, cgroup_parent=None):
    cfg = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="fail",
                                       attempt=attempt),
        hostname=name, log_directory=harness.LOG_ROOT + "/fail_" + name)
    if cgroup_parent:
        cfg.linux.cgroup_parent = cgroup_parent
    return cfg


def store_rows(daemon, sql):
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(daemon.state_dir, "rktlet.db"),
                         uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


class SimRunFailureTest(test_faults.FaultsBase):
    extra = test_faults.FLAGS + ["--wait"]

    def run_fails(self, cfg, code, timeout=120):
        with self.assertRaises(grpc.RpcError) as cm:
            self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=timeout)
        self.assertEqual(cm.exception.code(), code, cm.exception.details())
        return cm.exception.details()

    def nothing_left(self, name):
        """Nothing of the failed sandbox: not listed, no pod of rkt's or unit, no state
        directory, no record or failure in the store. The unit's stop is asked for before
        the call fails, and systemd may still be ending its processes then (deactivating):
        it must get to an end, not be there already."""
        self.assertEqual(list(self.rs.ListPodSandbox(pb.ListPodSandboxRequest(),
                                                     timeout=10).items), [])
        sid = [line for line in self.env.daemon.log().splitlines()
               if "for fail/%s" % name in line][-1].split("sandbox ", 1)[1].split()[0]
        self.assertEqual(self.pods(sid), [])
        self.wait_gone(sid, timeout=30)
        self.assertFalse(os.path.exists(os.path.join(self.env.daemon.state_dir, "pods", sid)))
        self.assertEqual(store_rows(self.env.daemon, "SELECT id FROM sandbox"), [])
        self.assertEqual(store_rows(self.env.daemon, "SELECT * FROM sandbox_failure"), [])
        with self.assertRaises(grpc.RpcError) as cm:
            self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid),
                                     timeout=10)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)
        return sid

    def test_never_ready(self):
        """A sandbox that never gets ready: five attempts, then UNAVAILABLE (it may pass),
        nothing left, and the client's next RunPodSandbox, with the same attempt number
        (kubelet lists no sandbox of the pod, so it counts from 0 again), works."""
        self.env.set_faults("sandbox never-ready\n")
        details = self.run_fails(config("never"), grpc.StatusCode.UNAVAILABLE)
        self.assertIn("did not become ready", details)
        self.nothing_left("never")
        self.env.set_faults("")
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=config("never")),
                                    timeout=120).pod_sandbox_id
        self.wait_running(sid)

    def test_bad_cgroup_parent(self):
        """A request rkt cannot run: INVALID_ARGUMENT, nothing left."""
        details = self.run_fails(config("cg", cgroup_parent="/kubepods/besteffort/podcg"),
                                 grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("--cgroup-driver=systemd", details)
        self.nothing_left("cg")

    def test_killed_between_failure_and_undo(self):
        """The daemon killed right after the commit that records the failure: at its
        restart the sandbox is never listed, and its undo is finished."""
        self.env.set_faults("sandbox never-ready\n")
        self.env.daemon.stop()
        self.env.daemon.env["RKL_CRASH_AT"] = "sandbox-withdrawn"
        self.env.daemon.start()
        self.env.daemon.expected_exit = True
        with self.assertRaises(grpc.RpcError) as cm:
            self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=config("killed")), timeout=120)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)  # the daemon died
        self.env.daemon.proc.wait(30)
        self.env.daemon.env.pop("RKL_CRASH_AT")
        self.env.set_faults("")
        self.env.daemon.start()
        failures = store_rows(self.env.daemon, "SELECT sandbox FROM sandbox_failure")
        self.assertIn(failures, ([], [("fail/killed (attempt 0)",)]))  # undone, or about to be
        seen = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen += list(self.rs.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=10).items)
            if not store_rows(self.env.daemon, "SELECT * FROM sandbox_failure"):
                break
            time.sleep(0.1)
        self.assertEqual(seen, [])
        harness.wait_for("the undo finished", lambda: not os.listdir(
            os.path.join(self.env.daemon.state_dir, "pods")) and not [
            p for p in os.listdir(os.path.join(self.env.rkt_dir, "pods", "run"))], timeout=60)
        self.nothing_left("killed")


class RktRunFailureTest(unittest.TestCase):
    """The real rkt, the cluster's CNI network with host-local on a /29: five addresses for
    pods. A sixth sandbox fails with RESOURCE_EXHAUSTED, leaving nothing (its failed
    attempts' addresses free again); once a running one is removed, it gets the address."""

    def test_addresses_spent(self):
        env = harness.RktEnv(self, extra=["--wait"], pod_subnet="10.88.7.0/29")
        env.start()
        ch = env.daemon.channel()
        self.addCleanup(ch.close)
        rs = pbg.RuntimeServiceStub(ch)
        hosts = list(env.pod_net.hosts())[1:]  # the bridge's gateway takes the first
        sids = [rs.RunPodSandbox(pb.RunPodSandboxRequest(config=config("p%d" % i)),
                                 timeout=120).pod_sandbox_id for i in range(len(hosts))]
        leases = env.cni_leftovers()
        with self.assertRaises(grpc.RpcError) as cm:
            rs.RunPodSandbox(pb.RunPodSandboxRequest(config=config("extra")), timeout=200)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED,
                         cm.exception.details())
        self.assertIn("no IP addresses available", cm.exception.details())
        # Nothing of it: not listed, no address, unit, pod or state directory of its own.
        self.assertEqual(sorted(p.id for p in rs.ListPodSandbox(
            pb.ListPodSandboxRequest(), timeout=10).items), sorted(sids))
        self.assertEqual(sorted(env.cni_leftovers()), sorted(leases))
        units = env.run("systemctl", "list-units", "--all", "--no-legend", "--plain",
                        "rktlet-*.service").stdout.split()
        self.assertEqual(sorted(u for u in units if u.startswith("rktlet-")),
                         sorted("rktlet-%s.service" % s for s in sids))
        uuids = [line.split()[0] for line in env.rkt("list", "--no-legend", "--full").stdout
                 .splitlines() if line.strip()]
        self.assertEqual(len(uuids), len(sids), uuids)
        self.assertEqual(sorted(os.listdir(os.path.join(env.daemon.state_dir, "pods"))),
                         sorted(sids))
        self.assertEqual(store_rows(env.daemon, "SELECT * FROM sandbox_failure"), [])
        # One address freed: the next attempt gets it.
        rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sids[0]), timeout=60)
        rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sids[0]), timeout=60)
        harness.wait_for("its address free", lambda: len(env.cni_leftovers()) < len(leases),
                         timeout=60)
        sid = rs.RunPodSandbox(pb.RunPodSandboxRequest(config=config("extra")),
                               timeout=120).pod_sandbox_id
        ip = rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid),
                                 timeout=10).status.network.ip
        self.assertIn(ipaddress.ip_address(ip), env.pod_net)


if __name__ == "__main__":
    unittest.main()
