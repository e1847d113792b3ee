"""The daemon under valgrind with client load: no leak that grows with the number of calls.

Two runs, with few and with many calls of every implemented kind (and failing ones); the
bytes valgrind reports lost must not grow with the call count, and no definite leak or
memory error is allowed at all."""
import os
import re
import shutil
import signal
import threading
import unittest

import grpc

import harness

pb, pbg = harness.stubs()


def lost_bytes(log):
    total = 0
    for kind in ("definitely", "indirectly"):
        m = re.search(r"%s lost: ([\d,]+) bytes" % kind, log)
        if m:
            total += int(m.group(1).replace(",", ""))
    return total


def drain(stream):
    """Reads a stream to its end; returns the status it ended with."""
    try:
        for _ in stream:
            pass
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()


@unittest.skipUnless(shutil.which("valgrind"), "valgrind is not installed")
class ValgrindTest(harness.FakeRktCase):
    tmp_prefix = "rktlet-vg-"

    def run_with_calls(self, n):
        wd = harness.workdir(self)
        vglog = os.path.join(wd, "valgrind.log")
        d = harness.Daemon(wd, rkt_path=self.rkt, bus=self.systemd.address,
                           extra=["--probe-interval", "1"])
        self.addCleanup(d.stop, signal.SIGKILL)  # if the test fails half way
        d.start(wrapper=["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite",
                         "--error-exitcode=99", "--log-file=" + vglog], timeout=120)
        ch = d.channel()
        rs = pbg.RuntimeServiceStub(ch)
        raw = ch.unary_unary("/runtime.v1.RuntimeService/Status",
                             request_serializer=lambda x: x, response_deserializer=lambda x: x)
        # An event stream read all along, ended by the daemon's shutdown.
        held = rs.GetContainerEvents(pb.GetEventsRequest(), timeout=600)
        held.initial_metadata()
        held_end = []
        reader = threading.Thread(target=lambda: held_end.append(drain(held)))
        reader.start()
        for i in range(n):
            # One cancelled after its first event.
            events = rs.GetContainerEvents(pb.GetEventsRequest(), timeout=30)
            events.initial_metadata()
            rs.Version(pb.VersionRequest(), timeout=30)
            rs.Status(pb.StatusRequest(verbose=True), timeout=30)
            rs.RuntimeConfig(pb.RuntimeConfigRequest(), timeout=30)
            cfg = pb.PodSandboxConfig(
                metadata=pb.PodSandboxMetadata(name="p%d" % i, uid="u%d" % i, namespace="ns"),
                labels={"app": "vg"}, annotations={"a": "b" * 100})
            sid = rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=30).pod_sandbox_id
            self.assertEqual(next(events).container_id, sid)
            events.cancel()
            ctr = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="c"),
                                     image=pb.ImageSpec(image="busybox"), labels={"x": "y"})
            cid = rs.CreateContainer(pb.CreateContainerRequest(pod_sandbox_id=sid, config=ctr),
                                     timeout=30).container_id
            rs.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=30)
            rs.ListContainers(pb.ListContainersRequest(), timeout=30)
            list(rs.StreamPodSandboxes(pb.StreamPodSandboxesRequest(), timeout=30))
            list(rs.StreamContainers(pb.StreamContainersRequest(), timeout=30))
            list(rs.StreamContainerStats(pb.StreamContainerStatsRequest(), timeout=30))
            list(rs.StreamPodSandboxStats(pb.StreamPodSandboxStatsRequest(), timeout=30))
            rs.ListMetricDescriptors(pb.ListMetricDescriptorsRequest(), timeout=30)
            rs.ListPodSandboxMetrics(pb.ListPodSandboxMetricsRequest(), timeout=30)
            list(rs.StreamPodSandboxMetrics(pb.StreamPodSandboxMetricsRequest(), timeout=30))
            rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid, verbose=True),
                                timeout=30)
            rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid, verbose=True),
                               timeout=30)
            rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=30)
            rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=30)
            rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=30)
            for call in (lambda: rs.CheckpointContainer(pb.CheckpointContainerRequest(),
                                                        timeout=30),
                         lambda: raw(b"\xff\xff", timeout=30)):
                with self.assertRaises(grpc.RpcError):
                    call()
        rc = d.stop(signal.SIGTERM, timeout=120)
        reader.join(60)
        ch.close()
        with open(vglog) as f:
            log = f.read()
        self.assertEqual(rc, 0, log[-3000:])
        self.assertEqual(held_end, [grpc.StatusCode.UNAVAILABLE])
        self.assertIn("ERROR SUMMARY: 0 errors", log, log[-3000:])
        return lost_bytes(log)

    def test_no_leak_grows_per_call(self):
        few = self.run_with_calls(10)
        many = self.run_with_calls(100)
        self.assertEqual(few, 0)
        self.assertEqual(many, 0)


if __name__ == "__main__":
    unittest.main()
