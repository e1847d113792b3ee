"""Container log throughput on the real rkt 1.30.0: an app printing as fast as it can (2-byte
lines from `yes`, then 1 KiB lines), with rktlet's log follower on (a log_path) and off (no
log_path), over 5 s each; meanwhile the daemon's ContainerStatus latency from this client.
The figures and how to read them: docs/logs.md. Run as root, after building:

    RKL_SOURCE_DIR=$PWD RKL_BUILD_DIR=$PWD/build \
    RKL_RKT=/var/cache/rktlet-test/rkt-1.30.0/bin/rkt /usr/bin/python3 bench/log-throughput.py
"""
import glob
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import harness  # noqa: E402 (found through the path above)
import test_rkt  # noqa: E402
pb, pbg = harness.stubs()


class LogThroughput(test_rkt.RealRktBase):
    def lat(self, cid, n=300, secs=None):
        xs = []
        end = time.monotonic() + (secs or 0)
        while len(xs) < n or (secs and time.monotonic() < end):
            t = time.perf_counter()
            self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid), timeout=10)
            xs.append((time.perf_counter() - t) * 1e6)
        xs.sort()
        return xs[len(xs) // 2], xs[int(len(xs) * 0.99)]

    def test_bench(self):
        self.pull()
        sid, cfg, _ = self.run_pod("bench")
        idle_cfg = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="idle"),
                                      image=pb.ImageSpec(image=test_rkt.BUSYBOX),
                                      command=["sleep", "3600"], log_path="idle.log")
        idle = self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, sandbox_config=cfg, config=idle_cfg), timeout=10).container_id
        self.start(idle)
        self.wait_state(idle, pb.CONTAINER_RUNNING)
        print("\nContainerStatus idle p50/p99 us: %.0f / %.0f" % self.lat(idle))
        line = "x" * 1023
        logs = os.path.join(self.env.daemon.state_dir, "pods", sid, "logs", "*.log")
        for label, script in (("yes (2-byte lines)", "exec yes"),
                              ("1 KiB lines", "exec yes " + line)):
            for follow in (True, False):
                name = ("f" if follow else "n") + str(len(script))
                cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                        image=pb.ImageSpec(image=test_rkt.BUSYBOX),
                                        command=["sh", "-c", script],
                                        log_path=name + ".log" if follow else "")
                cid = self.rs.CreateContainer(pb.CreateContainerRequest(
                    pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10).container_id
                self.start(cid)
                self.wait_state(cid, pb.CONTAINER_RUNNING)
                time.sleep(2)
                dst = os.path.join(cfg.log_directory, name + ".log")

                def sizes():
                    s = {p: os.path.getsize(p) for p in glob.glob(logs)}
                    return s, (os.path.getsize(dst) if follow and os.path.exists(dst) else 0)
                s0, d0 = sizes()
                t0 = time.monotonic()
                p50, p99 = self.lat(idle, 100, secs=5)
                s1, d1 = sizes()
                t1 = time.monotonic()
                grown = max(s1[p] - s0.get(p, 0) for p in s1)
                rate_src = grown / (t1 - t0) / 1e6
                rate_dst = (d1 - d0) / (t1 - t0) / 1e6
                # app bytes: a record is "<35-byte time> stdout <line>\n"; the line's share
                rec = 31 + 8 + (2 if script == "exec yes" else 1024)
                app = rate_src * (2 if script == "exec yes" else 1024) / rec
                print("%s, follower %s: rkt's file %.1f MB/s (app output %.1f MB/s), CRI file "
                      "%.1f MB/s; ContainerStatus p50/p99 %.0f / %.0f us"
                      % (label, "on" if follow else "off", rate_src, app, rate_dst, p50, p99))
                self.rs.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=0),
                                      timeout=30)
                self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=30)
        self.stop_remove(sid)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
