"""CRI's metrics (ListMetricDescriptors, ListPodSandboxMetrics, StreamPodSandboxMetrics) on
the real rkt 1.30.0: cAdvisor's names and labels, every metric as its descriptor says, the
samples of the stats cache, the limits, start times and an OOM kill from the records."""
import time
import unittest

import harness
import test_rkt

pb, pbg = harness.stubs()
MiB = 1024 * 1024
BASE = ["container", "id", "image", "name", "namespace", "pod"]
# What the node conformance suite's ContainerMetrics spec asks of a running container, and of
# its pod (test/e2e_node/container_metrics_test.go).
CONTAINER_FAMILIES = [
    "container_blkio_device_usage_total", "container_cpu_system_seconds_total",
    "container_cpu_usage_seconds_total", "container_cpu_user_seconds_total",
    "container_file_descriptors", "container_fs_reads_bytes_total", "container_fs_reads_total",
    "container_fs_usage_bytes", "container_fs_writes_bytes_total", "container_fs_writes_total",
    "container_last_seen", "container_memory_cache", "container_memory_failcnt",
    "container_memory_failures_total", "container_memory_mapped_file",
    "container_memory_max_usage_bytes", "container_memory_rss", "container_memory_swap",
    "container_memory_usage_bytes", "container_memory_working_set_bytes",
    "container_oom_events_total", "container_processes", "container_sockets",
    "container_spec_cpu_period", "container_spec_cpu_shares",
    "container_spec_memory_limit_bytes", "container_spec_memory_reservation_limit_bytes",
    "container_spec_memory_swap_limit_bytes", "container_start_time_seconds",
    "container_threads", "container_threads_max", "container_ulimits_soft",
    "container_pressure_cpu_waiting_seconds_total", "container_pressure_io_stalled_seconds_total",
    "container_cpu_load_average_10s", "container_tasks_state"]
POD_FAMILIES = [
    "container_network_%s_%s" % (d, x) for d in ("receive", "transmit")
    for x in ("bytes_total", "errors_total", "packets_total", "packets_dropped_total")] + [
    # the device's, once a pod
    "container_fs_limit_bytes", "container_fs_inodes_total", "container_fs_inodes_free",
    "container_fs_io_time_seconds_total", "container_fs_sector_writes_total"]


def by_name(metrics):
    out = {}
    for m in metrics:
        out.setdefault(m.name, []).append(m)
    return out


