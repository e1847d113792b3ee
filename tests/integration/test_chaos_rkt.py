"""The chaos test (test_chaos.py) on the real rkt 1.30.0 in a private systemd host: random CRI
churn while the daemon is SIGKILLed at random moments and at every forced crash point,
restarted on the same state, and checked against rkt's pod directories and locks, the
host's systemd units and the live app processes. Skipped when the real rkt cannot be built.

RKL_CHAOS_RKT_CYCLES=N (default 12: every crash point once, within CI's time),
RKL_CHAOS_THREADS=N (default 8 client threads), RKL_CHAOS_SEED=S, RKL_CHAOS_REPORT=FILE as
in test_chaos.py; docs/reliability.md has the long runs."""
import os
import re
import unittest

import harness
import test_chaos

pb, pbg = harness.stubs()


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

    def world_violations(self):
        """And the pods' networks: an address for each sandbox that runs, none for the rest,
        and no more veths in the host than addresses."""
        v = super().world_violations()
        leases = self.world.leases()
        running = {s.id for s in self.sandboxes.values() if s.state == "ready"}
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
