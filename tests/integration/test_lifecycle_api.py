"""The sandbox and container RPCs through the real daemon, over gRPC: what the API
guarantees on its own (IDs, states right after the calls, filters, validation, idempotence,
prefixes, restarts). rkt here is a stub that only answers `version`: no pod ever starts
(the reconciler's attempts fail and are retried), and test_lifecycle.py covers that side."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

READY = pb.SANDBOX_READY
NOTREADY = pb.SANDBOX_NOTREADY

LABELS = {"io.kubernetes.pod.name": "web", "io.kubernetes.pod.uid": "uid-1",
          "app": "web ☃", "empty": "", "日本": "語"}
ANNOTATIONS = {"kubernetes.io/config.seen": "2026-11-21T07:00:00.000000000Z",
               "note": "naïve — “quoted”\nmulti-line\ttabbed", "blank": ""}


# The pods' log directories, below one of each test's own: a daemon writes only into log
# files it made, not into another test's daemon's.
LOGS = harness.LOG_ROOT


def pod_config(name="web", uid="uid-1", namespace="default", attempt=0, labels=None,
               annotations=None, log_directory=None, host_network=False):
    cfg = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace=namespace,
                                       attempt=attempt),
        hostname=name,
        log_directory=log_directory or LOGS + "/%s_%s_%s" % (namespace, name, uid),
        labels=LABELS if labels is None else labels,
        annotations=ANNOTATIONS if annotations is None else annotations)
    if host_network:
        cfg.linux.security_context.namespace_options.network = pb.NODE
    return cfg


def ctr_config(name="app", attempt=0, image="busybox:1.36", labels=None, annotations=None,
               log_path=None):
    return pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=name, attempt=attempt),
        image=pb.ImageSpec(image=image),
        command=["sleep", "1000"],
        labels={"io.kubernetes.container.name": name} if labels is None else labels,
        annotations={"io.kubernetes.container.hash": "1a2b"} if annotations is None
        else annotations,
        log_path=log_path or "%s/%d.log" % (name, attempt))


def is_id(s):
    return len(s) == 64 and all(c in "0123456789abcdef" for c in s)


class LifecycleApiTest(harness.FakeRktCase):
    def setUp(self):
        global LOGS
        LOGS = tempfile.mkdtemp(prefix="logs-", dir=harness.LOG_ROOT)
        self.d = self.start_daemon(harness.workdir(self))
        self.rs = self.connect(self.d)

    def tearDown(self):
        # A daemon that died under a test: show why (its log goes with the workdir).
        if self.d.proc.poll() is not None:
            sys.stderr.write("rktlet exited with %s:\n%s\n"
                             % (self.d.proc.returncode, self.d.log()[-8000:]))

    def start_daemon(self, workdir):
        d = harness.Daemon(workdir, rkt_path=self.rkt, bus=self.systemd.address)
        self.addCleanup(d.stop, signal.SIGKILL)
        return d.start()

    def connect(self, d):
        # A private subchannel: after a kill -9, a pooled one would still hold the dead
        # daemon's connection.
        ch = grpc.insecure_channel("unix://" + d.socket,
                                   options=[("grpc.use_local_subchannel_pool", 1)])
        self.addCleanup(ch.close)
        return pbg.RuntimeServiceStub(ch)

    def restart(self, sig=signal.SIGTERM):
        rc = self.d.stop(sig)
        if sig == signal.SIGTERM:
            self.assertEqual(rc, 0, self.d.log())  # and, under ASan, no leak
        self.d = self.start_daemon(self.d.workdir)
        self.rs = self.connect(self.d)

    # Calls.

    def run_pod(self, **kw):
        handler = kw.pop("runtime_handler", "")
        r = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=pod_config(**kw),
                                                          runtime_handler=handler), timeout=10)
        self.assertTrue(is_id(r.pod_sandbox_id), r.pod_sandbox_id)
        return r.pod_sandbox_id

    def create(self, pod, **kw):
        r = self.rs.CreateContainer(pb.CreateContainerRequest(pod_sandbox_id=pod,
                                                              config=ctr_config(**kw)),
                                    timeout=10)
        self.assertTrue(is_id(r.container_id), r.container_id)
        return r.container_id

    def pods(self, **filter_kw):
        f = pb.PodSandboxFilter(**filter_kw) if filter_kw else None
        return list(self.rs.ListPodSandbox(pb.ListPodSandboxRequest(filter=f), timeout=10).items)

    def ctrs(self, **filter_kw):
        f = pb.ContainerFilter(**filter_kw) if filter_kw else None
        return list(self.rs.ListContainers(pb.ListContainersRequest(filter=f),
                                           timeout=10).containers)

    def pod_status(self, pod, verbose=False):
        return self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=pod,
                                                                   verbose=verbose), timeout=10)

    def ctr_status(self, ctr, verbose=False):
        return self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=ctr,
                                                                 verbose=verbose), timeout=10)

    def assertCode(self, code, fn, *args, needle=None, **kw):
        with self.assertRaises(grpc.RpcError) as cm:
            fn(*args, timeout=10, **kw)
        self.assertEqual(cm.exception.code(), code, cm.exception.details())
        if needle:
            self.assertIn(needle, cm.exception.details())
        return cm.exception

    def sql(self, query):
        db = os.path.join(self.d.state_dir, "rktlet.db")
        out = subprocess.run(["sqlite3", "-readonly", db, query], capture_output=True,
                             text=True, check=True).stdout
        return out.strip()

    # Tests.

    def test_sandbox_lifecycle(self):
        before = time.time_ns()
        pod = self.run_pod(attempt=1)
        # Committed before the reply, and listed at once.
        self.assertEqual(self.sql("SELECT count(*) FROM sandbox WHERE id = '%s'" % pod), "1")
        items = self.pods()
        self.assertEqual([p.id for p in items], [pod])
        p = items[0]
        self.assertEqual(p.state, READY)
        self.assertEqual((p.metadata.name, p.metadata.uid, p.metadata.namespace,
                          p.metadata.attempt), ("web", "uid-1", "default", 1))
        self.assertGreaterEqual(p.created_at, before)
        self.assertLessEqual(p.created_at, time.time_ns())
        self.assertEqual(dict(p.labels), LABELS)
        self.assertEqual(dict(p.annotations), ANNOTATIONS)
        self.assertEqual(p.runtime_handler, "")

        st = self.pod_status(pod, verbose=True)
        self.assertEqual(st.status.id, pod)
        self.assertEqual(st.status.created_at, p.created_at)
        self.assertEqual(st.status.linux.namespaces.options.network, pb.POD)
        self.assertEqual(st.status.linux.namespaces.options.pid, pb.POD)
        self.assertEqual(dict(st.status.labels), LABELS)
        self.assertEqual(dict(st.status.annotations), ANNOTATIONS)
        info = json.loads(st.info["info"])
        self.assertEqual(info["id"], pod)
        self.assertEqual(info["desired"], "ready")
        self.assertIn(info["phase"], ("pending", "running", "failed", "stopped"))
        self.assertIn("lastError", info)
        self.assertIn("attempts", info)
        self.assertIn("nextRetryAt", info)

        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod), timeout=10)
        self.assertEqual(self.pod_status(pod).status.state, NOTREADY)
        self.assertEqual(json.loads(self.pod_status(pod, True).info["info"])["desired"],
                         "stopped")
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod), timeout=10)

        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod), timeout=10)
        self.assertCode(grpc.StatusCode.NOT_FOUND, self.rs.PodSandboxStatus,
                        pb.PodSandboxStatusRequest(pod_sandbox_id=pod), needle=pod)
        self.assertEqual(self.pods(), [])
        self.assertEqual(self.sql("SELECT count(*) FROM sandbox"), "0")
        # Idempotent, as CRI requires.
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod), timeout=10)
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod), timeout=10)

    def test_host_network(self):
        pod = self.run_pod(host_network=True)
        st = self.pod_status(pod).status
        self.assertEqual(st.linux.namespaces.options.network, pb.NODE)
        self.assertEqual(st.state, READY)

    def test_sandbox_invalid(self):
        e = self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.rs.RunPodSandbox,
                            pb.RunPodSandboxRequest(config=pod_config(), runtime_handler="runc"))
        self.assertIn("runtime_handler", e.details())
        self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.rs.RunPodSandbox,
                        pb.RunPodSandboxRequest(), needle="config")
        self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.rs.RunPodSandbox,
                        pb.RunPodSandboxRequest(config=pod_config(name="")),
                        needle="config.metadata.name")
        self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.rs.RunPodSandbox,
                        pb.RunPodSandboxRequest(config=pod_config(log_directory="rel/dir")),
                        needle="config.log_directory")
        self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.rs.RunPodSandbox,
                        pb.RunPodSandboxRequest(config=pod_config(labels={"": "x"})),
                        needle="config.labels")
        # Nothing partial stored or cached.
        self.assertEqual(self.pods(), [])
        self.assertEqual(self.sql("SELECT count(*) FROM sandbox"), "0")

    def test_sandbox_already_exists(self):
        pod = self.run_pod(attempt=2)
        e = self.assertCode(grpc.StatusCode.ALREADY_EXISTS, self.rs.RunPodSandbox,
                            pb.RunPodSandboxRequest(config=pod_config(attempt=2)))
        self.assertIn(pod, e.details())
        self.assertEqual(len(self.pods()), 1)
        other = self.run_pod(attempt=3)
        self.assertNotEqual(other, pod)

    def test_not_found_and_prefixes(self):
        unknown = "ab" * 32
        self.assertCode(grpc.StatusCode.NOT_FOUND, self.rs.PodSandboxStatus,
                        pb.PodSandboxStatusRequest(pod_sandbox_id=unknown), needle=unknown)
        self.assertCode(grpc.StatusCode.NOT_FOUND, self.rs.ContainerStatus,
                        pb.ContainerStatusRequest(container_id=unknown), needle=unknown)
        self.assertCode(grpc.StatusCode.NOT_FOUND, self.rs.StartContainer,
                        pb.StartContainerRequest(container_id=unknown))
        self.assertCode(grpc.StatusCode.NOT_FOUND, self.rs.CreateContainer,
                        pb.CreateContainerRequest(pod_sandbox_id=unknown, config=ctr_config()))
        self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.rs.PodSandboxStatus,
                        pb.PodSandboxStatusRequest(pod_sandbox_id=""),
                        needle="pod_sandbox_id")
        for fn, req in ((self.rs.StopPodSandbox, pb.StopPodSandboxRequest(pod_sandbox_id=unknown)),
                        (self.rs.RemovePodSandbox,
                         pb.RemovePodSandboxRequest(pod_sandbox_id=unknown)),
                        (self.rs.StopContainer, pb.StopContainerRequest(container_id=unknown)),
                        (self.rs.RemoveContainer,
                         pb.RemoveContainerRequest(container_id=unknown))):
            fn(req, timeout=10)

        # 17 sandboxes: two share a first digit.
        ids = [self.run_pod(name="p%d" % i) for i in range(17)]
        by_digit = {}
        for i in ids:
            by_digit.setdefault(i[0], []).append(i)
        shared = next(d for d, l in by_digit.items() if len(l) > 1)
        self.assertCode(grpc.StatusCode.FAILED_PRECONDITION, self.rs.PodSandboxStatus,
                        pb.PodSandboxStatusRequest(pod_sandbox_id=shared), needle="ambiguous")
        self.assertCode(grpc.StatusCode.FAILED_PRECONDITION, self.rs.StopPodSandbox,
                        pb.StopPodSandboxRequest(pod_sandbox_id=shared))
        target = by_digit[shared][0]
        self.assertEqual(self.pod_status(target[:12]).status.id, target)
        self.assertEqual([p.id for p in self.pods(id=target[:12])], [target])
        ctr = self.create(target[:12])
        self.assertEqual(self.ctr_status(ctr[:10]).status.id, ctr)
        self.rs.StartContainer(pb.StartContainerRequest(container_id=ctr[:10]), timeout=10)
        self.rs.StopContainer(pb.StopContainerRequest(container_id=ctr[:10], timeout=1),
                              timeout=10)
        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=ctr[:10]), timeout=10)
        self.assertEqual(self.ctrs(), [])
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=target[:12]), timeout=10)
        self.assertEqual(self.pod_status(target).status.state, NOTREADY)
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=target[:12]),
                                 timeout=10)
        self.assertEqual(len(self.pods()), 16)

    def test_container_lifecycle(self):
        pod = self.run_pod(log_directory=LOGS + "/ns_web_u")
        labels = {"io.kubernetes.container.name": "app", "ünïcode": "✓", "e": ""}
        annotations = {"io.kubernetes.container.restartCount": "2", "x": ""}
        before = time.time_ns()
        ctr = self.create(pod, attempt=2, image="busybox", labels=labels,
                          annotations=annotations, log_path="app/2.log")
        self.assertEqual(self.sql("SELECT count(*) FROM container WHERE id = '%s'" % ctr), "1")

        st = self.ctr_status(ctr).status
        self.assertEqual(st.id, ctr)
        self.assertEqual((st.metadata.name, st.metadata.attempt), ("app", 2))
        self.assertEqual(st.state, pb.CONTAINER_CREATED)
        self.assertGreaterEqual(st.created_at, before)
        self.assertEqual(st.image.image, "busybox")
        self.assertEqual(st.image_ref, "busybox")
        self.assertEqual(st.image_id, "busybox")
        self.assertEqual(st.log_path, LOGS + "/ns_web_u/app/2.log")
        self.assertEqual(dict(st.labels), labels)
        self.assertEqual(dict(st.annotations), annotations)
        c = self.ctrs()
        self.assertEqual([x.id for x in c], [ctr])
        self.assertEqual(c[0].pod_sandbox_id, pod)
        self.assertEqual(c[0].image.image, "busybox")
        self.assertEqual(dict(c[0].labels), labels)
        self.assertEqual(dict(c[0].annotations), annotations)

        # Wanted running, reported created until rkt runs it (which the stub never does).
        self.rs.StartContainer(pb.StartContainerRequest(container_id=ctr), timeout=10)
        st = self.ctr_status(ctr, verbose=True)
        self.assertEqual(st.status.state, pb.CONTAINER_CREATED)
        info = json.loads(st.info["info"])
        self.assertEqual(info["desired"], "running")
        self.assertEqual(info["sandboxId"], pod)
        self.assertTrue(info["appName"])
        self.rs.StartContainer(pb.StartContainerRequest(container_id=ctr), timeout=10)

        t0 = time.time_ns()
        self.rs.StopContainer(pb.StopContainerRequest(container_id=ctr, timeout=30), timeout=10)
        info = json.loads(self.ctr_status(ctr, verbose=True).info["info"])
        self.assertEqual(info["desired"], "stopped")
        self.assertGreaterEqual(info["stopDeadline"], t0 + 30 * 10**9)
        self.rs.StopContainer(pb.StopContainerRequest(container_id=ctr, timeout=30), timeout=10)
        self.assertCode(grpc.StatusCode.FAILED_PRECONDITION, self.rs.StartContainer,
                        pb.StartContainerRequest(container_id=ctr), needle="stopped")

        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=ctr), timeout=10)
        self.assertCode(grpc.StatusCode.NOT_FOUND, self.rs.ContainerStatus,
                        pb.ContainerStatusRequest(container_id=ctr))
        self.assertEqual(self.ctrs(), [])
        self.assertEqual(self.sql("SELECT count(*) FROM container"), "0")
        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=ctr), timeout=10)
        self.rs.StopContainer(pb.StopContainerRequest(container_id=ctr), timeout=10)
        self.assertEqual(len(self.pods()), 1)

    def test_container_invalid(self):
        pod = self.run_pod()
        for cfg, needle in ((ctr_config(name=""), "config.metadata.name"),
                            (ctr_config(image="-x"), "config.image.image"),
                            (ctr_config(log_path="../x.log"), "config.log_path"),
                            # Once stored as "nul", silently.
                            (ctr_config(name="nul\0x"), "'config.metadata.name' holds a NUL"),
                            (ctr_config(labels={"k\0": "v"}), "'config.labels.key' holds a NUL"),
                            (pb.ContainerConfig(), "config.metadata")):
            self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.rs.CreateContainer,
                            pb.CreateContainerRequest(pod_sandbox_id=pod, config=cfg),
                            needle=needle)
        self.assertEqual(self.ctrs(), [])
        self.assertEqual(self.sql("SELECT count(*) FROM container"), "0")
        self.create(pod, name="a", attempt=1)
        self.assertCode(grpc.StatusCode.ALREADY_EXISTS, self.rs.CreateContainer,
                        pb.CreateContainerRequest(pod_sandbox_id=pod,
                                                  config=ctr_config(name="a", attempt=1)))
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod), timeout=10)
        self.assertCode(grpc.StatusCode.FAILED_PRECONDITION, self.rs.CreateContainer,
                        pb.CreateContainerRequest(pod_sandbox_id=pod,
                                                  config=ctr_config(name="b")),
                        needle="not ready")
        self.assertEqual(len(self.ctrs()), 1)

    def test_filters(self):
        a = self.run_pod(name="a", uid="ua", labels={"io.kubernetes.pod.uid": "ua", "t": "w"})
        b = self.run_pod(name="b", uid="ub", labels={"io.kubernetes.pod.uid": "ub", "t": "w"})
        c = self.run_pod(name="c", uid="uc", labels={"io.kubernetes.pod.uid": "uc", "t": ""})
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=b), timeout=10)
        self.assertEqual([p.id for p in self.pods()], [a, b, c])
        self.assertEqual([p.id for p in self.pods(id=c)], [c])
        self.assertEqual([p.id for p in self.pods(id=b[:20])], [b])
        self.assertEqual([p.id for p in self.pods(state=pb.PodSandboxStateValue(
            state=NOTREADY))], [b])
        self.assertEqual([p.id for p in self.pods(state=pb.PodSandboxStateValue(
            state=READY))], [a, c])
        self.assertEqual([p.id for p in self.pods(label_selector={
            "io.kubernetes.pod.uid": "ub"})], [b])
        self.assertEqual([p.id for p in self.pods(label_selector={"t": "w"})], [a, b])
        self.assertEqual([p.id for p in self.pods(label_selector={"t": ""})], [c])
        self.assertEqual([p.id for p in self.pods(label_selector={"t": "w"},
                                                  state=pb.PodSandboxStateValue(
                                                      state=READY))], [a])
        self.assertEqual(self.pods(label_selector={"nope": "x"}), [])

        a1 = self.create(a, name="x", labels={"io.kubernetes.container.name": "x"})
        a2 = self.create(a, name="y", labels={"io.kubernetes.container.name": "y"})
        c1 = self.create(c, name="x", labels={"io.kubernetes.container.name": "x"})
        self.rs.StartContainer(pb.StartContainerRequest(container_id=a2), timeout=10)
        self.assertEqual([x.id for x in self.ctrs()], [a1, a2, c1])
        self.assertEqual([x.id for x in self.ctrs(pod_sandbox_id=a)], [a1, a2])
        self.assertEqual([x.id for x in self.ctrs(pod_sandbox_id=c[:16])], [c1])
        self.assertEqual([x.id for x in self.ctrs(id=a2[:16])], [a2])
        self.assertEqual([x.id for x in self.ctrs(id=a2, pod_sandbox_id=c)], [])
        self.assertEqual([x.id for x in self.ctrs(label_selector={
            "io.kubernetes.container.name": "x"})], [a1, c1])
        self.assertEqual([x.id for x in self.ctrs(label_selector={
            "io.kubernetes.container.name": "x"}, pod_sandbox_id=c)], [c1])
        # None runs here: all are created, whatever was asked.
        self.assertEqual(len(self.ctrs(state=pb.ContainerStateValue(
            state=pb.CONTAINER_CREATED))), 3)
        self.assertEqual(self.ctrs(state=pb.ContainerStateValue(
            state=pb.CONTAINER_RUNNING)), [])

        # A removed sandbox takes its containers along.
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=a), timeout=10)
        self.assertEqual([x.id for x in self.ctrs()], [c1])
        self.assertEqual(self.ctrs(pod_sandbox_id=a), [])
        self.assertEqual(self.sql("SELECT count(*) FROM container"), "1")

    def snapshot(self):
        """What the API shows about every object that a restart must keep. Not the ready
        sandboxes' state: with the stub rkt, the reconciler fails their creation for good
        after a few seconds of retries."""
        pods = {}
        for p in self.pods():
            st = self.pod_status(p.id, verbose=True)
            info = json.loads(st.info["info"])
            pods[p.id] = (p.metadata.SerializeToString(), p.created_at,
                          dict(p.labels), dict(p.annotations), dict(st.status.labels),
                          dict(st.status.annotations), info["desired"])
        ctrs = {}
        for c in self.ctrs():
            st = self.ctr_status(c.id, verbose=True)
            info = json.loads(st.info["info"])
            ctrs[c.id] = (c.pod_sandbox_id, c.metadata.SerializeToString(), c.image.image,
                          c.created_at, dict(c.labels), dict(c.annotations),
                          dict(st.status.labels), dict(st.status.annotations),
                          st.status.log_path, info["desired"], info["stopDeadline"])
        return pods, ctrs

    def populate(self):
        pods = [self.run_pod(name="p%d" % i, labels=dict(LABELS, i=str(i)))
                for i in range(3)]
        ctrs = [self.create(pods[i % 2], name="c%d" % i,
                            labels={"io.kubernetes.container.name": "c%d" % i, "ü": "✓"},
                            annotations=dict(ANNOTATIONS, n=str(i)))
                for i in range(4)]
        self.rs.StartContainer(pb.StartContainerRequest(container_id=ctrs[0]), timeout=10)
        self.rs.StopContainer(pb.StopContainerRequest(container_id=ctrs[1], timeout=60),
                              timeout=10)
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pods[2]), timeout=10)
        return pods, ctrs

    def check_restart(self, sig):
        pods, ctrs = self.populate()
        before = self.snapshot()
        self.assertEqual(len(before[0]), 3)
        self.assertEqual(len(before[1]), 4)
        self.restart(sig)
        after = self.snapshot()
        self.assertEqual(after, before)
        self.assertEqual(self.pod_status(pods[2]).status.state, NOTREADY)
        # The restarted daemon goes on where the first stopped.
        self.assertCode(grpc.StatusCode.ALREADY_EXISTS, self.rs.RunPodSandbox,
                        pb.RunPodSandboxRequest(config=pod_config(name="p0",
                                                                  labels={"i": "0"})))
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pods[0][:8]),
                                 timeout=10)
        self.assertEqual(len(self.pods()), 2)
        self.assertEqual(len(self.ctrs()), 2)

    def test_restart_clean(self):
        self.check_restart(signal.SIGTERM)

    def test_restart_after_kill(self):
        """A reply means committed: a kill -9 right after loses nothing."""
        self.check_restart(signal.SIGKILL)

    def test_update_runtime_config(self):
        self.rs.UpdateRuntimeConfig(pb.UpdateRuntimeConfigRequest(
            runtime_config=pb.RuntimeConfig(network_config=pb.NetworkConfig(
                pod_cidr="10.244.0.0/24"))), timeout=10)
        self.rs.UpdateRuntimeConfig(pb.UpdateRuntimeConfigRequest(), timeout=10)
        self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.rs.UpdateRuntimeConfig,
                        pb.UpdateRuntimeConfigRequest(runtime_config=pb.RuntimeConfig(
                            network_config=pb.NetworkConfig(pod_cidr="1" * 1000))),
                        needle="pod_cidr")
        self.assertIn("10.244.0.0/24", self.d.log())

    def test_many_containers(self):
        """A node-sized list: every container, each with its own labels."""
        pods = [self.run_pod(name="p%d" % i) for i in range(4)]
        ids = [self.create(pods[i % 4], name="c%d" % i) for i in range(200)]
        got = self.ctrs()
        self.assertEqual([c.id for c in got], ids)
        for i, c in enumerate(got):
            self.assertEqual(c.labels["io.kubernetes.container.name"], "c%d" % i)
        self.assertEqual(len(self.ctrs(pod_sandbox_id=pods[1])), 50)


if __name__ == "__main__":
    unittest.main()
