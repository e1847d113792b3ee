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
import subprocess
import threading
import time
import unittest

import harness
import test_chaos

pb, pbg = harness.stubs()

CRICTL = os.environ.get("RKL_CRICTL", "/var/cache/rktlet-test/cri-tools-1.26.1/bin/crictl")
# Faults of the world, one a cycle: the pod's nspawn or its systemd killed, its unit stopped
# from outside, its directory removed by hand, rkt killed in the middle of an app add or an
# app rm, the daemon killed while an exec runs.
FAULTS = ["kill-nspawn", "kill-pod-systemd", "stop-unit", "rm-pod-dir", "kill-app-add",
          "kill-app-rm", "exec-then-daemon-killed"]
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
        return super().run(cycles) + self.fault_todo

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
        s, c = self.target()
        if s is None:
            return False
        if name == "exec-then-daemon-killed":
            return self.exec_kill_cycle(c)
        self.log("fault %s on sandbox %s" % (name, s.id[:12]))
        with open(os.path.join(self.env.rkt_dir, "pods", "run", s.uuid, "ppid")) as f:
            ppid = f.read().strip()
        if name == "kill-nspawn":
            self.env.run("kill", "-KILL", ppid)
        elif name == "kill-pod-systemd":
            self.env.run("pkill", "-KILL", "-P", ppid, "-x", "systemd")
        elif name == "rm-pod-dir":
            shutil.rmtree(os.path.join(self.env.rkt_dir, "pods", "run", s.uuid),
                          ignore_errors=True)
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
        env = harness.RktEnv(test)
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
