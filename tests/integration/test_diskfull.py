"""The disk under the state directory fills up: SQLite's error reaches the client
as RESOURCE_EXHAUSTED with its words, the daemon keeps serving, nothing it acknowledged is
lost (checked after a SIGKILL and restart), and it takes writes again once space is back.
The state directory is a small tmpfs of the test's own; the backend is the simulator (the
disk is the daemon's, not rkt's)."""
import os
import signal
import subprocess
import unittest

import grpc

import harness

pb, pbg = harness.stubs()


def pod_config(name):
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="full"),
        hostname=name, log_directory=harness.LOG_ROOT + "/full_" + name,
        # Big rows fill the disk in a few dozen calls, not thousands.
        annotations={"padding": "x" * 16000})


class DiskFullTest(unittest.TestCase):
    def setUp(self):
        self.env = harness.SimEnv(self)
        self.state = self.env.daemon.state_dir
        os.makedirs(self.state)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs",
                        self.state], check=True)
        # After the daemon (cleanups run last first): it must be gone before the umount.
        self.addCleanup(subprocess.run, ["umount", "-l", self.state])
        self.env.start()
        self.connect()

    def connect(self):
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)

    def fill(self):
        """Fills the tmpfs but for nothing; returns the filler's path."""
        path = os.path.join(self.state, "filler")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            for size in (65536, 512, 1):
                try:
                    while True:
                        os.write(fd, b"\0" * size)
                except OSError:
                    pass
        finally:
            os.close(fd)
        return path

    def test_disk_full_then_space_back(self):
        acked = [self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=pod_config("before")),
                                       timeout=10).pod_sandbox_id]
        filler = self.fill()

        # Writes go on until SQLite runs out of room (the WAL may have some); then the
        # client hears of it.
        refused = None
        for i in range(200):
            try:
                acked.append(self.rs.RunPodSandbox(pb.RunPodSandboxRequest(
                    config=pod_config("full-%d" % i)), timeout=10).pod_sandbox_id)
            except grpc.RpcError as e:
                refused = e
                break
        self.assertIsNotNone(refused, "200 sandboxes fitted on a full disk")
        self.assertEqual(refused.code(), grpc.StatusCode.RESOURCE_EXHAUSTED, refused.details())
        self.assertIn("full", refused.details())

        # Still serving: reads answer from memory, and every acknowledged sandbox is there.
        self.rs.Version(pb.VersionRequest(), timeout=10)
        listed = {p.id for p in self.rs.ListPodSandbox(pb.ListPodSandboxRequest(),
                                                       timeout=10).items}
        self.assertTrue(set(acked) <= listed, set(acked) - listed)

        # Space comes back: writes are taken again, without a restart.
        os.unlink(filler)
        acked.append(harness.wait_for("a write taken again", lambda: self.try_run("after"),
                                      timeout=30, interval=0.5))

        # Nothing acknowledged was lost, even through a SIGKILL.
        self.env.daemon.stop(signal.SIGKILL)
        self.env.daemon.expected_exit = False
        self.env.daemon.start()
        self.connect()
        harness.wait_answering(self.rs)
        listed = {p.id for p in self.rs.ListPodSandbox(pb.ListPodSandboxRequest(),
                                                       timeout=10).items}
        self.assertTrue(set(acked) <= listed, set(acked) - listed)
        out = subprocess.run(["sqlite3", "-readonly", os.path.join(self.state, "rktlet.db"),
                              "PRAGMA integrity_check"], capture_output=True, text=True)
        self.assertEqual(out.stdout.strip(), "ok", out.stderr)

    def try_run(self, name):
        try:
            return self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=pod_config(name)),
                                         timeout=10).pod_sandbox_id
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise
            return None


if __name__ == "__main__":
    unittest.main()
