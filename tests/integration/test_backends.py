"""One scenario on both backends: the real rkt 1.30.0 (the backend of record) and the rkt
simulator (the test double for faults). What a CRI client sees is written down as a
transcript with the values that must differ (IDs, times, IPs) reduced to their form; the two
transcripts must be equal. A difference means the simulator has drifted from rkt (or the
daemon behaves differently on it), which is what let the project stay green while it could
not run a container on real rkt. The real half is skipped, saying why, where rkt cannot be
built; CI sets RKL_RKT so it always runs there."""
import ipaddress
import os
import re
import tempfile
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

BUSYBOX = "docker.io/library/busybox:latest"


def form(value):
    """The shape of a value whose exact text differs between runs."""
    if isinstance(value, str):
        if re.fullmatch(r"sha512-[0-9a-f]{64}", value):
            return "<image id>"
        if re.fullmatch(r"[0-9a-f]{64}", value):
            return "<id>"
    return value


def state_name(enum, value):
    return enum.Name(value)


class Scenario:
    """The steps, each adding what the client saw to self.seen."""

    def __init__(self, test, env):
        self.test = test
        self.env = env
        ch = env.daemon.channel()
        test.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)
        self.im = pbg.ImageServiceStub(ch)
        self.seen = []
        # A log directory of this run's own: each backend's daemon writes only into log files
        # it made (and the trap's line must be this run's).
        self.logs = tempfile.mkdtemp(prefix="e2e_both-", dir=harness.LOG_ROOT)

    def see(self, what, value):
        self.seen.append((what, value))

    def code_of(self, fn):
        try:
            fn()
            return "OK"
        except grpc.RpcError as e:
            return e.code().name

    def pod(self, sid):
        return self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid),
                                        timeout=10).status

    def ctr(self, cid):
        return self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid),
                                       timeout=10).status

    def wait_state(self, cid, state, timeout=60):
        return harness.wait_for("container %s in %s" % (cid[:12], pb.ContainerState.Name(state)),
                                lambda: (lambda s: s.state == state and s)(self.ctr(cid)),
                                timeout=timeout, interval=0.02)

    def see_container(self, what, st, image_id):
        self.see(what, {
            "state": pb.ContainerState.Name(st.state),
            "name": st.metadata.name,
            "image": st.image.image,
            "image_ref is the pulled ID": st.image_ref == image_id,
            "exit_code": st.exit_code,
            "reason": st.reason,
            "started": st.started_at > 0,
            "finished": st.finished_at > 0,
            "finished after started": st.finished_at >= st.started_at,
            "labels": dict(st.labels),
            "log_path": os.path.relpath(st.log_path, self.logs),  # each run its own dir
        })

    def run(self):
        t = self.test
        image_id = self.im.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=BUSYBOX)),
                                     timeout=120).image_ref
        self.see("PullImage", form(image_id))
        img = self.im.ImageStatus(pb.ImageStatusRequest(image=pb.ImageSpec(image="busybox")),
                                  timeout=10).image
        self.see("ImageStatus", {"id": form(img.id), "same id": img.id == image_id,
                                 "tagged": BUSYBOX in img.repo_tags, "has size": img.size > 0})
        listed = [i.id for i in self.im.ListImages(pb.ListImagesRequest(), timeout=10).images]
        self.see("ListImages has it", image_id in listed)

        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="both", uid="both-uid", namespace="e2e"),
            hostname="both", log_directory=self.logs,
            labels={"app": "both"}, annotations={"note": "kept as given"})
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=10).pod_sandbox_id
        self.see("RunPodSandbox", form(sid))
        st = harness.wait_for("sandbox with an IP", lambda: (
            lambda s: s.network.ip and s)(self.pod(sid)), timeout=120)
        self.see("PodSandboxStatus", {
            "state": pb.PodSandboxState.Name(st.state),
            "ip in the pods' network": ipaddress.ip_address(st.network.ip) in self.env.pod_net,
            "metadata": (st.metadata.name, st.metadata.uid, st.metadata.namespace),
            "labels": dict(st.labels), "annotations": dict(st.annotations),
        })

        def create(name, command):
            cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                    image=pb.ImageSpec(image=BUSYBOX), command=command,
                                    labels={"container": name}, log_path=name + ".log")
            return self.rs.CreateContainer(pb.CreateContainerRequest(
                pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10).container_id

        cids = {
            "ok": create("ok", ["sh", "-c", "sleep 1; exit 0"]),
            "fail": create("fail", ["sh", "-c", "sleep 1; exit 3"]),
            "term": create("term", ["sleep", "3600"]),
            "stubborn": create("stubborn", ["sh", "-c", "trap '' TERM; echo ready; sleep 3600"]),
        }
        for name, cid in sorted(cids.items()):
            self.see_container("created " + name, self.ctr(cid), image_id)
        for name, cid in sorted(cids.items()):
            self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
        for name in ("term", "stubborn"):
            self.see_container("started " + name,
                               self.wait_state(cids[name], pb.CONTAINER_RUNNING), image_id)
        for name in ("ok", "fail"):
            self.see_container("exited " + name,
                               self.wait_state(cids[name], pb.CONTAINER_EXITED), image_id)
        # Stopped only once its trap is set: on a busy machine the shell may not have run it
        # when the container is first seen running (its log says when).
        log = os.path.join(self.logs, "stubborn.log")
        harness.wait_for("stubborn's trap", lambda: os.path.exists(log) and
                         " ready" in open(log).read(), timeout=60, interval=0.1)
        for name, timeout in (("term", 10), ("stubborn", 1)):
            self.rs.StopContainer(pb.StopContainerRequest(container_id=cids[name],
                                                          timeout=timeout), timeout=30)
            self.see_container("stopped " + name,
                               self.wait_state(cids[name], pb.CONTAINER_EXITED), image_id)
        self.see("StopContainer again", self.code_of(lambda: self.rs.StopContainer(
            pb.StopContainerRequest(container_id=cids["term"], timeout=1), timeout=30)))

        running = self.rs.ListContainers(pb.ListContainersRequest(filter=pb.ContainerFilter(
            state=pb.ContainerStateValue(state=pb.CONTAINER_EXITED))), timeout=10).containers
        self.see("ListContainers EXITED", sorted(c.metadata.name for c in running))
        by_label = self.rs.ListContainers(pb.ListContainersRequest(filter=pb.ContainerFilter(
            label_selector={"container": "ok"})), timeout=10).containers
        self.see("ListContainers by label", [c.id == cids["ok"] for c in by_label])

        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cids["ok"]), timeout=10)
        self.see("ContainerStatus of a removed one",
                 self.code_of(lambda: self.ctr(cids["ok"])))
        self.see("RemoveContainer again", self.code_of(lambda: self.rs.RemoveContainer(
            pb.RemoveContainerRequest(container_id=cids["ok"]), timeout=10)))

        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=60)
        st = self.pod(sid)
        self.see("stopped sandbox", (pb.PodSandboxState.Name(st.state),
                                     bool(st.network.ip) and
                                     ipaddress.ip_address(st.network.ip) in self.env.pod_net))
        self.see("containers after StopPodSandbox", sorted(
            (c.metadata.name, pb.ContainerState.Name(c.state)) for c in
            self.rs.ListContainers(pb.ListContainersRequest(), timeout=10).containers))
        self.see("StopPodSandbox again", self.code_of(lambda: self.rs.StopPodSandbox(
            pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=60)))
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=60)
        self.see("PodSandboxStatus of a removed one", self.code_of(lambda: self.pod(sid)))
        self.see("RemovePodSandbox again", self.code_of(lambda: self.rs.RemovePodSandbox(
            pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=60)))
        self.see("ListPodSandbox", len(self.rs.ListPodSandbox(pb.ListPodSandboxRequest(),
                                                              timeout=10).items))
        self.see("ListContainers", len(self.rs.ListContainers(pb.ListContainersRequest(),
                                                              timeout=10).containers))
        t.assertTrue(self.seen)
        return self.seen


class BackendsTest(unittest.TestCase):
    maxDiff = None

    def transcript(self, make_env):
        """Runs the scenario on a fresh env; the env's cleanups run before this returns."""
        result = []

        class One(unittest.TestCase):
            def runTest(inner):
                result.extend(Scenario(inner, make_env(inner).start()).run())
        outcome = unittest.TestResult()
        One().run(outcome)
        for _, trace in outcome.errors + outcome.failures:
            self.fail(trace)
        if outcome.skipped:
            self.skipTest(outcome.skipped[0][1])
        return result

    def test_same_transcript_on_real_rkt_and_simulator(self):
        def sim(test):
            env = harness.SimEnv(test)
            env.fetch("docker://" + BUSYBOX)  # the simulator's "registry" is its image folder
            return env
        simulated = self.transcript(sim)
        real = self.transcript(lambda test: harness.RktEnv(test))
        # Step by step, so that a difference names its step.
        for (what, s), (what_r, r) in zip(simulated, real):
            self.assertEqual(what, what_r)
            self.assertEqual(s, r, "%s: simulator %r, real rkt %r" % (what, s, r))
        self.assertEqual(len(simulated), len(real))


if __name__ == "__main__":
    unittest.main()
