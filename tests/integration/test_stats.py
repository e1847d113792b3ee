"""Stats, resource limits and OOM kills end to end on the real rkt 1.30.0 (stage1 host): what
a CRI client sees, and what is in the app's cgroups. No timing assertions: waits only."""
import os
import time
import unittest

import grpc

import harness
import test_rkt

pb, pbg = harness.stubs()
MiB = 1024 * 1024


class StatsTest(test_rkt.RealRktBase):
    extra = ("--stats-interval", "1")

    def create_res(self, sid, cfg, name, command, res=None):
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                image=pb.ImageSpec(image=test_rkt.BUSYBOX), command=command,
                                log_path=name + ".log", labels={"app": name},
                                linux=pb.LinuxContainerConfig(resources=res) if res else None)
        return self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10).container_id

    def cstats(self, cid):
        return self.rs.ContainerStats(pb.ContainerStatsRequest(container_id=cid),
                                      timeout=10).stats

    def app_cgroup_file(self, cid, controller, name):
        """The file in the container's own cgroups. Its pod's unit is named: hierarchies the
        private host cannot confine (cpuset) hold what other tests' pods left too."""
        c = self.rs.ListContainers(pb.ListContainersRequest(
            filter=pb.ContainerFilter(id=cid)), timeout=10).containers[0]
        unit = "rktlet-%s.service" % c.pod_sandbox_id
        out = self.env.run("sh", "-c", "cat /sys/fs/cgroup/%s/system.slice/%s/payload/"
                           "system.slice/*/%s 2>/dev/null; cat /sys/fs/cgroup/system.slice/"
                           "%s/payload/system.slice/*/%s 2>/dev/null" %
                           (controller, unit, name, unit, name), check=False).stdout
        return out.split()

    def check_psi(self, psi):
        for d in (psi.Some, psi.Full):
            for avg in (d.Avg10, d.Avg60, d.Avg300):
                self.assertTrue(0 <= avg <= 100, psi)
        self.assertTrue(psi.HasField("Some") and psi.HasField("Full"), psi)

    def test_cpu_memory_network_and_gone(self):
        self.pull()
        sid, cfg, ip = self.run_pod("stats")
        burn = self.create_res(sid, cfg, "burn", ["sh", "-c", "while :; do :; done"],
                               pb.LinuxContainerResources(memory_limit_in_bytes=64 * MiB))
        idle = self.create_res(sid, cfg, "idle", ["sh", "-c", "echo hi > /hello; sleep 3600"])
        for cid in (burn, idle):
            self.start(cid)
            self.wait_state(cid, pb.CONTAINER_RUNNING)
        first = harness.wait_for("burn's CPU sampled twice", lambda: (
            lambda s: s.cpu and s.cpu.usage_nano_cores and s)(self.cstats(burn)), timeout=30)
        u0 = first.cpu.usage_core_nano_seconds.value
        # Rising, with a rate: how much of a core it gets depends on the machine's load.
        later = harness.wait_for("burn's CPU usage rising", lambda: (
            lambda s: s.cpu.usage_core_nano_seconds.value > u0 and
            s.cpu.usage_nano_cores.value > 0 and s)(self.cstats(burn)), timeout=30)
        print("\n[figure] burn: %.2f cores, %d ns total" %
              (later.cpu.usage_nano_cores.value / 1e9, later.cpu.usage_core_nano_seconds.value))
        self.assertGreater(later.memory.working_set_bytes.value, 0)
        self.assertGreater(later.memory.usage_bytes.value, 0)
        self.assertGreater(later.memory.page_faults.value, 0)
        self.assertTrue(later.memory.HasField("major_page_faults"))
        # Pressure stall information of the app's cgroup2 cgroup (unified/ on v1): a busy
        # loop in a pod on a shared machine waits for a CPU some of the time.
        self.check_psi(later.cpu.psi)
        self.check_psi(later.memory.psi)
        self.check_psi(later.io.psi)
        self.assertGreater(later.io.timestamp, 0)
        self.assertEqual(later.memory.available_bytes.value,
                         64 * MiB - later.memory.working_set_bytes.value)
        self.assertEqual(later.attributes.metadata.name, "burn")
        st = harness.wait_for("idle's writable layer", lambda: (
            lambda s: s.writable_layer and s)(self.cstats(idle)), timeout=30)
        self.assertGreater(st.writable_layer.inodes_used.value, 0)
        # A directory whose filesystem kubelet can measure (it fails its whole summary on an
        # empty one): rkt's data directory, which holds the pods' layers.
        self.assertEqual(st.writable_layer.fs_id.mountpoint, self.env.rkt_dir)

        # Lists with filters, as ListContainers.
        all_ = self.rs.ListContainerStats(pb.ListContainerStatsRequest(), timeout=10).stats
        self.assertEqual({s.attributes.id for s in all_}, {burn, idle})
        by_label = self.rs.ListContainerStats(pb.ListContainerStatsRequest(
            filter=pb.ContainerStatsFilter(label_selector={"app": "idle"})), timeout=10).stats
        self.assertEqual([s.attributes.id for s in by_label], [idle])
        by_id = self.rs.ListContainerStats(pb.ListContainerStatsRequest(
            filter=pb.ContainerStatsFilter(id=burn)), timeout=10).stats
        self.assertEqual([s.attributes.id for s in by_id], [burn])

        # The sandbox: CPU, memory, processes, its network namespace's interfaces.
        self.env.run("ping", "-c", "3", "-i", "0.2", ip, check=False)
        ps = harness.wait_for("sandbox stats with network", lambda: (
            lambda s: s.linux.network and s.linux.cpu and s)(self.rs.PodSandboxStats(
                pb.PodSandboxStatsRequest(pod_sandbox_id=sid), timeout=10).stats), timeout=30)
        self.assertEqual(ps.attributes.id, sid)
        self.assertGreaterEqual(ps.linux.cpu.usage_core_nano_seconds.value, u0)
        self.assertGreater(ps.linux.memory.working_set_bytes.value, 0)
        self.assertGreater(ps.linux.process.process_count.value, 2)
        self.check_psi(ps.linux.cpu.psi)
        self.check_psi(ps.linux.memory.psi)
        self.check_psi(ps.linux.io.psi)
        self.assertEqual(ps.linux.network.default_interface.name, "eth0")
        self.assertGreater(ps.linux.network.default_interface.rx_bytes.value, 0)
        self.assertEqual({c.attributes.id for c in ps.linux.containers}, {burn, idle})
        lst = self.rs.ListPodSandboxStats(pb.ListPodSandboxStatsRequest(), timeout=10).stats
        self.assertEqual([s.attributes.id for s in lst], [sid])

        # A removed container: NOT_FOUND, and no entry in the list.
        self.rs.StopContainer(pb.StopContainerRequest(container_id=idle, timeout=0), timeout=30)
        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=idle), timeout=30)
        with self.assertRaises(grpc.RpcError) as e:
            self.cstats(idle)
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
        all_ = self.rs.ListContainerStats(pb.ListContainerStatsRequest(), timeout=10).stats
        self.assertEqual([s.attributes.id for s in all_], [burn])
        with self.assertRaises(grpc.RpcError) as e:
            self.rs.UpdateContainerResources(pb.UpdateContainerResourcesRequest(
                container_id=idle, linux=pb.LinuxContainerResources(cpu_shares=512)), timeout=10)
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)

    def test_oom_killed(self):
        self.pull()
        sid, cfg, _ = self.run_pod("oom")
        # 64 MiB into a shell variable, under a 32 MiB limit.
        hog = self.create_res(sid, cfg, "hog", ["sh", "-c", "sleep 1; x=$(head -c 67108864 "
                                                "/dev/zero | tr '\\0' a); sleep 3600"],
                              pb.LinuxContainerResources(memory_limit_in_bytes=32 * MiB))
        self.start(hog)
        st = self.wait_state(hog, pb.CONTAINER_EXITED, timeout=60)
        self.assertEqual(st.exit_code, 137)
        self.assertEqual(st.reason, "OOMKilled")

    def test_update_resources_survives_restart(self):
        self.pull()
        sid, cfg, _ = self.run_pod("upd")
        cid = self.create_res(sid, cfg, "app", ["sleep", "3600"],
                              pb.LinuxContainerResources(memory_limit_in_bytes=64 * MiB,
                                                         cpu_shares=256))
        self.start(cid)
        self.wait_state(cid, pb.CONTAINER_RUNNING)
        harness.wait_for("memory limit written", lambda: str(64 * MiB) in
                         self.app_cgroup_file(cid, "memory", "memory.limit_in_bytes"))
        harness.wait_for("cpu shares written", lambda: "256" in
                         self.app_cgroup_file(cid, "cpu", "cpu.shares"))
        for bad in (pb.LinuxContainerResources(cpu_quota=500),
                    pb.LinuxContainerResources(memory_limit_in_bytes=-1),
                    pb.LinuxContainerResources(cpuset_cpus="0-4096")):
            with self.assertRaises(grpc.RpcError) as e:
                self.rs.UpdateContainerResources(pb.UpdateContainerResourcesRequest(
                    container_id=cid, linux=bad), timeout=10)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.rs.UpdateContainerResources(pb.UpdateContainerResourcesRequest(
            container_id=cid, linux=pb.LinuxContainerResources(
                memory_limit_in_bytes=96 * MiB, cpu_shares=512, cpu_quota=50000,
                cpu_period=100000, cpuset_cpus="0")), timeout=10)
        harness.wait_for("new memory limit", lambda: str(96 * MiB) in
                         self.app_cgroup_file(cid, "memory", "memory.limit_in_bytes"))
        harness.wait_for("new quota", lambda: "50000" in
                         self.app_cgroup_file(cid, "cpu", "cpu.cfs_quota_us"))
        # The cpuset: in a cgroup of the app's own, which its process was moved into (rktlet
        # writes cpuset.cpus first, then moves the process).
        harness.wait_for("cpuset written", lambda: self.app_cgroup_file(
            cid, "cpuset", "cpuset.cpus") == ["0"])
        procs = harness.wait_for("the app's process in its cpuset cgroup", lambda:
                                 self.app_cgroup_file(cid, "cpuset", "cgroup.procs"))
        status = self.env.run("cat", "/proc/%s/status" % procs[0]).stdout
        self.assertIn("Cpus_allowed_list:\t0\n", status)
        # In SQLite, for operators.
        db = os.path.join(self.env.daemon.state_dir, "rktlet.db")
        out = self.env.run("sqlite3", "-readonly", db, "SELECT memory_limit, cpu_shares FROM "
                           "container_resources WHERE id = '%s'" % cid, check=False).stdout
        if out:  # sqlite3 may not be installed in the host
            self.assertEqual(out.strip(), "%d|512" % (96 * MiB))
        # Someone resets the cgroup behind rktlet's back; a restart writes it again.
        self.env.run("sh", "-c", "for d in /sys/fs/cgroup/memory/system.slice/rktlet-*/payload/"
                     "system.slice/*.service; do echo -1 > $d/memory.memsw.limit_in_bytes; "
                     "echo -1 > $d/memory.limit_in_bytes; done")
        self.assertNotIn(str(96 * MiB), self.app_cgroup_file(cid, "memory",
                                                             "memory.limit_in_bytes"))
        self.env.daemon.stop()
        self.env.daemon.start(wrapper=self.env.enter)
        self.connect()
        harness.wait_for("memory limit written again after the restart", lambda: str(96 * MiB)
                         in self.app_cgroup_file(cid, "memory", "memory.limit_in_bytes"),
                         timeout=60)

    def test_runtime_config(self):
        r = self.rs.RuntimeConfig(pb.RuntimeConfigRequest(), timeout=10)
        self.assertEqual(r.linux.cgroup_driver, pb.SYSTEMD)


