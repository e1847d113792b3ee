"""The chaos test (test_chaos.py) on the real rkt 1.30.0 in a private systemd host: random CRI
churn while the daemon is SIGKILLed at random moments and at every forced crash point,
restarted on the same state, and checked against rkt's pod directories and locks, the
host's systemd units and the live app processes. Mixed in, the faults a node meets (FAULTS),
each with its outcome checked. Skipped when the real rkt cannot be built.

RKL_CHAOS_RKT_CYCLES=N (default 12: every crash point and every fault once, within CI's
time), RKL_CHAOS_THREADS=N (default 8 client threads), RKL_CHAOS_SEED=S,
RKL_CHAOS_REPORT=FILE as in test_chaos.py; docs/reliability.md has the long runs."""
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import unittest

import harness
import spdyclient
import test_chaos

pb, pbg = harness.stubs()

CRICTL = os.environ.get("RKL_CRICTL", "/var/cache/rktlet-test/cri-tools-1.26.1/bin/crictl")
# Faults of the world, one a cycle: the pod's nspawn or its systemd killed, its unit stopped
# from outside, its directory removed by hand, rkt killed in the middle of an app add or an
# app rm, the daemon killed while an exec runs, an app's iottymux killed, rkt's data
# directory's filesystem full, the daemon killed while a port-forward runs.
FAULTS = ["kill-nspawn", "kill-pod-systemd", "stop-unit", "rm-pod-dir", "kill-app-add",
          "kill-app-rm", "exec-then-daemon-killed", "kill-iottymux", "rkt-dir-full",
          "port-forward-then-daemon-killed"]
RKT_DIR_SIZE = "2g"  # rkt's data directory's tmpfs: what it holds, never filled with zeros
PF_PORT = 18080
# A server in a pod's network namespace for the port-forward: it echoes what it gets on its
# one connection, and says when that opens and ends.
ECHO_SERVER = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(4)
print("ready", flush=True)
c, _ = s.accept()
print("open", flush=True)
try:
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
except OSError:
    pass
print("closed", flush=True)
"""
# The PIDs whose network namespace is that of PID argv[1], as the host sees them.
NETNS_PIDS = """
import os, sys
ns = os.stat("/proc/%s/ns/net" % sys.argv[1]).st_ino
for p in os.listdir("/proc"):
    try:
        if p.isdigit() and os.stat("/proc/%s/ns/net" % p).st_ino == ns:
            print(p)
    except OSError:
        pass
