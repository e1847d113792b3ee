"""GetContainerEvents through the real daemon with a real gRPC client: the events of a pod's
whole life in order, several subscribers, a reader that falls behind (dropped, without
holding up anything else), a client that goes away, the events kept for the next
subscriber, a daemon restart (the stream ends UNAVAILABLE; the relist after it has all
that was acknowledged), the simulator's faults, and the real rkt."""
import json
import os
import signal
import threading
import time
import unittest
import urllib.request

import grpc

import harness
import test_rkt

pb, pbg = harness.stubs()

IMAGE = "docker.io/library/busybox:latest"
CREATED, STARTED, STOPPED, DELETED = (pb.CONTAINER_CREATED_EVENT, pb.CONTAINER_STARTED_EVENT,
                                      pb.CONTAINER_STOPPED_EVENT, pb.CONTAINER_DELETED_EVENT)
NAMES = {CREATED: "created", STARTED: "started", STOPPED: "stopped", DELETED: "deleted"}
# What each object goes through, in this order; a step may be missing (a sandbox that never
# ran, a container never started), never repeated.
ORDER = [CREATED, STARTED, STOPPED, DELETED]


class Subscriber:
    """A GetContainerEvents stream read by a thread of its own into a list, until it ends."""

    def __init__(self, rs, read=True):
        self.call = rs.GetContainerEvents(pb.GetEventsRequest())
        # The headers come once the daemon has subscribed the stream: from then on, no
        # event is missed.
        self.call.initial_metadata()
        self.events = []
        self.error = None
        self.lock = threading.Lock()
        self.thread = None
        if read:
            self.start()

    def start(self):
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for ev in self.call:
                with self.lock:
                    self.events.append(ev)
        except grpc.RpcError as e:
            self.error = e

    def seen(self):
        with self.lock:
            return list(self.events)

    def wait(self, what, fn, timeout=60):
        """Waits until fn(events so far) is true; returns the events then."""
        harness.wait_for(what, lambda: fn(self.seen()), timeout=timeout)
        return self.seen()

    def ended(self, timeout=30):
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def cancel(self):
        self.call.cancel()
        if self.thread:
            self.thread.join(10)


def of(events, obj):
    return [e for e in events if e.container_id == obj]


def kinds(events, obj):
    return [NAMES[e.container_event_type] for e in of(events, obj)]


def check_order(test, events):
    """Every object's events follow ORDER, and the event times only grow."""
    last = {}
    for e in events:
        i = ORDER.index(e.container_event_type)
        test.assertGreater(i, last.get(e.container_id, -1),
                           "%s: %s after %s" % (e.container_id[:12], NAMES[e.container_event_type],
                                                kinds(events, e.container_id)))
        last[e.container_id] = i
        test.assertTrue(e.HasField("pod_sandbox_status"), e)
        test.assertTrue(e.pod_sandbox_status.metadata.uid, e)
    times = [e.created_at for e in events]
    test.assertEqual(times, sorted(times))


