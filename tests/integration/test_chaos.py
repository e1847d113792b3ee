"""Chaos test: random CRI churn while the daemon is SIGKILLed at random moments and
at every forced crash point (RKL_CRASH_AT), restarted on the same state, and checked.

The checks do not trust the daemon's bookkeeping. A model of every call the daemon
ACKNOWLEDGED (returned OK) is kept on the client side; a call whose connection died is
"unknown" and is resolved after the restart by repeating it, as kubelet would (Run and
Create answer ALREADY_EXISTS if the first one was committed; Stop, Remove and Start are
idempotent). After each restart, the invariants are checked against that model and against
the real world: rkt's pod directories and their locks, the private systemd's units, and
the live processes, found by a per-test unique sleep argument.

Soak: RKL_CHAOS_CYCLES=N (default 50), RKL_CHAOS_SEED=S (default: random, printed),
RKL_CHAOS_REPORT=FILE (a JSON summary), RKL_CHAOS_THREADS=N (client threads churning at
once during the random-kill cycles, default 1; each call locks its sandbox in the model, so
that the model's order is the daemon's). With more than one thread a run is not replayable
from its seed. A failure message names the seed and the cycle.
"""
import faulthandler
import fcntl
import itertools
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

IMAGES = ["docker.io/library/busybox:latest", "docker.io/library/busybox:1.36"]
CRASH_POINTS = ["api-committed", "unit-named", "unit-started", "uuid-unrecorded",
                "after-app-add", "after-app-start", "after-app-stop", "after-app-rm",
                "after-pod-stop", "after-pod-rm"]
# Which calls lead the daemon to each point soonest.
POINT_OPS = {
    "api-committed": None,
    "unit-named": ["run"], "unit-started": ["run"], "uuid-unrecorded": ["run"],
    "after-app-add": ["create"], "after-app-start": ["create", "start"],
    "after-app-stop": ["start", "stop_ctr"], "after-app-rm": ["stop_ctr", "rm_ctr"],
    "after-pod-stop": ["stop_pod"], "after-pod-rm": ["stop_pod", "rm_pod"],
}
# Not an answer from the daemon: the call may or may not have happened.
UNKNOWN_CODES = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                 grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN}
# What the daemon writes as it dies at its forced crash point (src/base/crash.c).
CRASH_LINE = "rktlet: crashing at a forced crash point (RKL_CRASH_AT)"
MAX_READY = 3
MAX_CTRS = 3
CONVERGE_TIMEOUT = 90


class Sandbox:
    def __init__(self, sid, name, cfg):
        self.id, self.name, self.cfg = sid, name, cfg
        # ready | dead (its pod killed or stopped from outside: NOTREADY until stopped) |
        # stopped | removed
        self.state = "ready"
        self.uuid = None      # the rkt pod first seen running for it: must never change


class Container:
    def __init__(self, cid, sid, name, cfg, kind, arg):
        self.id, self.sid, self.name, self.cfg, self.kind, self.arg = cid, sid, name, cfg, kind, arg
        self.state = "created"  # created | started | stopped | removed
        self.pid = None         # first seen running: must never change (no second start)
        self.started_at = None


class Violation(AssertionError):
    pass


class World:
    """What the machine really looks like: pod dirs, units, processes."""

    def __init__(self, env, token):
        self.env = env
        self.token = token
        self.run_dir = os.path.join(env.rkt_dir, "pods", "run")
        self.xdg = os.path.join(env.dir, "systemd", "xdg")

    def pods(self):
        """[(uuid, sandbox id mark, running)] for every pod in pods/run."""
        out = []
        try:
            names = os.listdir(self.run_dir)
        except FileNotFoundError:
            return out
        for uuid in names:
            d = os.path.join(self.run_dir, uuid)
            try:
                with open(os.path.join(d, "pod")) as f:
                    mark = (json.load(f).get("userAnnotations") or {}).get(
                        "rktlet.io/sandbox-id")
            except (OSError, ValueError):
                continue  # moving or half written: look again next time
            try:
                fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                running = False
            except BlockingIOError:
                running = True
            finally:
                os.close(fd)
            out.append((uuid, mark, running))
        return out

    def units(self):
        """{unit: active state} of rktlet-* units."""
        r = subprocess.run(["systemctl", "--user", "list-units", "rktlet-*", "--all",
                            "--no-legend", "--plain"], capture_output=True, text=True,
                           env=dict(os.environ, XDG_RUNTIME_DIR=self.xdg), timeout=30)
        units = {}
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) >= 3 and f[0].startswith("rktlet-"):
                units[f[0]] = f[2]
        return units

    def procs(self):
        """{sleep argument: [pids]} of this test's app processes."""
        found = {}
        for pid, argv in harness.processes():
            if len(argv) >= 2 and argv[1].decode(errors="replace").startswith(self.token):
                # A zombie has an empty cmdline; a process in its last breath still counts.
                found.setdefault(argv[1].decode(), []).append(pid)
        return found


