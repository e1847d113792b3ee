"""The streaming lists (CRIListStreaming: StreamPodSandboxes, StreamContainers,
StreamContainerStats, StreamPodSandboxStats, StreamImages) through the real daemon with a
real gRPC client: what they answer is what the unary Lists answer, in pages that a client
with grpc's default message limit (4 MiB) takes, also when the whole list is larger than
any message may be; a client that stops half way; and a stream that waits for the
daemon's first look at rkt's images."""
import threading
import time
import unittest

import harness

pb, pbg = harness.stubs()

IMAGE = "docker.io/library/busybox:latest"
PAGE_BYTES = 1024 * 1024  # src/api/page.h
PAGE_ITEMS = 512


def pages(stream, field):
    """The pages of a stream, each as its list of items."""
    return [list(getattr(page, field)) for page in stream]


def without_created_at(containers):
    """Copies with created_at cleared: it becomes rkt's time of the app's creation once the
    reconciler has added the app to its pod, which happens after CreateContainer answered,
    so it may move between a Stream and the List it is compared with."""
    out = []
    for c in containers:
        c2 = pb.Container()
        c2.CopyFrom(c)
        c2.created_at = 0
        out.append(c2)
    return out


class StreamListsTest(unittest.TestCase):
    def setUp(self):
        self.env = harness.SimEnv(self).start()
        self.env.fetch("docker://" + IMAGE)
        ch = self.env.daemon.channel()  # grpc's default limits: 4 MiB a message received
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)
        self.im = pbg.ImageServiceStub(ch)

    def run_pod(self, name, annotations=None):
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="lists"),
            hostname=name, log_directory=harness.LOG_ROOT + "/lists_" + name,
            labels={"app": name}, annotations=annotations or {})
        return self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                     timeout=10).pod_sandbox_id, cfg

    def create(self, sid, cfg, name, annotations=None):
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                image=pb.ImageSpec(image=IMAGE), command=["sleep", "1000"],
                                labels={"n": name}, annotations=annotations or {},
                                log_path=name + ".log")
        return self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=30).container_id

    def test_lists_in_pages(self):
        """More containers than a page holds, and more bytes of them than a message may
        be: every one comes whole, in pages a default client takes; the small lists are
        the unary Lists' answers."""
        sid, cfg = self.run_pod("many")
        other, ocfg = self.run_pod("other")
        harness.wait_sandbox_running(self.rs, sid)
        # 70 containers of 240 KB of annotations: 16.8 MB, more than one message may be.
        big = {"big-%d" % i: "x" * 60000 for i in range(4)}
        fat = [self.create(sid, cfg, "fat%d" % i, big) for i in range(70)]
        small = [self.create(other, ocfg, "c%d" % i) for i in range(PAGE_ITEMS + 40)]
        for cid in small[:3]:
            self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
        # Running before anything is compared: a start under way changes a container's
        # state and times between a Stream and the List it is compared with.
        for cid in small[:3]:
            harness.wait_for("%s running" % cid, lambda cid=cid: self.rs.ContainerStatus(
                pb.ContainerStatusRequest(container_id=cid), timeout=10).status.state ==
                pb.CONTAINER_RUNNING, timeout=60)

        t = time.monotonic()
        got = pages(self.rs.StreamContainers(pb.StreamContainersRequest(), timeout=60),
                    "containers")
        took = time.monotonic() - t
        items = [c for page in got for c in page]
        self.assertEqual(sorted(c.id for c in items), sorted(fat + small))
        self.assertTrue(all(len(p) <= PAGE_ITEMS for p in got))
        self.assertTrue(all(sum(c.ByteSize() for c in p) <= PAGE_BYTES or len(p) == 1
                            for p in got))
        self.assertGreaterEqual(len(got), 18)
        for c in items:
            if c.id in fat:
                self.assertEqual(dict(c.annotations), big)  # whole, not trimmed
        print("\nStreamContainers: %d containers, %.1f MB in %d pages, %.0f ms" % (
            len(items), sum(c.ByteSize() for c in items) / 1e6, len(got), took * 1000))

        # The same filters as the List's, and the same answer.
        for f in (pb.ContainerFilter(pod_sandbox_id=other),
                  pb.ContainerFilter(pod_sandbox_id=other[:8], label_selector={"n": "c7"}),
                  pb.ContainerFilter(state=pb.ContainerStateValue(state=pb.CONTAINER_CREATED),
                                     pod_sandbox_id=other)):
            streamed = [c for p in pages(self.rs.StreamContainers(
                pb.StreamContainersRequest(filter=f), timeout=60), "containers") for c in p]
            listed = list(self.rs.ListContainers(pb.ListContainersRequest(filter=f),
                                                 timeout=30).containers)
            self.assertEqual(without_created_at(streamed), without_created_at(listed), f)

        streamed = [p for page in pages(self.rs.StreamPodSandboxes(
            pb.StreamPodSandboxesRequest(), timeout=30), "pod_sandboxes") for p in page]
        self.assertEqual(streamed, list(self.rs.ListPodSandbox(pb.ListPodSandboxRequest(),
                                                               timeout=30).items))
        streamed = [p for page in pages(self.rs.StreamPodSandboxes(pb.StreamPodSandboxesRequest(
            filter=pb.PodSandboxFilter(label_selector={"app": "other"})), timeout=30),
            "pod_sandboxes") for p in page]
        self.assertEqual([p.id for p in streamed], [other])

        # Stats: the same objects, attributes and, in the same snapshot, the same figures.
        f = pb.ContainerStatsFilter(pod_sandbox_id=other)
        streamed = [s for p in pages(self.rs.StreamContainerStats(
            pb.StreamContainerStatsRequest(filter=f), timeout=60), "container_stats") for s in p]
        listed = list(self.rs.ListContainerStats(pb.ListContainerStatsRequest(filter=f),
                                                 timeout=30).stats)
        self.assertEqual([s.attributes for s in streamed], [s.attributes for s in listed])
        self.assertEqual(len(streamed), len(small))
        streamed = [s for p in pages(self.rs.StreamPodSandboxStats(
            pb.StreamPodSandboxStatsRequest(filter=pb.PodSandboxStatsFilter(id=other)),
            timeout=30), "pod_sandbox_stats") for s in p]
        self.assertEqual([s.attributes.id for s in streamed], [other])
        self.assertEqual(len(streamed[0].linux.containers), len(small))

        # Images.
        streamed = [i for p in pages(self.im.StreamImages(pb.StreamImagesRequest(), timeout=30),
                                     "images") for i in p]
        self.assertEqual(streamed, list(self.im.ListImages(pb.ListImagesRequest(),
                                                           timeout=30).images))
        self.assertTrue(any(t.endswith("busybox:latest") for i in streamed for t in i.repo_tags))
        none = pages(self.rs.StreamContainers(pb.StreamContainersRequest(
            filter=pb.ContainerFilter(id="ffffff")), timeout=30), "containers")
        self.assertEqual(none, [[]])  # one empty page

        # A client that stops after the first page: the daemon goes on.
        s = self.rs.StreamContainers(pb.StreamContainersRequest(), timeout=60)
        self.assertTrue(next(s).containers)
        s.cancel()
        self.assertEqual(len(self.rs.ListPodSandbox(pb.ListPodSandboxRequest(),
                                                    timeout=10).items), 2)