class EventsSimTest(unittest.TestCase):
    """On the rkt simulator."""

    def setUp(self):
        self.port = harness.free_port()
        self.env = harness.SimEnv(self, extra=["--metrics-address", "127.0.0.1:%d" % self.port])
        self.env.start()
        self.env.fetch("docker://" + IMAGE)
        self.connect()

    def connect(self):
        # A private subchannel: after a restart, a pooled one would still hold the old
        # daemon's connection.
        ch = grpc.insecure_channel("unix://" + self.env.daemon.socket,
                                   options=[("grpc.use_local_subchannel_pool", 1)])
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)

    def metric(self, name):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
        return None

    # ---- CRI ----

    def run_pod(self, name, annotations=None):
        self.cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="events"),
            hostname=name, log_directory=harness.LOG_ROOT + "/events_" + name,
            labels={"app": name}, annotations=annotations or {})
        return self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=self.cfg),
                                     timeout=10).pod_sandbox_id

    def create(self, sid, name, command=("/bin/sleep", "1000")):
        cfg = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                 image=pb.ImageSpec(image=IMAGE), command=list(command),
                                 log_path=name + ".log")
        return self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cfg, sandbox_config=self.cfg), timeout=10).container_id

    def ctr_state(self, cid):
        return self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid),
                                       timeout=10).status.state

    def pod_info(self, sid):
        return json.loads(self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(
            pod_sandbox_id=sid, verbose=True), timeout=10).info["info"])

    def ctr_info(self, cid):
        return json.loads(self.rs.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid, verbose=True), timeout=10).info["info"])

    def wait_ctr(self, cid, state):
        harness.wait_for("container %s in state %d" % (cid[:12], state),
                         lambda: self.ctr_state(cid) == state, timeout=60)

    # ---- Tests ----

    def test_pod_life_in_order(self):
        """Two subscribers see a pod's whole life, each object's events in order, each
        with the sandbox's status and all its containers' at that moment."""
        a = Subscriber(self.rs)
        b = Subscriber(self.rs)
        sid = self.run_pod("life")
        harness.wait_sandbox_running(self.rs, sid)
        c1 = self.create(sid, "one")
        c2 = self.create(sid, "two", command=("/bin/sh", "-c", "exit 3"))
        for c in (c1, c2):
            self.rs.StartContainer(pb.StartContainerRequest(container_id=c), timeout=10)
        self.wait_ctr(c1, pb.CONTAINER_RUNNING)
        self.wait_ctr(c2, pb.CONTAINER_EXITED)
        self.rs.StopContainer(pb.StopContainerRequest(container_id=c1, timeout=5), timeout=30)
        self.wait_ctr(c1, pb.CONTAINER_EXITED)
        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=c1), timeout=10)
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=30)
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=10)

        for s in (a, b):
            events = s.wait("the sandbox's deletion",
                            lambda ev: DELETED in [e.container_event_type for e in of(ev, sid)])
            check_order(self, events)
            self.assertEqual(kinds(events, sid), ["created", "started", "stopped", "deleted"])
            self.assertEqual(kinds(events, c1), ["created", "started", "stopped", "deleted"])
            # c2 was removed with its sandbox: its deletion comes before the sandbox's.
            self.assertEqual(kinds(events, c2), ["created", "started", "stopped", "deleted"])
            self.assertLess(events.index(of(events, c2)[-1]), events.index(of(events, sid)[-1]))

            # What each event carries is the state right after its change.
            started = of(events, sid)[1]
            self.assertEqual(started.pod_sandbox_status.id, sid)
            self.assertEqual(started.pod_sandbox_status.state, pb.SANDBOX_READY)
            self.assertTrue(started.pod_sandbox_status.network.ip)
            self.assertEqual(started.pod_sandbox_status.metadata.uid, "life-uid")
            stop2 = of(events, c2)[2]
            st = {c.id: c for c in stop2.containers_statuses}
            self.assertEqual(set(st), {c1, c2})
            self.assertEqual(st[c2].state, pb.CONTAINER_EXITED)
            self.assertEqual(st[c2].exit_code, 3)
            del1 = of(events, c1)[3]
            self.assertEqual([c.id for c in del1.containers_statuses], [c2])
            stopped = of(events, sid)[2]
            self.assertEqual(stopped.pod_sandbox_status.state, pb.SANDBOX_NOTREADY)
            gone = of(events, sid)[3]
            self.assertEqual(gone.pod_sandbox_status.id, sid)
            self.assertEqual(list(gone.containers_statuses), [])
        # Both saw the same, in the same order.
        self.assertEqual([(e.container_id, e.container_event_type) for e in a.seen()],
                         [(e.container_id, e.container_event_type) for e in b.seen()])
        self.assertEqual(self.metric("rktlet_container_event_streams"), 2)
        a.cancel()
        b.cancel()

    def test_slow_reader_dropped(self):
        """A subscriber that stops reading is dropped once its queue is full: its stream
        ends RESOURCE_EXHAUSTED, the others get every event, and List calls answer all
        along."""
        slow = Subscriber(self.rs, read=False)
        fast = Subscriber(self.rs)
        # Big events (every event carries the sandbox's annotations), so that grpc's own
        # buffers hold few of them and the daemon's queue fills.
        sid = self.run_pod("slow", annotations={"big-%d" % i: "x" * 60000 for i in range(4)})
        latencies, stop = {"idle": [], "lagging": []}, threading.Event()
        phase = ["idle"]

        def lister():
            while not stop.is_set():
                t = time.monotonic()
                self.rs.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=10)
                self.rs.ListContainers(pb.ListContainersRequest(), timeout=10)
                latencies[phase[0]].append(time.monotonic() - t)
                time.sleep(0.02)
        t = threading.Thread(target=lister)
        t.start()
        try:
            time.sleep(0.5)
            phase[0] = "lagging"
            made = []
            for i in range(2000):
                cid = self.create(sid, "c%d" % i)
                self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=10)
                made.append(cid)
                if i % 20 == 0 and self.metric("rktlet_container_event_streams_dropped_total"):
                    break
        finally:
            stop.set()
            t.join()
        self.assertEqual(self.metric("rktlet_container_event_streams_dropped_total"), 1)
        self.assertEqual(self.metric("rktlet_container_event_streams"), 1)

        # The slow one gets what grpc had buffered for it, then the error.
        got = 0
        with self.assertRaises(grpc.RpcError) as cm:
            for _ in slow.call:
                got += 1
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED,
                         cm.exception.details())
        self.assertIn("relist", cm.exception.details())
        self.assertLess(got, 2 * len(made))
        self.assertEqual(self.env.daemon.log().count("stopped reading its events"), 1)

        # The fast one got everything, in order.
        events = fast.wait("every container's deletion",
                           lambda ev: len(of(ev, made[-1])) == 2, timeout=120)
        for cid in made:
            self.assertEqual(kinds(events, cid), ["created", "deleted"])
        check_order(self, events)
        fast.cancel()
        for k, v in latencies.items():
            v.sort()
            print("List latency %s: %d calls, median %.1f ms, max %.1f ms; %d containers, "
                  "slow reader read %d events"
                  % (k, len(v), 1000 * v[len(v) // 2], 1000 * v[-1], len(made), got))

    def test_kept_for_next_subscriber(self):
        """What happened while nobody listened is told to the next subscriber."""
        sid = self.run_pod("kept")
        harness.wait_sandbox_running(self.rs, sid)
        s = Subscriber(self.rs)
        events = s.wait("the sandbox's start", lambda ev: len(of(ev, sid)) >= 2)
        self.assertEqual(kinds(events, sid)[:2], ["created", "started"])
        s.cancel()

    def restart_ends_stream(self, sig):
        s = Subscriber(self.rs)
        acked, stop = [], threading.Event()

        def writer():
            for i in range(1000):
                if stop.is_set():
                    return
                try:
                    sid = self.run_pod("w%d-%d" % (sig, i))
                    acked.append(sid)
                    acked.append(self.create(sid, "c"))
                except grpc.RpcError:
                    return
        t = threading.Thread(target=writer)
        t.start()
        harness.wait_for("some pods", lambda: len(acked) >= 10)
        rc = self.env.daemon.stop(sig)
        if sig == signal.SIGTERM:
            self.assertEqual(rc, 0, self.env.daemon.log()[-4000:])  # and, under ASan, no leak
        stop.set()
        t.join()
        self.assertTrue(s.ended())
        self.assertIsNotNone(s.error)
        self.assertEqual(s.error.code(), grpc.StatusCode.UNAVAILABLE, s.error.details())
        # Events came for what was acknowledged before the end.
        self.assertTrue(of(s.seen(), acked[0]))

        self.env.daemon.start()
        self.connect()
        harness.wait_answering(self.rs)
        listed = {p.id for p in self.rs.ListPodSandbox(pb.ListPodSandboxRequest(),
                                                       timeout=10).items}
        listed |= {c.id for c in self.rs.ListContainers(pb.ListContainersRequest(),
                                                        timeout=10).containers}
        self.assertEqual([x for x in acked if x not in listed], [])
        # The new daemon has its own events.
        u = Subscriber(self.rs)
        sid = self.run_pod("after-restart-%d" % sig)
        u.wait("the new sandbox", lambda ev: of(ev, sid))
        u.cancel()

    def test_restart_ends_stream(self):
        """A daemon stopped (SIGTERM) or killed ends the stream with UNAVAILABLE; a relist
        after the restart holds every sandbox and container acknowledged before."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with self.subTest(signal=sig):
                self.restart_ends_stream(sig)

    def test_faults_consistent(self):
        """Under the simulator's faults (rkt crashing halfway and retried, an app that
        dies, one killed, a sandbox whose start fails, a pod that dies), each object's
        events still come in order, once each, and the last statuses they carry are what
        a relist says."""
        s = Subscriber(self.rs)
        env = self.env
        env.set_faults("sandbox fail 1 simulated stage1 failure\n")
        sid = self.run_pod("faulty")
        harness.wait_for("a failed attempt", lambda: "simulated stage1 failure" in (
            self.pod_info(sid).get("lastError") or ""))
        env.set_faults("")
        harness.wait_sandbox_running(self.rs, sid)

        def app_of(cid):
            return self.ctr_info(cid)["appName"]
        crashy = self.create(sid, "crashy")
        dies = self.create(sid, "dies")
        killed = self.create(sid, "killed")
        steady = self.create(sid, "steady")
        env.set_faults("app add crash-after created\napp start crash-after started-file\n"
                       "app %s die 7 after 200\napp %s signal 9 after 200\n"
                       % (app_of(dies), app_of(killed)))
        for c in (crashy, dies, killed, steady):
            self.rs.StartContainer(pb.StartContainerRequest(container_id=c), timeout=10)
        harness.wait_for("a crashed rkt command", lambda: "killed by signal 9" in (
            self.ctr_info(crashy).get("lastError") or ""))
        env.set_faults("app %s die 7 after 200\napp %s signal 9 after 200\n"
                       % (app_of(dies), app_of(killed)))
        self.wait_ctr(crashy, pb.CONTAINER_RUNNING)
        self.wait_ctr(steady, pb.CONTAINER_RUNNING)
        self.wait_ctr(dies, pb.CONTAINER_EXITED)
        self.wait_ctr(killed, pb.CONTAINER_EXITED)
        env.set_faults("")
        # The pod dies under its containers.
        pid = self.pod_info(sid)["pid"]
        os.kill(pid, signal.SIGKILL)
        for c in (crashy, steady):
            self.wait_ctr(c, pb.CONTAINER_EXITED)

        events = s.wait("every container's stop", lambda ev: all(
            STOPPED in [e.container_event_type for e in of(ev, c)]
            for c in (crashy, dies, killed, steady)) and len(of(ev, sid)) >= 3)
        check_order(self, events)
        self.assertEqual(kinds(events, sid), ["created", "started", "stopped"])
        for c in (crashy, dies, killed, steady):
            self.assertEqual(kinds(events, c), ["created", "started", "stopped"], c)
        self.assertEqual({c.id: c.exit_code for c in of(events, dies)[-1].containers_statuses}
                         [dies], 7)
        # The last event about the pod says what a relist says now.
        last = [e for e in events if e.pod_sandbox_status.id == sid][-1]
        listed = {c.id: c.state for c in self.rs.ListContainers(
            pb.ListContainersRequest(filter=pb.ContainerFilter(pod_sandbox_id=sid)),
            timeout=10).containers}
        self.assertEqual({c.id: c.state for c in last.containers_statuses}, listed)
        self.assertEqual(last.pod_sandbox_status.state, self.rs.PodSandboxStatus(
            pb.PodSandboxStatusRequest(pod_sandbox_id=sid), timeout=10).status.state)
        s.cancel()

    def test_disconnect_frees(self):
        """A client that cancels, and one whose channel goes, lose their subscription."""
        s = Subscriber(self.rs)
        ch = grpc.insecure_channel("unix://" + self.env.daemon.socket,
                                   options=[("grpc.use_local_subchannel_pool", 1)])
        t = Subscriber(pbg.RuntimeServiceStub(ch))
        harness.wait_for("two streams", lambda: self.metric("rktlet_container_event_streams") == 2)
        s.cancel()
        ch.close()
        harness.wait_for("no stream", lambda: self.metric("rktlet_container_event_streams") == 0)
        self.assertTrue(t.ended())
        # The daemon goes on, and a new subscriber gets new events.
        u = Subscriber(self.rs)
        sid = self.run_pod("after")
        u.wait("the new sandbox", lambda ev: of(ev, sid))
        u.cancel()
        self.assertEqual(self.metric("rktlet_container_event_streams_dropped_total"), 0)


class EventsRktTest(test_rkt.RealRktBase):
    """On the real rkt."""

    def test_pod_life_in_order(self):
        """A pod's whole life on the real rkt: a container stopped, one exiting on its own,
        the sandbox stopped and removed."""
        self.pull()
        s = Subscriber(self.rs)
        sid, cfg, ip = self.run_pod("events")
        web = self.create(sid, cfg, "web", ["sleep", "3600"])
        brief = self.create(sid, cfg, "brief", ["sh", "-c", "sleep 1; exit 2"])
        for cid in (web, brief):
            self.start(cid)
        self.wait_state(web, pb.CONTAINER_RUNNING)
        self.wait_state(brief, pb.CONTAINER_EXITED)
        self.rs.StopContainer(pb.StopContainerRequest(container_id=web, timeout=2), timeout=30)
        self.wait_state(web, pb.CONTAINER_EXITED)
        self.stop_remove(sid)
        events = s.wait("the sandbox's deletion", lambda ev: DELETED in [
            e.container_event_type for e in of(ev, sid)], timeout=120)
        s.cancel()
        check_order(self, events)
        for obj in (sid, web, brief):
            self.assertEqual(kinds(events, obj), ["created", "started", "stopped", "deleted"])
        started = of(events, sid)[1]
        self.assertEqual(started.pod_sandbox_status.network.ip, ip)
        stopped = {c.id: c for c in of(events, brief)[2].containers_statuses}
        self.assertEqual(stopped[brief].exit_code, 2)
        stopped = {c.id: c for c in of(events, web)[2].containers_statuses}
        self.assertEqual(stopped[web].exit_code, 143)
        self.assert_nothing_left()


if __name__ == "__main__":
    unittest.main()