class Chaos:
    """The churn, the kills and the checks. Subclasses run it on another backend: make_env(),
    the World class and start_kw are all that differ."""
    world_class = World
    start_kw = {}
    crash_points = CRASH_POINTS
    point_ops = POINT_OPS

    def __init__(self, test, seed):
        self.test = test
        self.rng = random.Random(seed)
        self.seed = seed
        self.env = self.make_env(test)
        self.token = "7%06d" % self.rng.randrange(10**6)
        self.world = self.world_class(self.env, self.token)
        self.sandboxes = {}
        self.containers = {}
        self.pending = []  # unknown-outcome calls to resolve after the restart
        self.serials = itertools.count(1)  # next() is atomic: threads share it
        self.threads = int(os.environ.get("RKL_CHAOS_THREADS") or 1)
        self.lock = threading.Lock()      # the model, when threads churn
        self.busy = set()                 # sandboxes with a call in flight
        self.ch = None
        self.rs = None
        self.stats = {"cycles": 0, "kills": 0, "random_kills": 0, "forced": {},
                      "forced_missed": {}, "calls_ok": 0, "calls_unknown": 0,
                      "calls_rejected": 0, "checks": 0, "invariants": 0,
                      "failed_sandboxes": 0, "converge_s_max": 0.0}
        self.cycle = 0

    def make_env(self, test):
        env = harness.SimEnv(test)
        for image in IMAGES:
            env.fetch("docker://" + image)
        return env

    # ---- The daemon ----

    def start(self, crash_at=None):
        d = self.env.daemon
        d.env.pop("RKL_CRASH_AT", None)
        if crash_at:
            d.env["RKL_CRASH_AT"] = crash_at
        self.prev_log_start = getattr(self, "log_start", 0)
        self.log_start = len(d.log())
        d.start(timeout=60, **self.start_kw)
        if self.ch:
            self.ch.close()
        self.ch = d.channel()
        self.rs = pbg.RuntimeServiceStub(self.ch)

    def kill(self):
        d = self.env.daemon
        if d.proc and d.proc.poll() is None:
            d.send_signal(signal.SIGKILL)
        if d.proc:
            d.proc.wait(30)
        self.stats["kills"] += 1

    def died_at_crash_point(self):
        """The daemon exited by its forced crash point (RKL_CRASH_AT) since the last start."""
        p = self.env.daemon.proc
        return (p is not None and p.poll() == -signal.SIGKILL and
                CRASH_LINE in self.env.daemon.log()[self.log_start:])

    def alive(self):
        p = self.env.daemon.proc
        return p is not None and p.poll() is None

    # ---- Calls ----

    def call(self, method, req, timeout=10):
        """('ok', resp) | ('unknown', None) | ('rejected', RpcError)."""
        try:
            resp = getattr(self.rs, method)(req, timeout=timeout)
        except grpc.RpcError as e:
            if e.code() in UNKNOWN_CODES:
                self.stats["calls_unknown"] += 1
                return "unknown", e
            self.stats["calls_rejected"] += 1
            return "rejected", e
        self.stats["calls_ok"] += 1
        return "ok", resp

    def fail(self, msg):
        log = self.env.daemon.log()
        ids = set(re.findall(r"\b[0-9a-f]{12}\b", msg))
        about = [line[:300] for line in log.splitlines()
                 if any(i in line for i in ids) or "crash" in line or "serving" in line]
        raise Violation("seed %d, cycle %d: %s\n--- the daemon on these objects ---\n%s\n"
                        "--- daemon log tail ---\n%s"
                        % (self.seed, self.cycle, msg, "\n".join(about[-150:]), log[-4000:]))

    def check_rejection(self, what, obj, e):
        """An acknowledged object that the daemon no longer knows is lost."""
        if e.code() == grpc.StatusCode.NOT_FOUND and obj.state != "removed":
            self.fail("%s %s: NOT_FOUND for an acknowledged object: %s" % (
                what, obj.id[:12], e.details()))

    def live(self, kind=None):
        # Copies (list() of a dict is atomic): other threads may add to it meanwhile.
        return [s for s in list(self.sandboxes.values()) if s.state != "removed" and
                (kind is None or s.state == kind)]

    def ctrs_of(self, sid, states=None):
        return [c for c in list(self.containers.values())
                if c.sid == sid and c.state != "removed" and
                (states is None or c.state in states)]

    def pod_config(self, name):
        serial = next(self.serials)
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="chaos",
                                           attempt=0),
            hostname=name, log_directory=harness.LOG_ROOT + "/chaos_" + name,
            labels={"app": name, "serial": str(serial)},
            annotations={"chaos/seed": str(self.seed), "chaos/name": name})

    def op_run(self):
        name = "p%d" % next(self.serials)
        cfg = self.pod_config(name)
        st, r = self.call("RunPodSandbox", pb.RunPodSandboxRequest(config=cfg))
        if st == "ok":
            self.sandboxes[r.pod_sandbox_id] = Sandbox(r.pod_sandbox_id, name, cfg)
        elif st == "unknown":
            self.pending.append(("run", name, cfg))

    def op_stop_pod(self, s):
        st, r = self.call("StopPodSandbox", pb.StopPodSandboxRequest(pod_sandbox_id=s.id))
        if st == "ok":
            self.pod_stopped(s)
        elif st == "unknown":
            self.pending.append(("stop_pod", s))
        else:
            self.check_rejection("StopPodSandbox", s, r)

    def pod_stopped(self, s):
        if s.state in ("ready", "dead"):
            s.state = "stopped"
        for c in self.ctrs_of(s.id, ("created", "started")):
            c.state = "stopped"

    def op_rm_pod(self, s):
        st, r = self.call("RemovePodSandbox", pb.RemovePodSandboxRequest(pod_sandbox_id=s.id))
        if st == "ok":
            self.pod_removed(s)
        elif st == "unknown":
            self.pending.append(("rm_pod", s))
        else:
            self.check_rejection("RemovePodSandbox", s, r)

    def pod_removed(self, s):
        s.state = "removed"
        for c in self.ctrs_of(s.id):
            c.state = "removed"

    def ctr_config(self, name, kind, arg):
        image = self.rng.choice(IMAGES)
        command = (["/bin/sleep", arg] if kind == "long"
                   else ["/bin/sh", "-c", "exit 3", arg])
        return pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=0),
            image=pb.ImageSpec(image=image), command=command,
            labels={"container": name}, annotations={"chaos/arg": arg},
            log_path=name + "/0.log")

    def op_create(self, s):
        serial = next(self.serials)
        name = "c%d" % serial
        kind = "long" if self.rng.random() < 0.85 else "short"
        arg = "%s%04d" % (self.token, serial % 10000)
        cfg = self.ctr_config(name, kind, arg)
        st, r = self.call("CreateContainer", pb.CreateContainerRequest(
            pod_sandbox_id=s.id, config=cfg, sandbox_config=s.cfg))
        if st == "ok":
            self.containers[r.container_id] = Container(r.container_id, s.id, name, cfg, kind,
                                                        arg)
        elif st == "unknown":
            self.pending.append(("create", s, name, cfg, kind, arg))
        else:
            self.check_rejection("CreateContainer in", s, r)

    def op_start(self, c):
        st, r = self.call("StartContainer", pb.StartContainerRequest(container_id=c.id))
        if st == "ok":
            c.state = "started"
        elif st == "unknown":
            self.pending.append(("start", c))
        else:
            self.check_rejection("StartContainer", c, r)

    def op_stop_ctr(self, c):
        st, r = self.call("StopContainer", pb.StopContainerRequest(
            container_id=c.id, timeout=self.rng.choice([0, 1, 2])), timeout=20)
        # A repeated stop may come after a removal acknowledged meanwhile (of the container
        # or its sandbox): stopping what is gone succeeds, and it stays gone.
        if st == "ok" and c.state != "removed":
            c.state = "stopped"
        elif st == "unknown":
            self.pending.append(("stop_ctr", c))

    def op_rm_ctr(self, c):
        st, r = self.call("RemoveContainer", pb.RemoveContainerRequest(container_id=c.id))
        if st == "ok":
            c.state = "removed"
        elif st == "unknown":
            self.pending.append(("rm_ctr", c))

    def choices(self):
        """[(op name, function, weight, sandbox ID or None)] of what makes sense now, on
        sandboxes no other thread has a call in flight for."""
        ready = [s for s in self.live("ready") if s.id not in self.busy]
        out = []
        if len(self.live("ready")) < MAX_READY * self.threads:
            out.append(("run", self.op_run, 3, None))
        for s in ready:
            out.append(("stop_pod", lambda s=s: self.op_stop_pod(s), 1, s.id))
            if len(self.ctrs_of(s.id)) < MAX_CTRS:
                out.append(("create", lambda s=s: self.op_create(s), 3, s.id))
        for s in self.live("stopped"):
            if s.id not in self.busy:
                out.append(("rm_pod", lambda s=s: self.op_rm_pod(s), 2, s.id))
        for s in self.live("dead"):  # as kubelet does with a sandbox that died
            if s.id not in self.busy:
                out.append(("stop_pod", lambda s=s: self.op_stop_pod(s), 2, s.id))
                out.append(("rm_pod", lambda s=s: self.op_rm_pod(s), 1, s.id))
        for s in ready:
            if self.rng.random() < 0.1:
                out.append(("rm_pod", lambda s=s: self.op_rm_pod(s), 1, s.id))  # no stop first
        for c in list(self.containers.values()):
            if self.sandboxes[c.sid].state != "ready" or c.sid in self.busy:
                continue
            if c.state == "created":
                out.append(("start", lambda c=c: self.op_start(c), 3, c.sid))
            if c.state in ("created", "started"):
                out.append(("stop_ctr", lambda c=c: self.op_stop_ctr(c), 1, c.sid))
            if c.state in ("stopped",) or (c.state == "started" and c.kind == "short"):
                out.append(("rm_ctr", lambda c=c: self.op_rm_ctr(c), 2, c.sid))
        return out

    def random_op(self, prefer=None):
        with self.lock:
            ops = self.choices()
            if prefer:
                preferred = [o for o in ops if o[0] in prefer]
                if preferred and self.rng.random() < 0.8:
                    ops = preferred
            if not ops:
                return None
            total = sum(o[2] for o in ops)
            x = self.rng.uniform(0, total)
            op = ops[-1]
            for o in ops:
                x -= o[2]
                if x <= 0:
                    op = o
                    break
            if op[3]:
                self.busy.add(op[3])
        try:
            op[1]()
        finally:
            if op[3]:
                with self.lock:
                    self.busy.discard(op[3])
        return op[0]

    # ---- Unknown outcomes, resolved as kubelet would: by asking again ----

    def resolve(self):
        pending, self.pending = self.pending, []
        for p in pending:
            kind = p[0]
            for _ in range(3):
                if kind == "run":
                    _, name, cfg = p
                    st, r = self.call("RunPodSandbox", pb.RunPodSandboxRequest(config=cfg))
                    if st == "ok":
                        self.sandboxes[r.pod_sandbox_id] = Sandbox(r.pod_sandbox_id, name, cfg)
                    elif st == "rejected" and r.code() == grpc.StatusCode.ALREADY_EXISTS:
                        m = re.search(r"([0-9a-f]{64})", r.details())
                        if not m:
                            self.fail("ALREADY_EXISTS names no holder: " + r.details())
                        self.sandboxes[m.group(1)] = Sandbox(m.group(1), name, cfg)
                    elif st == "rejected":
                        self.fail("repeated RunPodSandbox: %s" % r)
                elif kind == "create":
                    _, s, name, cfg, ckind, arg = p
                    if s.state != "ready":
                        break
                    st, r = self.call("CreateContainer", pb.CreateContainerRequest(
                        pod_sandbox_id=s.id, config=cfg, sandbox_config=s.cfg))
                    if st == "ok":
                        self.containers[r.container_id] = Container(
                            r.container_id, s.id, name, cfg, ckind, arg)
                    elif st == "rejected" and r.code() == grpc.StatusCode.ALREADY_EXISTS:
                        lst = self.rs.ListContainers(pb.ListContainersRequest(
                            filter=pb.ContainerFilter(pod_sandbox_id=s.id)), timeout=10)
                        ids = [c.id for c in lst.containers if c.metadata.name == name]
                        if len(ids) != 1:
                            self.fail("container %s of a repeated create: %r" % (name, ids))
                        self.containers[ids[0]] = Container(ids[0], s.id, name, cfg, ckind, arg)
                    elif st == "rejected":
                        self.check_rejection("CreateContainer in", s, r)
                elif kind == "start":
                    c = p[1]
                    if c.state != "created":
                        break
                    st, r = self.call("StartContainer", pb.StartContainerRequest(
                        container_id=c.id))
                    if st == "ok":
                        c.state = "started"
                    elif st == "rejected":
                        self.check_rejection("StartContainer", c, r)
                        # Rejected as stopped or exited: the first start did happen.
                        c.state = "started"
                else:
                    fn = {"stop_pod": self.op_stop_pod, "rm_pod": self.op_rm_pod,
                          "stop_ctr": self.op_stop_ctr, "rm_ctr": self.op_rm_ctr}[kind]
                    before = len(self.pending)
                    fn(p[1])
                    if len(self.pending) > before:
                        self.pending.pop()
                        st = "unknown"
                    else:
                        st = "ok"
                if st != "unknown":
                    break
                time.sleep(0.5)
            else:
                self.fail("the daemon does not answer: %r" % (p,))

    # ---- Invariants ----

    def check_store(self):
        """Right after a restart: nothing acknowledged is lost, nothing removed is back."""
        listed = {p.id: p for p in self.rs.ListPodSandbox(pb.ListPodSandboxRequest(),
                                                          timeout=10).items}
        ctrs = {c.id: c for c in self.rs.ListContainers(pb.ListContainersRequest(),
                                                        timeout=10).containers}
        n = 0
        for s in self.sandboxes.values():
            n += 1
            if s.state == "removed":
                if s.id in listed:
                    self.fail("removed sandbox %s is listed again" % s.id[:12])
                continue
            p = listed.get(s.id)
            if p is None:
                self.fail("acknowledged sandbox %s (%s) is lost" % (s.id[:12], s.state))
            if (dict(p.labels) != dict(s.cfg.labels) or
                    dict(p.annotations) != dict(s.cfg.annotations) or
                    p.metadata.name != s.name):
                self.fail("sandbox %s: labels/annotations/metadata changed: %s" % (s.id[:12], p))
            if s.state in ("stopped", "dead") and p.state != pb.SANDBOX_NOTREADY:
                self.fail("%s sandbox %s is READY" % (s.state, s.id[:12]))
        for c in self.containers.values():
            n += 1
            if c.state == "removed":
                if c.id in ctrs:
                    self.fail("removed container %s is listed again" % c.id[:12])
                continue
            lc = ctrs.get(c.id)
            if lc is None:
                self.fail("acknowledged container %s (%s) is lost" % (c.id[:12], c.state))
            if (dict(lc.labels) != dict(c.cfg.labels) or
                    dict(lc.annotations) != dict(c.cfg.annotations) or
                    lc.metadata.name != c.name or lc.pod_sandbox_id != c.sid):
                self.fail("container %s: labels/annotations/metadata changed: %s" % (
                    c.id[:12], lc))
        for sid in listed:
            if sid not in self.sandboxes:
                self.fail("sandbox %s was never acknowledged (nor asked again)" % sid[:12])
        for cid in ctrs:
            if cid not in self.containers:
                self.fail("container %s was never acknowledged (nor asked again)" % cid[:12])
        self.stats["invariants"] += n

    def pod_info(self, sid):
        r = self.rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid,
                                                                verbose=True), timeout=10)
        return r.status, json.loads(r.info.get("info", "{}"))

    def ctr_info(self, cid):
        r = self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid, verbose=True),
                                    timeout=10)
        return r.status, json.loads(r.info.get("info", "{}"))

    def world_violations(self):
        """What does not match yet. Empty once converged."""
        v = []
        pods = self.world.pods()
        units = self.world.units()
        procs = self.world.procs()
        running_by_mark = {}
        dirs_by_mark = {}
        for uuid, mark, running in pods:
            dirs_by_mark.setdefault(mark, []).append(uuid)
            if running:
                running_by_mark.setdefault(mark, []).append(uuid)
        for mark, uuids in running_by_mark.items():
            if len(uuids) > 1:
                v.append("duplicate: %d running pods for sandbox %s: %s" % (
                    len(uuids), (mark or "?")[:12], uuids))
            if mark not in self.sandboxes:
                v.append("orphan: running pod %s of unknown sandbox %s" % (uuids, mark))
        for mark, uuids in dirs_by_mark.items():
            if mark is not None and mark not in self.sandboxes:
                v.append("orphan: pod dir %s of unknown sandbox %s" % (uuids, mark[:12]))
        for u, state in units.items():
            sid = u[len("rktlet-"):-len(".service")]
            s = self.sandboxes.get(sid)
            if state in ("active", "activating", "reloading", "deactivating") and (
                    s is None or s.state != "ready"):
                v.append("orphan: unit %s is %s for a %s sandbox" % (
                    u, state, s.state if s else "unknown"))
        failed = set()
        for s in self.sandboxes.values():
            if s.state == "removed":
                if dirs_by_mark.get(s.id):
                    v.append("orphan: pod %s of removed sandbox %s" % (dirs_by_mark[s.id],
                                                                       s.id[:12]))
                continue
            st, info = self.pod_info(s.id)
            if s.state == "stopped":
                if running_by_mark.get(s.id):
                    v.append("stopped sandbox %s: pod still running" % s.id[:12])
                elif dirs_by_mark.get(s.id):
                    v.append("stopped sandbox %s: pod %s not removed" % (
                        s.id[:12], dirs_by_mark[s.id]))
                if st.state != pb.SANDBOX_NOTREADY:
                    v.append("stopped sandbox %s is READY" % s.id[:12])
                continue
            if s.state == "dead":
                if running_by_mark.get(s.id):
                    v.append("dead sandbox %s: pod still running" % s.id[:12])
                if st.state != pb.SANDBOX_NOTREADY or info.get("phase") != "failed":
                    v.append("dead sandbox %s: %s, phase %s" % (
                        s.id[:12], pb.PodSandboxState.Name(st.state), info.get("phase")))
                continue
            if info.get("phase") == "failed":
                failed.add(s.id)
                if st.state != pb.SANDBOX_NOTREADY:
                    v.append("failed sandbox %s is READY" % s.id[:12])
                if running_by_mark.get(s.id):
                    v.append("failed sandbox %s: pod still running" % s.id[:12])
                continue
            if st.state != pb.SANDBOX_READY:
                v.append("ready sandbox %s is NOTREADY (%s)" % (s.id[:12], info))
            running = running_by_mark.get(s.id, [])
            if len(running) != 1 or info.get("phase") != "running":
                v.append("ready sandbox %s: %d running pods, phase %s" % (
                    s.id[:12], len(running), info.get("phase")))
                continue
            if s.uuid is None:
                s.uuid = running[0]
            elif s.uuid != running[0]:
                v.append("sandbox %s: its pod changed from %s to %s"
                         % (s.id[:12], s.uuid, running[0]))
            if units.get("rktlet-%s.service" % s.id) != "active":
                v.append("ready sandbox %s: unit is %s" % (
                    s.id[:12], units.get("rktlet-%s.service" % s.id)))
        for c in self.containers.values():
            pids = procs.get(c.arg, [])
            s = self.sandboxes[c.sid]
            wanted_pod = s.state == "ready" and s.id not in failed
            if c.state == "removed" or not wanted_pod or c.state in ("created", "stopped"):
                if pids:
                    v.append("container %s (%s, sandbox %s): leftover process %s" % (
                        c.id[:12], c.state, s.state, pids))
                if c.state == "removed":
                    continue
            st, info = self.ctr_info(c.id)
            if c.state == "created" and wanted_pod and st.state != pb.CONTAINER_CREATED:
                v.append("created container %s is %d" % (c.id[:12], st.state))
            if c.state == "stopped" or not wanted_pod:
                if st.state == pb.CONTAINER_RUNNING:
                    v.append("container %s (%s, sandbox %s) is RUNNING"
                             % (c.id[:12], c.state, s.state))
                elif s.state == "dead" and c.state == "started" and (
                        st.state != pb.CONTAINER_EXITED or (c.kind == "long" and not st.reason)):
                    v.append("container %s of dead sandbox %s: state %d, reason %r" % (
                        c.id[:12], s.id[:12], st.state, st.reason))
                continue
            if c.state != "started":
                continue
            if c.kind == "short":
                if st.state != pb.CONTAINER_EXITED or st.exit_code != 3:
                    v.append("short container %s: state %d exit %d" % (c.id[:12], st.state,
                                                                       st.exit_code))
                elif c.started_at is None:
                    c.started_at = st.started_at
                elif c.started_at != st.started_at:
                    v.append("short container %s ran again" % c.id[:12])
                continue
            if st.state != pb.CONTAINER_RUNNING or len(pids) != 1:
                v.append("container %s: state %d, %d processes (exit %s, %s, error %s)" % (
                    c.id[:12], st.state, len(pids), info.get("exitCode"), st.reason,
                    info.get("lastError")))
                continue
            if info.get("pid") not in pids:
                v.append("container %s: reported pid %s, real %s" % (c.id[:12],
                                                                     info.get("pid"), pids))
            if c.pid is None:
                c.pid = pids[0]
            elif c.pid != pids[0]:
                v.append("container %s: started twice (pid %d, then %d)"
                         % (c.id[:12], c.pid, pids[0]))
        known = {c.arg for c in self.containers.values()}
        for arg, pids in procs.items():
            if arg not in known:
                v.append("orphan process %s (%s) of no acknowledged container" % (pids, arg))
        self.stats["failed_sandboxes"] = len(failed)
        return v

    def converge(self):
        t0 = time.monotonic()
        last = first = None
        while time.monotonic() - t0 < CONVERGE_TIMEOUT:
            if not self.alive():
                self.fail("the daemon died while converging")
            last = self.world_violations()
            first = first or last
            if not last:
                dt = time.monotonic() - t0
                if dt > 5:
                    self.log("slow convergence (%.1fs): %s" % (dt, first))
                    self.log_about(first)
                self.stats["converge_s_max"] = max(self.stats["converge_s_max"], round(dt, 2))
                self.stats["checks"] += 1
                return
            time.sleep(0.1)
        self.fail("not converged after %ds:\n  %s" % (CONVERGE_TIMEOUT, "\n  ".join(last)))

    def restart_and_check(self):
        self.start()
        self.resolve()
        self.check_store()
        self.converge()

    # ---- Cycles ----

    def churn(self, n, prefer=None, gap=(0.0, 0.15)):
        for _ in range(n):
            if not self.alive():
                return
            self.random_op(prefer)
            time.sleep(self.rng.uniform(*gap))

    def forced_cycle(self, point):
        hit = self.rng.choice([1, 1, 2])
        self.kill()  # a kill at a quiet moment: the restart must leave all as it is
        try:
            self.start(crash_at="%s:%d" % (point, hit))
        except RuntimeError:
            # Work left from before the kill may reach the point before the first Version
            # answers: the daemon died of it, as asked, while start() waited.
            if not self.died_at_crash_point():
                raise
        prefer = self.point_ops[point]
        deadline = time.monotonic() + 20
        while self.alive() and time.monotonic() < deadline:
            self.churn(self.rng.randint(1, 3), prefer)
            for _ in range(6):  # let the reconciler get there
                if self.alive():
                    time.sleep(0.05)
        reached = not self.alive()
        if reached:
            self.env.daemon.proc.wait(10)
            if self.env.daemon.proc.returncode != -signal.SIGKILL:
                self.fail("the daemon exited with %d, not at %s" % (
                    self.env.daemon.proc.returncode, point))
            self.stats["forced"][point] = self.stats["forced"].get(point, 0) + 1
            self.stats["kills"] += 1
        else:
            self.stats["forced_missed"][point] = self.stats["forced_missed"].get(point, 0) + 1
            self.kill()
        return reached

    def random_cycle(self):
        delay = self.rng.uniform(0.05, 1.5)
        d = self.env.daemon
        killer = threading.Timer(delay, lambda: d.proc.poll() is None and
                                 d.send_signal(signal.SIGKILL))
        killer.start()

        def churner():
            while self.alive():
                self.churn(1, gap=(0.0, 0.1))

        others = [threading.Thread(target=churner) for _ in range(self.threads - 1)]
        for t in others:
            t.start()
        try:
            churner()
        finally:
            killer.cancel()
            for t in others:
                t.join(60)
        d.proc.wait(10)
        self.stats["kills"] += 1
        self.stats["random_kills"] += 1

    def other_cycle(self):
        """A cycle without a forced crash point (ends with the daemon dead); subclasses mix
        faults of the world in."""
        self.random_cycle()

    def owes_cycles(self):
        """Whether the run still owes cycles of other_cycle() (a fault never reached)."""
        return False

    def run(self, cycles):
        try:
            return self._run(cycles)
        except Violation:
            raise
        except Exception as e:  # a call that failed outright: with the daemon's words
            p = self.env.daemon.proc
            self.fail("%s: %s (the daemon is %s)" % (
                type(e).__name__, e, "alive" if self.alive() else
                "gone, exit status %s" % (p.returncode if p else None)))

    def _run(self, cycles):
        t0 = time.monotonic()
        self.start()
        todo = list(self.crash_points)
        self.rng.shuffle(todo)
        retries = 0
        for self.cycle in range(1, cycles + 1):
            if self.cycle % 2 == 1 and (todo or self.rng.random() < 0.5):
                point = todo.pop(0) if todo else self.rng.choice(self.crash_points)
                if not self.forced_cycle(point) and point not in self.stats["forced"]:
                    todo.append(point)  # try it again later
            else:
                self.other_cycle()
            self.restart_and_check()
            self.stats["cycles"] += 1
            self.log("cycle %d ok: %d sandboxes, %d containers live" % (
                self.cycle, len(self.live()), len([c for c in self.containers.values()
                                                   if c.state != "removed"])))
        # Every point at least once, with a few extra cycles if the dice were unkind.
        while todo and retries < 20:
            retries += 1
            self.cycle += 1
            point = todo.pop(0)
            if not self.forced_cycle(point):
                todo.append(point)
            self.restart_and_check()
            self.stats["cycles"] += 1
        while self.owes_cycles() and retries < 40:
            retries += 1
            self.cycle += 1
            self.other_cycle()
            self.restart_and_check()
            self.stats["cycles"] += 1
        self.stats["wall_s"] = round(time.monotonic() - t0, 1)
        self.stats["seed"] = self.seed
        self.stats["sandboxes"] = len(self.sandboxes)
        self.stats["containers"] = len(self.containers)
        return todo

    def log_about(self, violations):
        """In verbose mode: what this daemon said about the objects in violations."""
        if not os.environ.get("RKL_CHAOS_VERBOSE"):
            return
        ids = set(re.findall(r"\b[0-9a-f]{12}\b", " ".join(violations)))
        text = self.env.daemon.log()[self.prev_log_start:]
        for line in text.splitlines():
            if any(i in line for i in ids) or "crash" in line:
                print("    " + line[:300], file=sys.stderr)

    def log(self, msg):
        if os.environ.get("RKL_CHAOS_VERBOSE"):
            print(msg, file=sys.stderr, flush=True)