class FirstSampleTest(test_rkt.RealRktBase):
    """A container's stats are there as soon as it runs, not at the next --stats-interval
    (here an hour): kubelet and critest ask right after the start."""
    extra = ("--stats-interval", "3600")

    def test_stats_right_after_start(self):
        self.pull()
        sid, cfg, _ = self.run_pod("first")
        cid = StatsTest.create_res(self, sid, cfg, "first", ["sleep", "3600"])
        self.start(cid)
        self.wait_state(cid, pb.CONTAINER_RUNNING)
        st = StatsTest.cstats(self, cid)
        self.assertGreater(st.cpu.timestamp, 0)
        self.assertGreater(st.memory.timestamp, 0)
        self.assertGreater(st.memory.working_set_bytes.value, 0)
        pst = self.rs.PodSandboxStats(pb.PodSandboxStatsRequest(pod_sandbox_id=sid),
                                      timeout=10).stats
        self.assertGreater(pst.linux.cpu.timestamp, 0)
        self.stop_remove(sid)

    def test_two_samples_a_second_apart(self):
        # crictl stats: two ListContainerStats a second apart, the CPU rate off the two; with
        # one sample per hour both would be the same, which crictl takes for an error.
        self.pull()
        sid, cfg, _ = self.run_pod("twice")
        cid = StatsTest.create_res(self, sid, cfg, "busy", ["sh", "-c", "while :; do :; done"])
        self.start(cid)
        self.wait_state(cid, pb.CONTAINER_RUNNING)
        samples = []
        for _ in range(2):
            r = self.rs.ListContainerStats(pb.ListContainerStatsRequest(), timeout=10)
            samples.append({s.attributes.id: s for s in r.stats}[cid])
            time.sleep(1)
        self.assertGreater(samples[1].cpu.timestamp, samples[0].cpu.timestamp)
        self.assertGreater(samples[1].cpu.usage_core_nano_seconds.value,
                           samples[0].cpu.usage_core_nano_seconds.value)
        self.assertGreater(samples[1].memory.working_set_bytes.value, 0)
        self.stop_remove(sid)


if __name__ == "__main__":
    unittest.main()