class FirstLookTest(unittest.TestCase):
    def test_images_wait_for_the_first_list(self):
        """Right after a start, StreamImages waits for the daemon's first look at rkt's
        images as ListImages does (on a worker, and the stream begins from there), then
        answers what it found."""
        env = harness.SimEnv(self, extra=["--rkt-timeout", "2", "--probe-interval", "1"])
        env.fetch("docker://" + IMAGE)
        env.set_faults("image list hang\n")
        env.start()
        ch = env.daemon.channel()
        self.addCleanup(ch.close)
        im = pbg.ImageServiceStub(ch)
        got = []
        t = threading.Thread(target=lambda: got.append(
            pages(im.StreamImages(pb.StreamImagesRequest(), timeout=60), "images")))
        t.start()
        time.sleep(0.5)
        self.assertTrue(t.is_alive())  # waiting for the hung list
        t.join(60)
        # The first list was killed at --rkt-timeout: nothing listed, one empty page.
        self.assertEqual(got, [[[]]])
        env.set_faults("")
        harness.wait_for("busybox streamed", lambda: [
            i for p in pages(im.StreamImages(pb.StreamImagesRequest(), timeout=30), "images")
            for i in p if any(tag.endswith("busybox:latest") for tag in i.repo_tags)])


if __name__ == "__main__":
    unittest.main()
