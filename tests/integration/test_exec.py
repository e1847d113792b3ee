"""ExecSync end to end, on the real rkt 1.30.0 (stage1 host) in a private systemd host, and on
the simulator: exit codes, the two streams, a megabyte of output, the app's user, groups,
capabilities, working directory, environment, hostname and network seen from inside, a
timeout and a client that gives up (nothing may be left running after either), stopped and
removed containers, and many calls at once. The real rkt part skips, saying why, when rkt
cannot be built here. Times are printed for the record, never asserted beyond "a few
seconds"."""
import concurrent.futures
import json
import os
import time
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

BUSYBOX = "docker.io/library/busybox:latest"
STATUS_KEYS = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
               "NoNewPrivs")
# A process listing as "PID<TAB>argv joined by spaces<TAB>cgroup lines joined by ;".
PS = ("for p in /proc/[0-9]*; do a=$(tr '\\0' ' ' <$p/cmdline 2>/dev/null) || continue; "
      "c=$(tr '\\n' ';' <$p/cgroup 2>/dev/null); printf '%s\\t%s\\t%s\\n' \"${p#/proc/}\" "
      "\"$a\" \"$c\"; done")


def status_fields(text):
    return {k: v.strip() for k, v in (line.split(":", 1) for line in text.splitlines()
                                      if ":" in line) if k in STATUS_KEYS}


