"""Integration test harness: the real daemon, a real systemd service manager, and a CRI
client whose stubs are generated from proto/ at test time.

Everything a test starts lives in a temporary directory and is stopped by the test's
cleanup, by PID; nothing outside it is touched.
"""
import atexit
import fcntl
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE_DIR = os.environ.get("RKL_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("RKL_BUILD_DIR") or os.path.join(SOURCE_DIR, "build")
DAEMON = os.path.join(BUILD_DIR, "rktlet")
RKT_SIM = os.path.join(BUILD_DIR, "rkt-sim")
MAKE_IMAGES = os.path.join(SOURCE_DIR, "tests", "lib", "make-test-images")
SYSTEMD_ENV = os.path.join(SOURCE_DIR, "tests", "lib", "systemd-env")
PYTHON = "/usr/bin/python3"  # the interpreter with Debian's grpcio


# Where the tests' pods keep their container logs: the daemon writes real files there, so
# not below the machine's /var/log/pods. Removed when the tests end.
LOG_ROOT = tempfile.mkdtemp(prefix="rktlet-test-logs-")
atexit.register(shutil.rmtree, LOG_ROOT, True)


def stubs():
    """Returns (api_pb2, api_pb2_grpc), generating them from proto/api.proto if needed."""
    out = os.path.join(BUILD_DIR, "pystubs")
    proto = os.path.join(SOURCE_DIR, "proto", "api.proto")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        target = os.path.join(out, "api_pb2.py")
        if (not os.path.exists(target)
                or os.path.getmtime(target) < os.path.getmtime(proto)):
            subprocess.run([PYTHON, "-m", "grpc_tools.protoc", "-I" + os.path.dirname(proto),
                            "--python_out=" + out, "--grpc_python_out=" + out, proto],
                           check=True)
    if out not in sys.path:
        sys.path.insert(0, out)
    import api_pb2
    import api_pb2_grpc
    return api_pb2, api_pb2_grpc


class Systemd:
    """A private systemd service manager (tests/lib/systemd-env)."""

    def __init__(self, directory):
        self.dir = directory
        self.address = subprocess.run([SYSTEMD_ENV, "start", directory], check=True,
                                      capture_output=True, text=True).stdout.strip()

    def stop(self):
        subprocess.run([SYSTEMD_ENV, "stop", self.dir], check=False)


class Daemon:
    """build/rktlet on a socket in a temporary directory."""

    def __init__(self, workdir, rkt_path=None, bus=None, extra=(), env=None):
        self.workdir = workdir
        self.socket = os.path.join(workdir, "rktlet.sock")
        self.state_dir = os.path.join(workdir, "state")
        self.log_path = os.path.join(workdir, "rktlet.log")
        self.args = [DAEMON, "--listen", self.socket, "--state-dir", self.state_dir,
                     "--rkt-data-dir", os.path.join(workdir, "rkt"), "--log-level", "debug",
                     "--config", ""]  # never the machine's /etc/rktlet/rktlet.conf
        if rkt_path:
            self.args += ["--rkt-path", rkt_path]
        if bus:
            self.args += ["--systemd-bus", bus]
        # Without a CNI configuration of the test's own, pods use rkt's own networking
        # (--net): the simulator sets its pods' network up itself, in the test's namespace
        # where the daemon's CNI would not reach, and no test touches the machine's
        # /etc/cni/net.d.
        if "--net" not in extra and "--cni-conf-dir" not in extra:
            self.args += ["--net", "default"]
        self.args += list(extra)
        self.env = dict(os.environ if env is None else env)
        self.proc = None
        self.expected_exit = False  # set by tests that kill the daemon themselves

    def start(self, wrapper=(), timeout=30):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(list(wrapper) + self.args, stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL, env=self.env)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("rktlet exited with %d:\n%s"
                                   % (self.proc.returncode, self.log()))
            if os.path.exists(self.socket) and self._answers():
                return self
            time.sleep(0.02)
        raise RuntimeError("rktlet did not answer within %ds:\n%s" % (timeout, self.log()))

    def _answers(self):
        """True once Version answers: what a test needs of a started daemon. A socket that
        accepts is not that: in CI, once, the first call after a restart over a stale
        socket failed with UNAVAILABLE "Socket closed" although the connect had worked."""
        import grpc
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.socket)
        except OSError:
            return False
        finally:
            s.close()
        pb, pbg = stubs()
        with self.channel() as ch:
            try:
                pbg.RuntimeServiceStub(ch).Version(pb.VersionRequest(), timeout=5)
                return True
            except grpc.RpcError as e:
                # An error the daemon chose is an answer; no connection is not.
                return e.code() not in (grpc.StatusCode.UNAVAILABLE,
                                        grpc.StatusCode.DEADLINE_EXCEEDED)

    def channel(self):
        import grpc
        return grpc.insecure_channel("unix://" + self.socket)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Sends sig and returns the exit code. A daemon that died on its own has its log
        printed: the temporary directory that holds it is about to go."""
        if self.proc is None:
            return None
        if self.proc.poll() is not None:
            if self.proc.returncode != 0 and not self.expected_exit:
                sys.stderr.write("rktlet died with %d; its log:\n%s\n" % (
                    self.proc.returncode, self.log()[-20000:]))
            return self.proc.returncode
        self.expected_exit = True
        self.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def wait_log(self, needle, timeout=30):
        """Waits for needle in the log: the socket answers before main() logs that it
        serves, so a line written after start-up may not be there yet."""
        return wait_for("%r in the daemon's log" % needle,
                        lambda: needle in self.log(), timeout)

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""


def test_failed(test):
    """Whether test has failed so far, for a cleanup that says more when it did. The result is
    on unittest's private _outcome (Python 3.11); without it, False."""
    result = getattr(getattr(test, "_outcome", None), "result", None)
    return any(t is test for t, _ in getattr(result, "failures", []) +
               getattr(result, "errors", []))


