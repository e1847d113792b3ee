"""scripts/try-rktlet: a throwaway environment that starts, answers CRI, and stops leaving
nothing behind."""
import os
import subprocess
import unittest

import harness

pb, pbg = harness.stubs()
TRY = os.path.join(harness.SOURCE_DIR, "scripts", "try-rktlet")


def processes_mentioning(text):
    out = subprocess.run(["pgrep", "-f", text], capture_output=True, text=True).stdout
    return [p for p in out.split() if int(p) != os.getpid()]


class TryTest(unittest.TestCase):
    def test_start_use_stop(self):
        d = harness.workdir(self)
        env = dict(os.environ, RKTLET_BUILD_DIR=harness.BUILD_DIR)
        self.addCleanup(subprocess.run, [TRY, "--stop", d], env=env)
        out = subprocess.run([TRY, d], env=env, capture_output=True, text=True, check=True,
                             timeout=120).stdout
        socket = out.strip().splitlines()[-1]
        self.assertEqual(socket, os.path.join(d, "rktlet.sock"))
        self.assertIn("simulator", out)

        import grpc
        with grpc.insecure_channel("unix://" + socket) as ch:
            rs = pbg.RuntimeServiceStub(ch)
            self.assertEqual(rs.Version(pb.VersionRequest(), timeout=10).runtime_name, "rktlet")
            cfg = pb.PodSandboxConfig(metadata=pb.PodSandboxMetadata(
                name="try", uid="try-uid", namespace="default"))
            sid = rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=10).pod_sandbox_id
            ctr = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="c"),
                                     image=pb.ImageSpec(image="busybox:1.36"),
                                     command=["/bin/sleep", "4242"])
            cid = rs.CreateContainer(pb.CreateContainerRequest(pod_sandbox_id=sid, config=ctr),
                                     timeout=10).container_id
            rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
            harness.wait_for("the container running", lambda: rs.ContainerStatus(
                pb.ContainerStatusRequest(container_id=cid), timeout=10).status.state ==
                pb.CONTAINER_RUNNING)
        self.assertTrue(processes_mentioning(d))

        subprocess.run([TRY, "--stop", d], env=env, check=True, capture_output=True, timeout=60)
        self.assertEqual(processes_mentioning(d), [])
        self.assertEqual(processes_mentioning("sleep 4242"), [])
        with open("/proc/self/mounts") as f:
            self.assertNotIn(d, f.read())


if __name__ == "__main__":
    unittest.main()