class ExecCases:
    """The checks, for a subclass that sets up self.env (SimEnv or RktEnv) and knows how to
    list the processes where pods run (procs()) and read a file there (host_read())."""
    real = False  # hostname and PID namespace are the pod's own only on the real rkt
    user = 1000  # the app's user

    def connect(self):
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)

    def sandbox_config(self, name):
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="e2e"),
            hostname=name, log_directory=os.path.join(self.env.dir, "logs", name))

    def run_pod(self, name):
        cfg = self.sandbox_config(name)
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=10).pod_sandbox_id
        harness.wait_sandbox_running(self.rs, sid, name)
        return sid, cfg

    def start(self, sid, cfg, name, user=None, groups=(), workdir=None, envs=None):
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                image=pb.ImageSpec(image=BUSYBOX), command=["sleep", "3600"],
                                log_path=name + ".log", working_dir=workdir or "",
                                envs=[pb.KeyValue(key=k, value=v)
                                      for k, v in (envs or {}).items()])
        if user is not None:
            cc.linux.security_context.run_as_user.value = user
        cc.linux.security_context.supplemental_groups.extend(groups)
        cid = self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10).container_id
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
        harness.wait_for("container %s running" % name, lambda: self.rs.ContainerStatus(
            pb.ContainerStatusRequest(container_id=cid), timeout=10).status.state ==
            pb.CONTAINER_RUNNING, timeout=60)
        return cid

    def info(self, cid):
        return json.loads(self.rs.ContainerStatus(pb.ContainerStatusRequest(
            container_id=cid, verbose=True), timeout=10).info["info"])

    def exec(self, cid, cmd, timeout=10, deadline=60):
        return self.rs.ExecSync(pb.ExecSyncRequest(container_id=cid, cmd=cmd, timeout=timeout),
                                timeout=deadline)

    def exec_error(self, cid, cmd, timeout=0, deadline=60):
        t0 = time.monotonic()
        with self.assertRaises(grpc.RpcError) as e:
            self.exec(cid, cmd, timeout=timeout, deadline=deadline)
        return e.exception.code(), e.exception.details(), time.monotonic() - t0

    def left_in(self, cid):
        """Processes in the container's cgroups other than its own main process."""
        app = self.info(cid)
        mark = "/%s.service" % app["appName"]
        return [line for line in self.procs() if mark in line.split("\t")[2] and
                int(line.split("\t")[0]) != app["pid"]]

    def assert_nothing_left(self, cid, what):
        harness.wait_for("nothing of %s left" % what, lambda: not self.left_in(cid),
                         timeout=10, interval=0.1)
        if self.real:  # the host's PID namespace is the test's own: nothing else runs there
            strays = [line for line in self.procs() if "sleep 100 " in line.split("\t")[1]]
            self.assertEqual(strays, [], "a 'sleep 100' is still running")
        self.assertEqual(self.exec_cgroups(cid), [])

    # ---- The checks ----

    def check_codes_and_streams(self, cid):
        r = self.exec(cid, ["sh", "-c", "echo out; echo err >&2; exit 3"])
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (3, b"out\n", b"err\n"))
        r = self.exec(cid, ["true"])
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (0, b"", b""))
        r = self.exec(cid, ["no-such-command", "arg"])
        self.assertEqual(r.exit_code, 127)
        self.assertIn(b"no-such-command", r.stderr)
        self.assertIn(b"not found", r.stderr)
        r = self.exec(cid, ["sh", "-c", "yes 0123456789abcdef | head -c 1048576"])
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(len(r.stdout), 1 << 20)
        self.assertEqual(r.stdout[:17], b"0123456789abcdef\n")
        self.assertEqual(r.stderr, b"")

    def check_as_the_app(self, cid):
        """User, groups, capabilities, working directory and environment: the app's."""
        app = self.info(cid)
        r = self.exec(cid, ["id"])
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertTrue(r.stdout.startswith(b"uid=%d(" % self.user), r.stdout)
        self.assertIn(b"44", r.stdout.split(b"groups=")[1])
        self.assertEqual(self.exec(cid, ["pwd"]).stdout, b"/home/app\n")
        env = self.exec(cid, ["env"]).stdout.decode().splitlines()
        self.assertIn("FOO=bar baz", env)
        self.assertFalse([e for e in env if e.startswith("LISTEN_")], env)
        seen = status_fields(self.exec(cid, ["cat", "/proc/self/status"]).stdout.decode())
        want = status_fields(self.host_read("/proc/%d/status" % app["pid"]))
        self.assertEqual(seen, want)

    def check_namespaces(self, cid, hostname):
        dev = self.exec(cid, ["cat", "/proc/net/dev"]).stdout.decode()
        self.assertIn("eth0", dev)
        self.assertNotEqual(dev, self.host_read("/proc/net/dev"))
        cg = self.exec(cid, ["cat", "/proc/self/cgroup"]).stdout.decode()
        self.assertIn("/rktlet-exec-", cg)
        if self.real:
            self.assertEqual(self.exec(cid, ["hostname"]).stdout, hostname.encode() + b"\n")
            # The pod's PID namespace: its systemd is PID 1 there.
            self.assertIn(b"systemd", self.exec(cid, ["cat", "/proc/1/cmdline"]).stdout)

    def check_timeout(self, cid):
        code, details, took = self.exec_error(cid, ["sh", "-c", "sleep 100 & exec sleep 100"],
                                              timeout=1)
        print("\n[figure] ExecSync timeout=1 of 'sleep 100' answered after %.0f ms" %
              (took * 1000))
        self.assertEqual(code, grpc.StatusCode.DEADLINE_EXCEEDED, details)
        self.assertIn("timeout", details)
        self.assertLess(took, 60)  # the timeout, not the command's 100 s
        self.assert_nothing_left(cid, "the timed out command")

    def check_client_gone(self, cid):
        t0 = time.monotonic()
        code, _, _ = self.exec_error(cid, ["sleep", "100"], timeout=0, deadline=1.5)
        self.assertEqual(code, grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assert_nothing_left(cid, "the command of a client that went away")
        print("[figure] client deadline 1.5 s: nothing left after %.0f ms" %
              ((time.monotonic() - t0) * 1000))

    def check_concurrent(self, cid, n=20):
        def one(i):
            r = self.exec(cid, ["sh", "-c", "sleep 0.2; echo $0", str(i)], deadline=60)
            return r.exit_code, r.stdout
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            got = list(pool.map(one, range(n)))
        print("[figure] %d concurrent ExecSyncs of 'sleep 0.2' all answered in %.0f ms" %
              (n, (time.monotonic() - t0) * 1000))
        self.assertEqual(got, [(0, b"%d\n" % i) for i in range(n)])

    def check_stopped_and_removed(self, sid, cfg):
        cid = self.start(sid, cfg, "short")
        self.rs.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=2), timeout=30)
        harness.wait_for("container stopped", lambda: self.rs.ContainerStatus(
            pb.ContainerStatusRequest(container_id=cid), timeout=10).status.state ==
            pb.CONTAINER_EXITED, timeout=60)
        code, details, _ = self.exec_error(cid, ["true"], timeout=5)
        self.assertEqual(code, grpc.StatusCode.FAILED_PRECONDITION, details)
        self.assertIn("not running", details)
        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=30)
        code, details, _ = self.exec_error(cid, ["true"], timeout=5)
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND, details)

    def exec_latency(self, cid, n=50):
        t = []
        for _ in range(n):
            t0 = time.monotonic()
            self.assertEqual(self.exec(cid, ["true"]).exit_code, 0)
            t.append((time.monotonic() - t0) * 1000)
        t.sort()
        print("[figure] ExecSync of 'true' from Python, %d calls: p50 %.1f ms, max %.1f ms" %
              (n, t[n // 2], t[-1]))

    def check_right_after_start(self, sid, cfg):
        """kubelet runs a postStart hook as soon as StartContainer answers, which is before
        the app runs: the exec waits for it. One never started fails at once."""
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="early"),
                                image=pb.ImageSpec(image=BUSYBOX), command=["sleep", "3600"],
                                log_path="early.log")
        cid = self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10).container_id
        code, details, _ = self.exec_error(cid, ["true"])
        self.assertEqual(code, grpc.StatusCode.FAILED_PRECONDITION, details)
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
        r = self.exec(cid, ["echo", "started"])
        self.assertEqual((r.exit_code, r.stdout), (0, b"started\n"))
        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=30)

    def run_all(self):
        sid, cfg = self.run_pod("exec")
        cid = self.start(sid, cfg, "app", user=self.user, groups=[44], workdir="/home/app",
                         envs={"FOO": "bar baz"})
        with self.subTest("exit codes and streams"):
            self.check_codes_and_streams(cid)
        with self.subTest("as the app"):
            self.check_as_the_app(cid)
        with self.subTest("namespaces"):
            self.check_namespaces(cid, "exec")
        with self.subTest("timeout"):
            self.check_timeout(cid)
        with self.subTest("client gone"):
            self.check_client_gone(cid)
        with self.subTest("concurrent"):
            self.check_concurrent(cid)
        with self.subTest("right after start"):
            self.check_right_after_start(sid, cfg)
        with self.subTest("stopped and removed"):
            self.check_stopped_and_removed(sid, cfg)
        self.exec_latency(cid)
        # The app itself went through all of that untouched.
        self.assertEqual(self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid),
                                                 timeout=10).status.state, pb.CONTAINER_RUNNING)
        return sid, cid