def run_chaos(test, chaos_class, cycles, what):
    """One run with a printed seed, its stats printed and written to RKL_CHAOS_REPORT, and
    the checks every run ends with (test_chaos_rkt runs it too)."""
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>` shows where a run is
    seed = int(os.environ.get("RKL_CHAOS_SEED") or random.randrange(1 << 31))
    print("%s: seed %d, %d cycles" % (what, seed, cycles), file=sys.stderr, flush=True)
    chaos = chaos_class(test, seed)
    missed = chaos.run(cycles)
    print("chaos: %s" % json.dumps(chaos.stats, sort_keys=True), file=sys.stderr, flush=True)
    report = os.environ.get("RKL_CHAOS_REPORT")
    if report:
        with open(report, "w") as f:
            json.dump(chaos.stats, f, sort_keys=True, indent=1)
    test.assertEqual(missed, [], "crash points never reached")
    test.assertGreaterEqual(chaos.stats["cycles"], cycles)


class ChaosTest(unittest.TestCase):
    def test_chaos(self):
        run_chaos(self, Chaos, int(os.environ.get("RKL_CHAOS_CYCLES") or 50), "chaos")


class ResolveTest(unittest.TestCase):
    """The model's resolution of unknown outcomes, on real calls whose answers were lost."""

    def test_stale_stop_after_removal(self):
        # Seen with 8 threads (seed 20261126, cycle 101 on real rkt): RemovePodSandbox was
        # committed and its answer lost, then a StopContainer in the same sandbox found the
        # daemon gone. Repeated in that order, the removal is acknowledged first, and the
        # stop of a container that is gone succeeds (CRI): the container must stay removed,
        # not come back as "stopped" and be reported lost.
        chaos = Chaos(self, 1)
        chaos.start()
        chaos.op_run()
        s = chaos.live("ready")[0]
        chaos.op_create(s)
        c = chaos.ctrs_of(s.id)[0]
        chaos.kill()
        chaos.start(crash_at="api-committed:1")
        chaos.op_rm_pod(s)      # committed, then the daemon dies before it answers
        chaos.op_stop_ctr(c)    # the daemon is gone
        self.assertEqual([p[0] for p in chaos.pending], ["rm_pod", "stop_ctr"])
        chaos.kill()
        chaos.restart_and_check()
        self.assertEqual((s.state, c.state), ("removed", "removed"))


if __name__ == "__main__":
    unittest.main()
