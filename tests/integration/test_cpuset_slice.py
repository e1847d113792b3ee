"""A pod's slice keeps its v1 cpuset cgroup on the real rkt (docs/cluster.md, 'cgroup v1 and
cpuset'): kubelet's systemd driver makes the slice in the cpuset hierarchy itself, systemd 252
trims that directory whenever it realizes the slice again, and kubelet kills a pod whose
cgroup lacks a path. rktlet puts the sandbox's processes into <slice>/<unit> of the cpuset
hierarchy, which then cannot be removed.

Here the slice is made as kubelet's driver makes it (a transient slice through systemd's
D-Bus API, then its cpuset directory by hand), a sandbox runs in it, and its processes must
be in <slice>/<unit> of the cpuset hierarchy, the slice's directory still there after systemd
realized the slices again (a property set on each, as kubelet's QoS and pod managers do).
The trim itself comes of kubelet's own sequence of calls, which this does not replay:
test_cluster.py shows its outcome, every pod running with no restart."""
import os
import unittest

import harness

pb, pbg = harness.stubs()

SLICE = "kubepods-besteffort-podcpusettest.slice"
PATH = "/kubepods.slice/kubepods-besteffort.slice/" + SLICE
CPUSET = "/sys/fs/cgroup/cpuset"


class CpusetSliceTest(unittest.TestCase):
    def test_slice_keeps_its_cpuset_cgroup(self):
        env = harness.RktEnv(self, extra=["--wait"]).start()
        if not os.path.isdir(CPUSET):
            self.skipTest("no v1 cpuset hierarchy here")
        env.run("busctl", "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                "org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))",
                SLICE, "replace", "2", "MemoryAccounting", "b", "true", "CPUAccounting", "b",
                "true", "0")
        # libcontainer's cpuset, each level from its parent's CPUs and memory nodes.
        d = CPUSET
        for part in PATH.strip("/").split("/"):
            parent, d = d, d + "/" + part
            env.run("sh", "-c", "mkdir -p %s && cat %s/cpuset.cpus >%s/cpuset.cpus && "
                    "cat %s/cpuset.mems >%s/cpuset.mems" % (d, parent, d, parent, d))
        self.addCleanup(env.run, "systemctl", "stop", SLICE, check=False)

        ch = env.daemon.channel()
        self.addCleanup(ch.close)
        rs = pbg.RuntimeServiceStub(ch)
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="cpuset", uid="cpuset-uid", namespace="t"),
            log_directory=os.path.join(env.dir, "logs"),
            linux=pb.LinuxPodSandboxConfig(cgroup_parent=PATH))
        sid = rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=120).pod_sandbox_id
        harness.wait_sandbox_running(rs, sid, "cpuset")

        # As kubelet's cgroup managers do: systemd realizes the slices again.
        for unit in ("kubepods-besteffort.slice", SLICE):
            env.run("systemctl", "set-property", "--runtime", unit, "CPUShares=3")
        self.assertEqual(env.run("test", "-d", CPUSET + PATH, check=False).returncode, 0,
                         "the pod's slice lost its cpuset cgroup")
        unit = "rktlet-%s.service" % sid
        procs = env.run("cat", "%s%s/%s/cgroup.procs" % (CPUSET, PATH, unit)).stdout.split()
        self.assertTrue(procs, "no process of the sandbox in its cpuset cgroup")

        rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=60)
        rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=60)
        harness.wait_for("the unit's cpuset cgroup gone", lambda: env.run(
            "test", "-d", "%s%s/%s" % (CPUSET, PATH, unit), check=False).returncode != 0, 60)


if __name__ == "__main__":
    unittest.main()
