"""1,000 calls in flight at once on four connections: reads, refused writes and
200 real RunPodSandbox calls. Every call gets its proper answer (never UNKNOWN, INTERNAL or
a dropped connection), every acknowledged sandbox is listed afterwards, the daemon logs no
error and keeps serving. No timing is asserted."""
import collections
import unittest

import grpc

import harness

pb, pbg = harness.stubs()


def sandbox_config(name, valid=True):
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name if valid else "", uid=name + "-uid",
                                       namespace="load"),
        hostname="load", log_directory=harness.LOG_ROOT + "/load_" + name)


class LoadTest(unittest.TestCase):
    def test_thousand_calls_at_once(self):
        env = harness.SimEnv(self).start()
        stubs = []
        for _ in range(4):
            ch = env.daemon.channel()
            self.addCleanup(ch.close)
            stubs.append(pbg.RuntimeServiceStub(ch))

        kinds = (
            ("Version", "OK", lambda rs, i: rs.Version.future(pb.VersionRequest(), timeout=60)),
            ("ListPodSandbox", "OK", lambda rs, i: rs.ListPodSandbox.future(
                pb.ListPodSandboxRequest(), timeout=60)),
            ("PodSandboxStatus", "NOT_FOUND", lambda rs, i: rs.PodSandboxStatus.future(
                pb.PodSandboxStatusRequest(pod_sandbox_id="f" * 64), timeout=60)),
            ("RunPodSandbox invalid", "INVALID_ARGUMENT", lambda rs, i: rs.RunPodSandbox.future(
                pb.RunPodSandboxRequest(config=sandbox_config("bad%d" % i, valid=False)),
                timeout=60)),
            ("RunPodSandbox", "OK", lambda rs, i: rs.RunPodSandbox.future(
                pb.RunPodSandboxRequest(config=sandbox_config("p%d" % i)), timeout=60)),
        )
        calls = [(kinds[i % 5], kinds[i % 5][2](stubs[i % 4], i)) for i in range(1000)]
        got = collections.Counter()
        acked = set()
        for (name, _, _), f in calls:
            try:
                r = f.result()
                got[(name, "OK")] += 1
                if name == "RunPodSandbox":
                    acked.add(r.pod_sandbox_id)
            except grpc.RpcError as e:
                got[(name, e.code().name)] += 1
        self.assertEqual(got, collections.Counter({(name, want): 200 for name, want, _ in kinds}))

        listed = {p.id for p in stubs[0].ListPodSandbox(pb.ListPodSandboxRequest(),
                                                        timeout=10).items}
        self.assertEqual(acked, listed)
        self.assertIsNone(env.daemon.proc.poll())
        errors = [line for line in env.daemon.log().splitlines()
                  if line[:3] in ("<0>", "<1>", "<2>", "<3>")]
        self.assertEqual(errors, [])


if __name__ == "__main__":
    unittest.main()