class CriMetricsTest(test_rkt.RealRktBase):
    extra = ("--stats-interval", "1")

    def create(self, sid, cfg, name, command, res=None):
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                image=pb.ImageSpec(image=test_rkt.BUSYBOX), command=command,
                                log_path=name + ".log",
                                linux=pb.LinuxContainerConfig(resources=res) if res else None)
        return self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10).container_id

    def test_metrics(self):
        self.pull()
        sid, cfg, _ = self.run_pod("metrics")
        busy = self.create(sid, cfg, "busy", ["sh", "-c", "while :; do :; done"],
                           pb.LinuxContainerResources(memory_limit_in_bytes=64 * MiB,
                                                      cpu_period=100000, cpu_quota=50000,
                                                      cpu_shares=256))
        hog = self.create(sid, cfg, "hog", ["sh", "-c", "sleep 1; x=$(head -c 67108864 "
                                            "/dev/zero | tr '\\0' a); sleep 3600"],
                          pb.LinuxContainerResources(memory_limit_in_bytes=32 * MiB))
        for cid in (busy, hog):
            self.start(cid)
        self.wait_state(busy, pb.CONTAINER_RUNNING)
        self.assertEqual(self.wait_state(hog, pb.CONTAINER_EXITED).reason, "OOMKilled")

        descs = {d.name: list(d.label_keys) for d in self.rs.ListMetricDescriptors(
            pb.ListMetricDescriptorsRequest(), timeout=10).descriptors}
        for name in ("container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
                     "container_network_receive_bytes_total", "container_oom_events_total",
                     "container_processes", "container_spec_memory_limit_bytes",
                     "container_fs_usage_bytes"):
            self.assertIn(name, descs)
            self.assertEqual(descs[name][:6], BASE)

        def metrics():
            r = self.rs.ListPodSandboxMetrics(pb.ListPodSandboxMetricsRequest(), timeout=10)
            self.assertEqual([p.pod_sandbox_id for p in r.pod_metrics], [sid])
            return r.pod_metrics[0]
        pm = harness.wait_for("busy's CPU past one second", lambda: (lambda p: (
            [v for c in p.container_metrics if c.container_id == busy for v in c.metrics
             if v.name == "container_cpu_usage_seconds_total" and v.value.value >= 1] and p))(
            metrics()), timeout=60)
        t = time.monotonic()
        for _ in range(20):
            metrics()
        print("\n[figure] ListPodSandboxMetrics: %d + %d metrics, %.2f ms a call" % (
            len(pm.metrics), sum(len(c.metrics) for c in pm.container_metrics),
            (time.monotonic() - t) * 1000 / 20))

        every = list(pm.metrics) + [m for c in pm.container_metrics for m in c.metrics]
        for m in every:
            self.assertIn(m.name, descs)
            self.assertEqual(len(m.label_values), len(descs[m.name]), m)
        pod = by_name(pm.metrics)
        self.assertGreater(pod["container_memory_working_set_bytes"][0].value.value, 0)
        self.assertGreater(pod["container_processes"][0].value.value, 2)
        ifs = {m.label_values[6]: m.value.value
               for m in pod["container_network_receive_bytes_total"]}
        self.assertIn("eth0", ifs)
        self.assertEqual(pod["container_processes"][0].label_values[:2], ["", sid])
        self.assertEqual([f for f in POD_FAMILIES if f not in pod], [])

        ctrs = {c.container_id: by_name(c.metrics) for c in pm.container_metrics}
        self.assertEqual(set(ctrs), {busy, hog})
        b = ctrs[busy]
        self.assertEqual(b["container_cpu_usage_seconds_total"][0].label_values[0], "busy")
        self.assertEqual(b["container_cpu_usage_seconds_total"][0].label_values[4:6], [
            "e2e", "metrics"])
        self.assertGreater(b["container_cpu_usage_seconds_total"][0].timestamp, 0)
        self.assertGreater(b["container_memory_working_set_bytes"][0].value.value, 0)
        self.assertEqual([f for f in CONTAINER_FAMILIES if f not in b], [])
        self.assertEqual(b["container_threads"][0].value.value, 1)  # sh's loop
        self.assertGreaterEqual(b["container_file_descriptors"][0].value.value, 3)
        self.assertEqual({x.label_values[6] for x in b["container_tasks_state"]},
                         {"running", "uninterruptible", "stopped"})
        self.assertEqual(b["container_spec_memory_limit_bytes"][0].value.value, 64 * MiB)
        self.assertEqual(b["container_spec_cpu_quota"][0].value.value, 50000)
        self.assertEqual(b["container_spec_cpu_shares"][0].value.value, 256)
        self.assertGreater(b["container_start_time_seconds"][0].value.value, 1.6e9)
        self.assertEqual(b["container_oom_events_total"][0].value.value, 0)
        self.assertEqual(ctrs[hog]["container_oom_events_total"][0].value.value, 1)
        self.assertNotIn("container_memory_working_set_bytes", ctrs[hog])  # not running

        streamed = [p for page in self.rs.StreamPodSandboxMetrics(
            pb.StreamPodSandboxMetricsRequest(), timeout=10) for p in page.pod_sandbox_metrics]
        self.assertEqual([p.pod_sandbox_id for p in streamed], [sid])
        self.assertEqual({c.container_id for c in streamed[0].container_metrics}, {busy, hog})
        self.stop_remove(sid)
        self.assertEqual(list(self.rs.ListPodSandboxMetrics(
            pb.ListPodSandboxMetricsRequest(), timeout=10).pod_metrics), [])


if __name__ == "__main__":
    unittest.main()