"""
FAULT_SHARE = 0.4  # of the cycles without a forced crash point, once each fault came
FAULT_TIMEOUT = 60  # the outcome of a fault, polled for (never a measure of speed)


class RktWorld(test_chaos.World):
    """The same look at the machine, inside the host: its system manager's units (the
    host's own rktlet-host.target is not a sandbox's)."""

    def units(self):
        r = self.env.run("systemctl", "list-units", "rktlet-*", "--all", "--no-legend",
                         "--plain", check=False, timeout=30)
        units = {}
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) >= 3 and re.match(r"^rktlet-[0-9a-f]{64}\.service$", f[0]):
                units[f[0]] = f[2]
        return units

    def leases(self):
        """host-local's addresses: {sandbox ID: [address, ...]} from its files, which hold
        the container ID CNI was given (the sandbox's)."""
        ipam = os.path.join(os.path.dirname(self.env.cni_dir), "ipam")
        out = {}
        for root, _, files in os.walk(ipam):
            for f in files:
                if f.startswith("last_reserved_ip") or f == "lock":
                    continue
                try:
                    with open(os.path.join(root, f)) as fh:
                        owner = fh.read().split()[0]
                except (OSError, IndexError):
                    continue
                out.setdefault(owner, []).append(f)
        return out

    def procs(self):
        """As the daemon sees them: PIDs in the host's PID namespace (NSpid's second)."""
        out = {}
        for arg, pids in super().procs().items():
            for p in pids:
                try:
                    with open("/proc/%d/status" % p) as f:
                        ns = [line.split()[1:] for line in f if line.startswith("NSpid:")]
                except OSError:
                    continue
                if ns and len(ns[0]) >= 2:
                    out.setdefault(arg, []).append(int(ns[0][1]))
        return out


class RktChaos(test_chaos.Chaos):
    world_class = RktWorld
    # The daemon's CNI steps too: a DEL must follow every ADD exactly once, whichever of
    # them a crash cut.
    crash_points = test_chaos.CRASH_POINTS + ["net-recorded", "after-net-add", "net-added",
                                              "after-net-del"]
    point_ops = dict(test_chaos.POINT_OPS, **{
        "net-recorded": ["run"], "after-net-add": ["run"], "net-added": ["run"],
        "after-net-del": ["stop_pod"]})

    def __init__(self, test, seed):
        super().__init__(test, seed)
        self.threads = int(os.environ.get("RKL_CHAOS_THREADS") or 8)  # kubelet's many calls
        self.fault_todo = list(FAULTS)
        self.rng.shuffle(self.fault_todo)
        self.stats.update({"faults": {}, "faults_missed": {}, "fault_outcome_s_max": 0.0})

    # ---- Faults of the world ----

    def run(self, cycles):
        missed = super().run(cycles) + self.fault_todo
        self.drain()
        return missed

    def drain(self):
        """At the end: every sandbox stopped and removed, as kubelet would at a node's
        drain, and then nothing of theirs may be left on the node: no process, no mount
        under rkt's pods, no cgroup of a sandbox's unit or of an exec, no address, no veth,
        no pod directory and no active unit (the convergence)."""
        for s in self.live():
            self.op_stop_pod(s)
            self.op_rm_pod(s)
        self.converge()
        # Polled: an rm under way (its pod in exited-garbage) still holds its mounts, and
        # what a unit leaves in cgroups goes at a rescan (every 10 s).
        deadline = time.monotonic() + FAULT_TIMEOUT
        leaks = self.leaks()
        while any(leaks.values()) and time.monotonic() < deadline:
            time.sleep(0.5)
            leaks = self.leaks()
        self.stats["leaks"] = {k: len(v) for k, v in leaks.items()}
        wrong = ["%s: %s" % (k, v[:5]) for k, v in leaks.items() if v]
        if wrong:
            self.fail("left on the node after every sandbox was removed: %s" % wrong)

    def leaks(self):
        pods = os.path.join(self.env.rkt_dir, "pods")
        with open("/proc/%d/mountinfo" % self.env.pid1) as f:
            mounts = [line.split()[4] for line in f if line.split()[4].startswith(pods)]
        # The host's v1 hierarchies may be the machine's (a v2 machine's cpuset): other
        # tests' sandboxes are not ours to count.
        cgroups = [d for d in self.env.run(
            "find", "/sys/fs/cgroup", "-type", "d", "(", "-name", "rktlet-*.service", "-o",
            "-name", "rktlet-exec-*", ")", check=False).stdout.split()
            if any("rktlet-%s.service" % sid in d for sid in self.sandboxes)]
        veths = self.env.run("ip", "-o", "link", "show", "type", "veth").stdout.splitlines()
        return {"processes": sorted(self.world.procs()), "mounts": mounts,
                "cgroups": cgroups, "addresses": sorted(self.world.leases()),
                "veths": veths}

    def owes_cycles(self):
        return bool(self.fault_todo)

    def other_cycle(self):
        if self.fault_todo or self.rng.random() < FAULT_SHARE:
            name = self.fault_todo.pop(0) if self.fault_todo else self.rng.choice(FAULTS)
            if self.fault_cycle(name):
                self.stats["faults"][name] = self.stats["faults"].get(name, 0) + 1
                return
            self.stats["faults_missed"][name] = self.stats["faults_missed"].get(name, 0) + 1
            if name not in self.stats["faults"]:
                self.fault_todo.append(name)  # again later
        if self.alive():
            self.random_cycle()

    def target(self):
        """A ready sandbox whose pod runs, with a started long container running, and that
        container; made by some churn when there is none."""
        for _ in range(40):
            for s in self.live("ready"):
                if s.uuid is None:
                    continue
                for c in self.ctrs_of(s.id, ("started",)):
                    if c.kind == "long" and c.pid:
                        return s, c
            self.churn(1, prefer=["run", "create", "start"])
            self.converge()
        return None, None

    def fault_cycle(self, name):
        """One fault while the daemon runs, its outcome checked; the cycle ends, as every
        cycle does, with the daemon dead. False when it could not be made to happen."""
        if name in ("kill-app-add", "kill-app-rm"):
            return self.kill_rkt_cycle(name)
        if name == "rkt-dir-full":
            return self.rkt_dir_full_cycle()
        s, c = self.target()
        if s is None:
            return False
        if name == "exec-then-daemon-killed":
            return self.exec_kill_cycle(c)
        if name == "kill-iottymux":
            return self.iottymux_cycle(s, c)
        if name == "port-forward-then-daemon-killed":
            return self.port_forward_kill_cycle(s)
        self.log("fault %s on sandbox %s" % (name, s.id[:12]))
        with open(os.path.join(self.env.rkt_dir, "pods", "run", s.uuid, "ppid")) as f:
            ppid = f.read().strip()
        if name == "kill-nspawn":
            self.env.run("kill", "-KILL", ppid)
        elif name == "kill-pod-systemd":
            self.env.run("pkill", "-KILL", "-P", ppid, "-x", "systemd")
        elif name == "rm-pod-dir":
            # Until it is gone: an rkt command under way in the pod (an app add) writes into
            # it meanwhile, and what it makes again would leave a pod whose lock is held.
            d = os.path.join(self.env.rkt_dir, "pods", "run", s.uuid)
            for _ in range(50):
                shutil.rmtree(d, ignore_errors=True)
                if not os.path.exists(d):
                    break
                time.sleep(0.1)
        else:
            self.env.run("systemctl", "stop", "--no-block", "rktlet-%s.service" % s.id)
        with self.lock:
            s.state = "dead"
        self.fault_outcome(name, lambda: self.pod_dead(s))
        self.churn(self.rng.randint(2, 6))
        self.kill()
        return True

    def fault_outcome(self, name, check):
        """Polls check() (what is still wrong, empty once right) until it holds."""
        t0 = time.monotonic()
        while True:
            wrong = check()
            if not wrong:
                dt = round(time.monotonic() - t0, 2)
                self.stats["fault_outcome_s_max"] = max(self.stats["fault_outcome_s_max"], dt)
                self.log("fault %s: as expected after %.1f s" % (name, dt))
                return
            if time.monotonic() - t0 > FAULT_TIMEOUT:
                self.fail("fault %s: after %d s: %s" % (name, FAULT_TIMEOUT, wrong))
            time.sleep(0.2)

    def pod_dead(self, s):
        """A sandbox whose pod died: NOTREADY, failed with a reason, its unit not active,
        each container that ran until then EXITED with a reason, no process left."""
        wrong = []
        st, info = self.pod_info(s.id)
        if st.state != pb.SANDBOX_NOTREADY or info.get("phase") != "failed" or not (
                info.get("reason")):
            wrong.append("sandbox %s: %s, phase %s, reason %s" % (
                s.id[:12], pb.PodSandboxState.Name(st.state), info.get("phase"),
                info.get("reason")))
        unit = self.world.units().get("rktlet-%s.service" % s.id)
        if unit in ("active", "activating", "deactivating", "reloading"):
            wrong.append("its unit is %s" % unit)
        procs = self.world.procs()
        for c in self.ctrs_of(s.id, ("started",)):
            cst, _ = self.ctr_info(c.id)
            # (A short one exited by itself before, with its own code.)
            if cst.state != pb.CONTAINER_EXITED or (c.kind == "long" and not cst.reason):
                wrong.append("container %s: %s, reason %r, message %r" % (
                    c.id[:12], pb.ContainerState.Name(cst.state), cst.reason, cst.message))
            if procs.get(c.arg):
                wrong.append("container %s: process %s left" % (c.id[:12], procs[c.arg]))
        return wrong

    def kill_rkt_cycle(self, name):
        """rkt SIGKILLed in the middle of an app add (or rm) that the churn causes: the
        daemon says so, and the restart's convergence (every wanted container runs once,
        no removed app's process is left) is the rest of the check."""
        verb = name[len("kill-app-"):]
        killed = []
        stop = threading.Event()
        marker = ("--dir=" + self.env.rkt_dir).encode()

        def killer():
            while not stop.is_set() and not killed:
                for pid, argv in harness.processes():
                    if (argv[0] == self.env.rkt_path.encode() and marker in argv and
                            b"app" in argv and verb.encode() in argv):
                        try:
                            os.kill(pid, signal.SIGKILL)
                            killed.append(pid)
                        except ProcessLookupError:
                            continue
                        break
                time.sleep(0.005)

        log_start = len(self.env.daemon.log())
        t = threading.Thread(target=killer)
        t.start()
        prefer = (["create", "start"] if verb == "add" else
                  ["stop_ctr", "rm_ctr", "create", "start"])
        deadline = time.monotonic() + 40
        try:
            while not killed and time.monotonic() < deadline and self.alive():
                self.churn(1, prefer=prefer, gap=(0.05, 0.2))
        finally:
            stop.set()
            t.join()
        if not killed:
            self.kill()
            return False
        self.log("fault %s: killed rkt %s" % (name, killed))
        self.fault_outcome(name, lambda: [] if re.search(
            r"app %s.*(signal 9|killed)|(signal 9|killed).*app %s" % (verb, verb),
            self.env.daemon.log()[log_start:], re.I) else ["the daemon did not say so"])
        self.churn(self.rng.randint(1, 4))
        self.kill()
        return True

    def exec_kill_cycle(self, c):
        """The daemon killed while an exec runs in c: the client's stream ends, nothing the
        command started is left in the container (the restart's convergence counts every
        process whose first argument is the test's), nor the exec's cgroups."""
        # Numbers for sleep, one digit longer than a container's argument.
        args = ["%s%05d" % (self.token, next(self.serials) % 10000 * 10 + k) for k in (1, 2)]
        p = subprocess.Popen(self.env.enter + [
            CRICTL, "--runtime-endpoint", "unix://" + self.env.daemon.socket, "exec", c.id,
            "sh", "-c", "sleep %s & sleep %s" % tuple(args)], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, cwd="/")
        try:
            self.fault_outcome("exec started", lambda: [
                a for a in args if not self.world.procs().get(a)])
            self.kill()
            self.fault_outcome("exec-then-daemon-killed", lambda: (
                ["crictl still streaming"] if p.poll() is None else []) + (
                    [a for a in args if self.world.procs().get(a)]) + [
                        d for d in self.env.run("find", "/sys/fs/cgroup", "-name",
                                                "rktlet-exec-*", check=False).stdout.split()])
        finally:
            if p.poll() is None:
                p.kill()
            p.wait()
        return True

    def iottymux_cycle(self, s, c):
        """The iottymux of c's app (its iomux@ unit in the pod) SIGKILLed: the daemon says so,
        c runs on (rkt does not start iottymux again, nor stop the app), its statuses and
        the lists answer, and it can be stopped and removed."""
        app = self.ctr_info(c.id)[1].get("appName")
        unit = "rktlet-%s.service" % s.id
        pids = []
        for p in os.listdir("/proc"):
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    argv = f.read().split(b"\0")
                with open("/proc/%s/cgroup" % p) as f:
                    cgroup = f.read()
            except OSError:
                continue
            if (b"--action=iomux" in argv and ("--app=%s" % app).encode() in argv and
                    unit in cgroup):
                pids.append(int(p))
        if not app or not pids:
            return False
        self.log("fault kill-iottymux: %s of container %s" % (pids, c.id[:12]))
        log_start = len(self.env.daemon.log())
        for p in pids:
            os.kill(p, signal.SIGKILL)
        said = "container %s: log: rkt's iottymux" % c.id[:12]
        self.fault_outcome("kill-iottymux", lambda: [] if said in self.env.daemon.log()[
            log_start:] else ["the daemon did not say so"])
        st, _ = self.ctr_info(c.id)
        if st.state != pb.CONTAINER_RUNNING or not self.world.procs().get(c.arg):
            self.fail("container %s: %s after its iottymux was killed" % (
                c.id[:12], pb.ContainerState.Name(st.state)))
        listed = self.rs.ListContainers(pb.ListContainersRequest(), timeout=10).containers
        if c.id not in [x.id for x in listed]:
            self.fail("container %s not listed after its iottymux was killed" % c.id[:12])
        self.op_stop_ctr(c)
        self.op_rm_ctr(c)
        if c.state != "removed":
            self.fail("container %s could not be stopped and removed after its iottymux was "
                      "killed (%s)" % (c.id[:12], c.state))
        self.fault_outcome("kill-iottymux, removed", lambda: [
            "process %s left" % p for p in self.world.procs().get(c.arg, [])])
        self.churn(self.rng.randint(1, 4))
        self.kill()
        return True

    def rkt_dir_full_cycle(self):
        """rkt's data directory's filesystem full: a sandbox's start fails with rkt's words
        for it and is retried; once there is room again it runs. Nothing acknowledged is lost
        (the restart's checks). Filled once the node has converged, so that no rm of a pod
        is still freeing room (the filling also takes back what is freed)."""
        self.converge()
        self.env.fill_rkt_dir()
        try:
            n = len(self.sandboxes)
            self.op_run()
            new = [x for x in list(self.sandboxes.values())[n:]]
            if not new:
                return False
            s = new[0]
            self.log("fault rkt-dir-full: sandbox %s" % s.id[:12])

            def failing():
                _, info = self.pod_info(s.id)
                err = (info.get("lastError") or "").lower()
                return [] if "no space left on device" in err and info.get(
                    "attempts", 0) >= 1 else ["sandbox %s: %s" % (s.id[:12], err or info)]
            self.fault_outcome("rkt-dir-full", failing)
        finally:
            self.env.free_rkt_dir()

        def runs():
            st, info = self.pod_info(s.id)
            return [] if st.state == pb.SANDBOX_READY and info.get("phase") == "running" else [
                "sandbox %s: %s, phase %s, %s" % (s.id[:12], pb.PodSandboxState.Name(st.state),
                                                  info.get("phase"), info.get("lastError"))]
        self.fault_outcome("rkt-dir-full, freed", runs)
        self.churn(self.rng.randint(1, 4), prefer=["create", "start"])
        self.kill()
        return True

    def port_forward_kill_cycle(self, s):
        """The daemon killed while a port-forward carries a connection into s's pod: the
        client's connection ends, so does the one in the pod, and nothing is left in the
        pod's network namespace that was not there before."""
        with open(os.path.join(self.env.rkt_dir, "pods", "run", s.uuid, "ppid")) as f:
            ppid = f.read().strip()
        server = subprocess.Popen(self.env.enter + [
            "nsenter", "-t", ppid, "-n", harness.PYTHON, "-c", ECHO_SERVER, str(PF_PORT)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            cwd="/", text=True)
        said = []
        reader = threading.Thread(target=lambda: said.extend(iter(server.stdout.readline, "")))
        reader.start()
        client = None
        try:
            deadline = time.monotonic() + 30
            while "ready\n" not in said:
                if server.poll() is not None or time.monotonic() > deadline:
                    return False  # the pod went meanwhile
                time.sleep(0.05)
            before = set(self.env.run(harness.PYTHON, "-c", NETNS_PIDS, ppid).stdout.split())
            url = self.rs.PortForward(pb.PortForwardRequest(pod_sandbox_id=s.id,
                                                            port=[PF_PORT]), timeout=10).url
            client = spdyclient.Client(url, "/proc/%d/ns/net" % self.env.pid1,
                                       protocols=["portforward.k8s.io"])
            h = {"port": str(PF_PORT), "requestid": "0"}
            client.open(dict(h, streamtype="error"), fin=True)
            data = client.open(dict(h, streamtype="data"))
            client.send(data, b"ping")
            client.until(lambda: client.data.get(data, b"") == b"ping")
            self.log("fault port-forward-then-daemon-killed on sandbox %s" % s.id[:12])
            self.kill()
            client.sock.settimeout(0.1)

            def ended():
                wrong = []
                try:
                    while True:
                        client.read_frame()
                except (EOFError, ConnectionResetError):
                    pass
                except socket.timeout:
                    wrong.append("the client's connection is still open")
                if "closed\n" not in said:
                    wrong.append("the connection in the pod is still open")
                left = set(self.env.run(harness.PYTHON, "-c", NETNS_PIDS, ppid,
                                        check=False).stdout.split()) - before
                if left:
                    wrong.append("processes left in the pod's network namespace: %s" % left)
                return wrong
            self.fault_outcome("port-forward-then-daemon-killed", ended)
        finally:
            if client:
                client.close()
            server.kill()
            server.wait()
            reader.join()
            server.stdout.close()
        return True

    def world_violations(self):
        """And the pods' networks: an address for each sandbox that runs, none for the rest
        (a dead one keeps its own until it is stopped, as its DEL comes with the stop), and
        no more veths in the host than addresses."""
        v = super().world_violations()
        leases = self.world.leases()
        running = {s.id for s in self.sandboxes.values() if s.state in ("ready", "dead")}
        for sid, ips in leases.items():
            if len(ips) != 1:
                v.append("sandbox %s holds %d addresses: %s" % (sid[:12], len(ips), ips))
            if sid not in running:
                v.append("leaked address %s of sandbox %s (%s)" % (
                    ips, sid[:12], self.sandboxes[sid].state if sid in self.sandboxes
                    else "unknown"))
        veths = self.env.run("ip", "-o", "link", "show", "type", "veth").stdout.splitlines()
        if len(veths) > len(leases):
            v.append("%d veths for %d addresses" % (len(veths), len(leases)))
        return v

    def make_env(self, test):
        env = harness.RktEnv(test, rkt_dir_size=RKT_DIR_SIZE)
        self.start_kw = {"wrapper": env.enter}
        return env

    def start(self, crash_at=None):
        super().start(crash_at)
        if not getattr(self, "pulled", False):
            im = pbg.ImageServiceStub(self.ch)
            for image in test_chaos.IMAGES:
                im.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=image)), timeout=120)
            self.pulled = True


class RktChaosTest(unittest.TestCase):
    def test_chaos(self):
        test_chaos.run_chaos(self, RktChaos, int(os.environ.get("RKL_CHAOS_RKT_CYCLES") or 12),
                             "chaos on real rkt")


if __name__ == "__main__":
    unittest.main()