def keep_log(test, daemon):
    """On the test's way out: with RKL_TEST_KEEP_LOGS=DIR, copies the daemon's log there;
    when the test failed, prints the log's end, since its directory is about to go and CI
    shows only what the tests printed."""
    def keep():
        text = daemon.log()
        keep = os.environ.get("RKL_TEST_KEEP_LOGS")
        if keep:
            # A test with several daemons (several nodes) keeps each one's log.
            name = test.id() + "." + os.path.basename(daemon.workdir)
            os.makedirs(keep, exist_ok=True)
            with open(os.path.join(keep, name + ".log"), "w") as f:
                f.write(text)
        if test_failed(test) and text:
            tail = text.splitlines()[-60:]
            sys.stderr.write("\n--- %s: the end of rktlet's log (%s) ---\n%s\n---\n" % (
                test.id(), daemon.workdir, "\n".join(tail)))
    test.addCleanup(keep)


def workdir(test):
    """A temporary directory removed when the test ends."""
    d = tempfile.mkdtemp(prefix="rktlet-test-", dir=os.environ.get("RKL_TEST_TMPDIR"))
    test.addCleanup(shutil.rmtree, d, ignore_errors=True)
    return d


class FakeRktCase(unittest.TestCase):
    """Tests of the daemon's API alone: one private systemd and one stub rkt (fake_rkt) for
    the class, in a temporary directory removed with it. No pod ever starts."""
    tmp_prefix = "rktlet-it-"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix=cls.tmp_prefix)
        cls.systemd = Systemd(os.path.join(cls.tmp, "systemd"))
        cls.rkt = fake_rkt(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        cls.systemd.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)


def fake_rkt(directory, version="1.30.0"):
    """A stand-in for the rkt binary that only answers `version` (the simulator replaces it
    where pods are needed), with a build record saying it carries rktlet's patches."""
    path = os.path.join(directory, "rkt")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n"
                "for a in \"$@\"; do [ \"$a\" = version ] && {\n"
                "  echo 'rkt Version: %s'; echo 'appc Version: 0.8.11'; exit 0; }; done\n"
                "echo 'rkt: unknown command' >&2; exit 254\n" % version)
    os.chmod(path, 0o755)
    write_rkt_record(path, version)
    return path