class RealRktExecTest(ExecCases, unittest.TestCase):
    real = True

    def setUp(self):
        self.env = harness.RktEnv(self).start()
        self.connect()
        self.im = pbg.ImageServiceStub(self.env.daemon.channel())
        self.im.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=BUSYBOX)), timeout=120)

    def procs(self):
        return self.env.run("sh", "-c", PS).stdout.splitlines()

    def host_read(self, path):
        return self.env.run("cat", path).stdout

    def exec_cgroups(self, cid):
        mark = "/%s.service/" % self.info(cid)["appName"]
        out = self.env.run("find", "/sys/fs/cgroup", "-type", "d", "-name", "rktlet-exec-*",
                           check=False).stdout
        return [d for d in out.splitlines() if mark in d]

    def test_exec(self):
        sid, _ = self.run_all()
        self.rs.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=30)
        self.rs.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=30)
        # Nothing rktlet made for the execs is left either.
        left = self.env.run("sh", "-c", "find /sys/fs/cgroup -name 'rktlet-exec-*'",
                            check=False).stdout
        self.assertEqual(left, "")


class SimExecTest(ExecCases, unittest.TestCase):
    def setUp(self):
        self.env = harness.SimEnv(self).start()
        self.env.fetch("docker://" + BUSYBOX)
        self.connect()

    def procs(self):
        out = []
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    args = f.read().replace(b"\0", b" ").decode(errors="replace")
                with open("/proc/%s/cgroup" % p) as f:
                    cg = f.read().replace("\n", ";")
            except OSError:
                continue
            out.append("%s\t%s\t%s" % (p, args, cg))
        return out

    def host_read(self, path):
        with open(path) as f:
            return f.read()

    def exec_cgroups(self, cid):
        mark = "/%s.service/" % self.info(cid)["appName"]
        found = []
        for top, dirs, _ in os.walk("/sys/fs/cgroup"):
            found += [os.path.join(top, d) for d in dirs if d.startswith("rktlet-exec-")]
        return [d for d in found if mark in d]

    def test_exec(self):
        self.run_all()

    def test_too_many_at_once(self):
        """Past what the exec pool admits (64 running or waiting): RESOURCE_EXHAUSTED, at
        once; the others run."""
        sid, cfg = self.run_pod("many")
        cid = self.start(sid, cfg, "app")
        n = 72

        def one(_):
            try:
                return self.exec(cid, ["sleep", "2"], timeout=30, deadline=60).exit_code
            except grpc.RpcError as e:
                return e.code()
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            got = list(pool.map(one, range(n)))
        refused = [g for g in got if g == grpc.StatusCode.RESOURCE_EXHAUSTED]
        self.assertEqual(len(refused) + got.count(0), n, got)
        self.assertGreater(len(refused), 0)
        self.assertGreaterEqual(got.count(0), 16)


if __name__ == "__main__":
    unittest.main()
