"""Streaming on the real rkt 1.30.0 (stage1 host), in a private systemd host: the round trip
of `true` through Exec (the CRI call, the HTTP upgrade, the streams, the command and its
exit status on the error stream), by our own SPDY client and by crictl; and port-forward
throughput, crictl port-forward to busybox httpd in the pod, fetched with wget, with the
daemon's CPU time over the transfer. The figures: docs/performance.md. Run as root, after
building:

    RKL_SOURCE_DIR=$PWD RKL_BUILD_DIR=$PWD/build \\
    RKL_RKT=/var/cache/rktlet-test/rkt-1.30.0/bin/rkt /usr/bin/python3 bench/stream-bench.py
"""
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import harness  # noqa: E402
import spdyclient  # noqa: E402
import test_streaming  # noqa: E402

pb, pbg = harness.stubs()
N = int(os.environ.get("RKL_BENCH_N", "100"))
MB = int(os.environ.get("RKL_BENCH_MB", "256"))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class StreamBench(test_streaming.StreamingTest):
    pod_pid = test_streaming.RealRktPortForwardTest.pod_pid

    def test_bench(self):
        _, cid = self.run_pod("bench", ["sleep", "3600"])
        netns = "/proc/%d/ns/net" % self.env.pid1
        own = []
        for _ in range(N):
            t = time.perf_counter()
            url = self.url(cid, cmd=["true"])
            c = spdyclient.Client(url, netns)
            ids = spdyclient.exec_streams(c, stderr=False)
            c.until(lambda: ids["error"] in c.fin)
            own.append((time.perf_counter() - t) * 1000)
            c.close()
        viacrictl = []
        for _ in range(max(N // 4, 5)):
            t = time.perf_counter()
            p = self.crictl("exec", cid, "true")
            viacrictl.append((time.perf_counter() - t) * 1000)
            self.assertEqual(p.returncode, 0, p.stderr)
        sync = []
        for _ in range(max(N // 4, 5)):
            t = time.perf_counter()
            self.rs.ExecSync(pb.ExecSyncRequest(container_id=cid, cmd=["true"]), timeout=30)
            sync.append((time.perf_counter() - t) * 1000)
        print("\nexec true, own client (Exec + upgrade + streams + status), n=%d: "
              "p50 %.1f ms, p90 %.1f ms" % (N, pct(own, 0.5), pct(own, 0.9)))
        print("exec true, crictl exec (with crictl's own start), n=%d: p50 %.1f ms, "
              "p90 %.1f ms" % (len(viacrictl), pct(viacrictl, 0.5), pct(viacrictl, 0.9)))
        print("ExecSync true, n=%d: p50 %.1f ms" % (len(sync), pct(sync, 0.5)))

        sid, _ = self.run_pod("pf", [
            "sh", "-c", "mkdir -p /www && dd if=/dev/zero of=/www/big bs=1M count=%d "
            "2>/dev/null && echo ok > /www/ok && exec busybox httpd -f -p 127.0.0.1:8080 "
            "-h /www" % MB])
        # client-go's port-forward gives up on its first refused connection: httpd first.
        pid = str(self.pod_pid(sid))
        harness.wait_for("httpd", lambda: self.env.run(
            "nsenter", "-t", pid, "-n", "busybox", "wget", "-q", "-O-",
            "http://127.0.0.1:8080/ok", check=False).stdout == "ok\n", timeout=300)
        p = subprocess.Popen(self.env.enter + [
            test_streaming.CRICTL, "--runtime-endpoint", "unix://" + self.env.daemon.socket,
            "port-forward", sid, "18080:8080"], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd="/")
        self.addCleanup(p.stdout.close)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        p.stdout.readline()
        daemon = self.env.daemon.daemon_pid()
        for _ in range(3):
            c0, t = cpu_seconds(daemon), time.perf_counter()
            out = self.env.run("sh", "-c", "busybox wget -q -O- http://127.0.0.1:18080/big "
                               "| wc -c", timeout=600).stdout
            secs = time.perf_counter() - t
            cpu = cpu_seconds(daemon) - c0
            self.assertEqual(int(out), MB << 20)
            print("port-forward %d MiB: %.0f MB/s, daemon CPU %.2f s over %.2f s (%.0f%% of "
                  "a core)" % (MB, (MB << 20) / secs / 1e6, cpu, secs, 100 * cpu / secs))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