def write_rkt_record(rkt, version="1.30.0"):
    """Writes the build record beside the test double rkt (src/rkt/build.h), as
    scripts/build-rkt writes one beside a real rkt: the binary's sha256 and rktlet's patches
    (packaging/rkt/), without which the daemon reports it unpatched."""
    import glob
    import hashlib

    def sha256(path):
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    lines = ["rkt %s %s" % (version, sha256(rkt))]
    for p in sorted(glob.glob(os.path.join(SOURCE_DIR, "packaging", "rkt", "*.patch"))):
        lines.append("patch %s %s" % (sha256(p), os.path.basename(p)))
    with open(rkt + ".patches", "w") as f:
        f.write("\n".join(lines) + "\n")


def test_images():
    """The simulator's local image source (busybox from Debian's busybox-static), built once
    per build dir."""
    out = os.path.join(BUILD_DIR, "test-images")
    with open(os.path.join(BUILD_DIR, ".test-images.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(out, ".done")):
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run([MAKE_IMAGES, out], check=True, capture_output=True)
            open(os.path.join(out, ".done"), "w").close()
    return out


POD_BRIDGE = "rklsim0"  # tests/rkt-sim/sim.h: SIM_POD_BRIDGE
POD_GATEWAY = "172.16.28.1"  # the simulator's subnet, .1

# Runs inside the fresh namespace that `unshare --net` made: lo, and the bridge pods attach
# to; then holds the namespace until its stdin closes (the test's cleanup, or the test died).
_NETNS_HOLDER = """
import subprocess, sys
for args in (["link", "set", "lo", "up"], ["link", "add", "%(br)s", "type", "bridge"],
             ["addr", "add", "%(gw)s/24", "dev", "%(br)s"], ["link", "set", "%(br)s", "up"]):
    subprocess.run(["%(ip)s"] + args, check=True)
print("ready", flush=True)
sys.stdin.read()
""" % {"br": POD_BRIDGE, "gw": POD_GATEWAY, "ip": shutil.which("ip") or "/usr/sbin/ip"}


class PodNetwork:
    """A network namespace of the test's own with a bridge POD_BRIDGE (POD_GATEWAY/24) that
    the simulator's pods attach to (RKT_SIM_NETNS). It is set up from inside, so nothing is
    ever made in the machine's namespace, and held by a process ended in cleanup, by PID:
    the namespace, its bridge and every pod veth still on it go with it."""

    def __init__(self, test):
        self.proc = subprocess.Popen(["unshare", "--net", "--", PYTHON, "-c", _NETNS_HOLDER],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        test.addCleanup(self.stop)
        line = self.proc.stdout.readline().strip()
        self.path = "/proc/%d/ns/net" % self.proc.pid
        if line != "ready" or (os.stat(self.path).st_ino ==
                               os.stat("/proc/self/ns/net").st_ino):
            raise RuntimeError("the test's network namespace could not be set up")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()

    def run(self, *cmd, check=True, timeout=60, **kw):
        """Runs cmd inside the namespace (nsenter --net)."""
        return subprocess.run(["nsenter", "--net=" + self.path] + list(cmd),
                              capture_output=True, text=True, check=check, timeout=timeout,
                              **kw)


class SimEnv:
    """A daemon driving the rkt simulator under a private systemd: what a node looks like
    here. Faults are written to self.faults (re-read by the simulator at every command).
    With net (the default), pods get network namespaces of their own on a bridge in a
    namespace of the test's (self.netns, PodNetwork): their IPs answer from there only, so
    talk to them with self.in_netns()."""

    def __init__(self, test, extra=(), profile=None, net=True):
        # First, so that its cleanup runs last, once systemd has taken the pods down.
        self.netns = PodNetwork(test) if net else None
        self.dir = workdir(test)
        self.systemd = Systemd(os.path.join(self.dir, "systemd"))
        test.addCleanup(self.systemd.stop)
        self.images = test_images()
        self.rkt_dir = os.path.join(self.dir, "rkt")
        self.faults = os.path.join(self.dir, "faults")
        open(self.faults, "w").close()
        self.env = dict(os.environ, RKT_SIM_IMAGES=self.images, RKT_SIM_FAULTS=self.faults)
        if profile:
            self.env["RKT_SIM_PROFILE"] = profile
        if self.netns:
            self.env["RKT_SIM_NETNS"] = self.netns.path
        self.pod_net = ipaddress.ip_network("172.16.28.0/24")  # the simulator's own network
        self.daemon = Daemon(self.dir, rkt_path=RKT_SIM, bus=self.systemd.address,
                             extra=list(extra), env=self.env)
        test.addCleanup(self.cleanup)
        keep_log(test, self.daemon)

    def start(self):
        self.daemon.start()
        return self

    def cleanup(self):
        self.daemon.stop(signal.SIGKILL)
        # Pods outlive the daemon by design; the test's systemd takes them down.

    def rkt(self, *args, check=True):
        env = dict(self.env, RKT_EXPERIMENT_APP="true", RKT_EXPERIMENT_ATTACH="true")
        return subprocess.run([RKT_SIM, "--dir=" + self.rkt_dir] + list(args), env=env,
                              capture_output=True, text=True, check=check, timeout=60)

    def in_netns(self, *cmd, check=True, timeout=60, **kw):
        """Runs cmd in the test's network namespace, where the pods' IPs are reachable."""
        return self.netns.run(*cmd, check=check, timeout=timeout, **kw)

    def fetch(self, ref):
        """Puts an image into the simulator's store, as PullImage would."""
        return self.rkt("image", "fetch", "--full", ref).stdout.strip().splitlines()[-1]

    def set_faults(self, text):
        with open(self.faults + ".tmp", "w") as f:
            f.write(text)
        os.rename(self.faults + ".tmp", self.faults)


def processes():
    """(pid, argv) of each process of the machine now, argv a list of bytes (a zombie's is
    [b""]); one that ends while it is read is left out."""
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                yield int(p), f.read().split(b"\0")
        except OSError:
            continue


def free_port():
    """A TCP port free on the machine's 127.0.0.1 now (the kernel's pick)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(what, fn, timeout=30, interval=0.05):
    """Polls fn until it returns something true; fails the wait with what."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def wait_empty(what, fn, timeout=30, interval=0.05):
    """Polls fn, which returns a list of what is still there, until it is empty; fails the
    wait with what and the last list."""
    last = []

    def empty():
        last[:] = fn()
        return not last
    try:
        return wait_for(what, empty, timeout, interval)
    except AssertionError:
        raise AssertionError("timed out waiting for %s; still there: %r" % (what, last)) from None


def wait_sandbox_running(rs, sid, name="", timeout=120):
    """Waits until sandbox sid runs in rkt (its stage1 ready for apps, as PodSandboxStatus's
    verbose info says), not only READY: RunPodSandbox answers before rkt made the pod."""
    import json
    pb, _ = stubs()

    def running():
        st = rs.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid, verbose=True),
                                 timeout=10)
        return json.loads(st.info["info"]).get("phase") == "running"
    return wait_for("sandbox %s running" % (name or sid[:12]), running, timeout=timeout)


def wait_answering(rs, timeout=30):
    """Waits until the daemon behind the RuntimeService stub rs answers Version: after a
    restart, grpc may first try a connection of the killed daemon's."""
    import grpc
    pb, _ = stubs()

    def answers():
        try:
            return rs.Version(pb.VersionRequest(), timeout=5)
        except grpc.RpcError:
            return False
    return wait_for("the restarted daemon answering", answers, timeout=timeout)


# ---- The real rkt 1.30.0 in a private systemd host ----

SHARED_RKT = os.path.join(SOURCE_DIR, "..", "shared", "rkt")
REGISTRY = os.path.join(SOURCE_DIR, "tests", "lib", "registry")
PUSH_IMAGE = os.path.join(SOURCE_DIR, "tests", "lib", "push-image")
_real_rkt = None


def _first_existing(*paths):
    for p in paths:
        if os.path.exists(p):
            return p
    return paths[-1]


def real_rkt():
    """(path, None) of the real rkt, built once by scripts/build-rkt (cached outside the
    tree), or (None, why) when it cannot be had here. $RKL_RKT names a built one."""
    global _real_rkt
    if _real_rkt is None:
        if os.environ.get("RKL_RKT"):
            _real_rkt = (os.environ["RKL_RKT"], None)
        else:
            own = os.path.join(SOURCE_DIR, "scripts", "build-rkt")
            build = _first_existing(own, os.path.join(SHARED_RKT, "build-rkt"))
            tarball = os.path.join(SHARED_RKT, "rkt-1.30.0.tar.gz")
            args = [build] + (["--source", tarball] if build == own and
                              os.path.exists(tarball) else [])
            r = subprocess.run(args, capture_output=True, text=True)
            path = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
            if r.returncode == 0 and os.access(path, os.X_OK):
                _real_rkt = (path, None)
            else:
                _real_rkt = (None, "%s failed (%d): %s" % (build, r.returncode,
                                                           r.stderr.strip()[-2000:]))
    return _real_rkt


_real_critest = None


def real_critest():
    """(path, None) of critest v1.26.1, built once by scripts/build-critest (cached outside
    the tree), or (None, why) when it cannot be had here. $RKL_CRITEST names a built one."""
    global _real_critest
    if _real_critest is None:
        if os.environ.get("RKL_CRITEST"):
            _real_critest = (os.environ["RKL_CRITEST"], None)
        else:
            tarball = os.path.join(SOURCE_DIR, "..", "shared", "critest",
                                   "cri-tools-1.26.1.tar.gz")
            r = subprocess.run([os.path.join(SOURCE_DIR, "scripts", "build-critest")] +
                               (["--source", tarball] if os.path.exists(tarball) else []),
                               capture_output=True, text=True)
            path = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
            if r.returncode == 0 and os.access(path, os.X_OK):
                _real_critest = (path, None)
            else:
                _real_critest = (None, "scripts/build-critest failed (%d): %s" % (
                    r.returncode, r.stderr.strip()[-2000:]))
    return _real_critest


def rkt_host_tool():
    """scripts/rkt-host, or the shared env-start/env-stop pair it was copied from."""
    own = os.path.join(SOURCE_DIR, "scripts", "rkt-host")
    if os.path.exists(own):
        return [own, "start"], [own, "stop"]
    return [os.path.join(SHARED_RKT, "env-start")], [os.path.join(SHARED_RKT, "env-stop")]


CNI_PLUGINS = "/usr/lib/cni"  # Debian's containernetworking-plugins


def write_cni_config(directory, subnet, name="podnet", bridge="cni0", version="1.0.0"):
    """Writes DIRECTORY/net.d/10-NAME.conflist, as a cluster network's installer would: a
    bridge with host-local addresses from subnet (kept in DIRECTORY/ipam, so that a test's
    leftovers stay its own), then portmap for host ports and bandwidth for the
    annotations. Returns the net.d directory."""
    import json
    conf = {
        "cniVersion": version, "name": name,
        "plugins": [
            {"type": "bridge", "bridge": bridge, "isGateway": True, "ipMasq": False,
             "hairpinMode": True,
             "ipam": {"type": "host-local", "subnet": subnet,
                      "dataDir": os.path.join(directory, "ipam"),
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
            {"type": "bandwidth", "capabilities": {"bandwidth": True}},
        ]}
    net_d = os.path.join(directory, "net.d")
    os.makedirs(net_d, exist_ok=True)
    with open(os.path.join(net_d, "10-%s.conflist" % name), "w") as f:
        json.dump(conf, f, indent=2)
    return net_d


class RktDaemon(Daemon):
    """The daemon inside the host's namespaces (rkt's pod PIDs and cgroups are the host's).
    nsenter forks into the PID namespace and does not pass signals on: they go to its
    child, the daemon itself."""

    def daemon_pid(self):
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                             text=True).stdout.split()
        return int(out[0]) if out else None

    def send_signal(self, sig):
        pid = self.daemon_pid()
        if pid:
            os.kill(pid, sig)


class RktEnv:
    """A daemon driving the real rkt 1.30.0 (stage1 host) in a private systemd host (its own
    mount, PID, network, UTS, IPC and cgroup namespaces), with a docker-registry inside it on
    127.0.0.1:5000 holding busybox images, reached through --registry-mirror. Pod IPs live
    only in the host's network namespace: talk to them with self.run()."""

    def __init__(self, test, extra=(), pod_subnet="10.88.0.0/24", cni_bin_dirs=(CNI_PLUGINS,),
                 rkt_dir_size=None):
        rkt, why = real_rkt()
        if not rkt:
            test.skipTest("the real rkt cannot be built here: " + why)
        self.rkt_path = rkt
        self.dir = workdir(test)
        self.rkt_dir = os.path.join(self.dir, "rkt")
        self.rkt_dir_size = rkt_dir_size
        if rkt_dir_size:
            # rkt's data directory on a filesystem of its own, which a test can fill
            # (fill_rkt_dir). Mounted here, before the host copies the mount table, so that
            # both see the same one; unmounted once the host is gone (cleanups run last first).
            os.makedirs(self.rkt_dir)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=%s" % rkt_dir_size,
                            "rktlet-test-rkt", self.rkt_dir], check=True)
            test.addCleanup(subprocess.run, ["umount", "--lazy", self.rkt_dir],
                            capture_output=True)
        start, self._stop = rkt_host_tool()
        host = os.path.join(self.dir, "host")
        out = subprocess.run(start + [host], check=True, capture_output=True, text=True,
                             timeout=120).stdout
        self.pid1 = int(out.strip().splitlines()[-1])
        test.addCleanup(subprocess.run, self._stop + [host], capture_output=True)
        self.enter = ["nsenter", "-t", str(self.pid1), "-m", "-u", "-i", "-n", "-p", "-C"]
        # host-local keeps each pod's address in /var/lib/cni unless its configuration says
        # otherwise, and the host shares the machine's /var: pods that die with the host (its
        # teardown) never give theirs back. A host of its own keeps its own, gone with it.
        self.run("sh", "-c", "mkdir -p /var/lib/cni && "
                 "mount -t tmpfs -o mode=0755,size=16m rktlet-test-cni /var/lib/cni")
        subprocess.run([REGISTRY, "start", self.dir, str(self.pid1)], check=True,
                       capture_output=True, timeout=60, cwd="/")
        test.addCleanup(subprocess.run, [REGISTRY, "stop", self.dir], capture_output=True)
        pushed = self.run(PYTHON, PUSH_IMAGE, "http://127.0.0.1:5000").stdout
        self.digests = dict(line.split() for line in pushed.splitlines())
        # The cluster network every node of these tests has: a bridge in the host's network
        # namespace with a /24 of its own, and host ports through portmap.
        self.pod_net = ipaddress.ip_network(pod_subnet)
        self.cni_dir = write_cni_config(os.path.join(self.dir, "cni"), str(self.pod_net))
        cni = []
        for d in cni_bin_dirs:
            cni += ["--cni-bin-dir", d]
        self.daemon = RktDaemon(self.dir, rkt_path=rkt, extra=[
            "--cni-conf-dir", self.cni_dir] + cni + [
            "--registry-mirror", "docker.io=http://127.0.0.1:5000",
            # Real rkt leaves about 1 sandbox in 36 never ready (docs/rkt.md, 'Quirks');
            # ready takes 1-2 s here, so a retry after 20 s fits in the tests' waits.
            "--sandbox-ready-timeout", "20"] + list(extra))
        test.addCleanup(self.cleanup)
        keep_log(test, self.daemon)

    def start(self, unit=None):
        """Starts the daemon; with unit, as a scope of that name in the host's system.slice
        (systemd-run --scope execs it: the same PID), with its own CPU, memory and pids
        cgroups, as a runtime installed as a service has."""
        scope = [] if not unit else [
            "systemd-run", "--quiet", "--scope", "--unit=" + unit, "--slice=system.slice",
            "-p", "CPUAccounting=yes", "-p", "MemoryAccounting=yes", "-p", "TasksAccounting=yes"]
        self.daemon.start(wrapper=self.enter + scope)
        if unit:
            # The host's systemd makes a unit no cpu or cpuacct cgroup on v1 (docs/rkt.md,
            # 'Cgroups'): the daemon gets its own there too, as kubelet gives itself its
            # --kubelet-cgroups, so that its CPU is its own. Its PID in the host's namespace is
            # the last of NSpid.
            with open("/proc/%d/status" % self.daemon.daemon_pid()) as f:
                pid = [x.split()[-1] for x in f if x.startswith("NSpid:")][0]
            self.run("sh", "-c", "for c in cpu cpuacct; do d=/sys/fs/cgroup/$c/system.slice/%s; "
                     "[ -d /sys/fs/cgroup/$c ] || continue; mkdir -p $d && "
                     "echo %s > $d/cgroup.procs; done" % (unit, pid))
        return self

    def cleanup(self):
        self.daemon.stop(signal.SIGKILL)
        # The host's PID 1 goes next, and every pod with it.

    def run(self, *cmd, check=True, timeout=60):
        """Runs cmd inside the host's namespaces (from /, which exists in both). A failure
        says what the command printed: a test's traceback is all CI shows."""
        r = subprocess.run(self.enter + list(cmd), capture_output=True, text=True,
                           timeout=timeout, cwd="/")
        if check and r.returncode != 0:
            raise AssertionError("%s: exit status %d: %s%s" % (
                " ".join(cmd), r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        return r

    def rkt(self, *args, check=True):
        return self.run("env", "RKT_EXPERIMENT_APP=true", self.rkt_path,
                        "--dir=" + self.rkt_dir, *args, check=check)

    def fill_rkt_dir(self):
        """Fills rkt's data directory's filesystem (rkt_dir_size), and keeps it full until
        free_rkt_dir(): shrunk to what it holds, then a file takes the rest (so that no RAM
        goes to the filling), and takes again whatever is freed meanwhile (an rm of a pod
        still under way, say) every few milliseconds."""
        import threading
        st = os.statvfs(self.rkt_dir)
        for margin in (1, 2, 4, 8, 16):  # what it holds may grow meanwhile
            used = (st.f_blocks - st.f_bfree) * st.f_frsize
            r = subprocess.run(["mount", "-o", "remount,size=%d" % (used + (margin << 20)),
                                self.rkt_dir], capture_output=True)
            if r.returncode == 0:
                break
            st = os.statvfs(self.rkt_dir)
        f = open(os.path.join(self.rkt_dir, "rktlet-test-filler"), "wb", buffering=0)

        def top_up():
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass  # ENOSPC: full
        top_up()
        self._filling = threading.Event()

        def keep_full():
            while not self._filling.wait(0.005):
                top_up()
            f.close()
        self._filler = threading.Thread(target=keep_full, daemon=True)
        self._filler.start()

    def free_rkt_dir(self):
        if getattr(self, "_filler", None):
            self._filling.set()
            self._filler.join()
            self._filler = None
        try:
            os.unlink(os.path.join(self.rkt_dir, "rktlet-test-filler"))
        except FileNotFoundError:
            pass
        subprocess.run(["mount", "-o", "remount,size=%s" % self.rkt_dir_size, self.rkt_dir],
                       check=True)

    def cni_leftovers(self):
        """What pods' networks hold in the host: host-local's address files, veths, and
        portmap's per-pod iptables chains. Empty once every sandbox is gone."""
        return cni_leftovers(self.run, os.path.join(os.path.dirname(self.cni_dir), "ipam"))


def cni_leftovers(run, ipam_dir):
    leases = []
    for root, _, files in os.walk(ipam_dir):
        leases += [os.path.join(root, f) for f in files
                   if not f.startswith("last_reserved_ip") and f != "lock"]
    # The bridge plugin names the host's end of a pod's pair veth<hex>; other veths (a
    # test's wire between two hosts) are not pods'.
    veths = [name for name in (line.split(":")[1].strip().split("@")[0] for line in
                               run("ip", "-o", "link", "show", "type", "veth").stdout.splitlines())
             if name.startswith("veth")]
    rules = [line for line in run("iptables-save", "-t", "nat").stdout.splitlines()
             if "CNI-DN-" in line]
    return leases + veths + rules
