#!/usr/bin/python3
"""Replays the command sequences of a real rkt 1.30.0 (docs/rkt.md) against rkt-sim, under a
private systemd service manager (tests/lib/systemd-env), and checks outputs, exit codes, files,
times, lock semantics and the documented quirks. Standard library only."""

import ctypes
import fcntl
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

SRC = os.environ.get("RKL_SOURCE_DIR",
                     os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
SIM = os.environ.get("RKT_SIM",
                     os.path.join(os.environ.get("RKL_BUILD_DIR", SRC + "/build"), "rkt-sim"))
SYSTEMD_ENV = os.path.join(SRC, "tests/lib/systemd-env")
MAKE_IMAGES = os.path.join(SRC, "tests/lib/make-test-images")
STAGE1_TREE = "deps-sha512-7a3ee81cbd4c8d6ef4e7cde6a3e9d1b3a58ea9b2c8e4b64b7a4bbf6e0ab3b2d1"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

IN_CREATE, IN_CLOSE_WRITE, IN_MODIFY, IN_DELETE = 0x100, 0x8, 0x2, 0x200


class Inotify:
    """Just enough inotify (through libc) to see the events rkt's readers rely on."""

    def __init__(self, path, mask):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0
        assert self.libc.inotify_add_watch(self.fd, path.encode(), mask) >= 0

    def events(self):
        out = []
        try:
            buf = os.read(self.fd, 65536)
        except BlockingIOError:
            return out
        i = 0
        while i < len(buf):
            _, mask, _, n = struct.unpack_from("iIII", buf, i)
            name = buf[i + 16:i + 16 + n].rstrip(b"\0").decode()
            out.append((mask, name))
            i += 16 + n
        return out

    def close(self):
        os.close(self.fd)


class RktSim(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rkt-sim-test-")
        cls.envdir = os.path.join(cls.tmp, "sd")
        cls.data = os.path.join(cls.tmp, "data")
        cls.images = os.path.join(cls.tmp, "images")
        cls.logs = os.path.join(cls.tmp, "logs")
        cls.faults = os.path.join(cls.tmp, "faults")
        os.makedirs(cls.logs)
        open(cls.faults, "w").close()
        subprocess.run([SYSTEMD_ENV, "start", cls.envdir], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([MAKE_IMAGES, cls.images], check=True, stdout=subprocess.DEVNULL)
        cls.env = dict(os.environ)
        cls.env.update({
            "XDG_RUNTIME_DIR": os.path.join(cls.envdir, "xdg"),
            "RKT_EXPERIMENT_APP": "true",
            "RKT_EXPERIMENT_ATTACH": "true",
            "RKT_SIM_IMAGES": cls.images,
            "RKT_SIM_FAULTS": cls.faults,
        })
        cls.env.pop("RKT_SIM_PROFILE", None)
        cls.units = 0
        # rktlet's global flags, printed the way it prints them.
        cls.g = ["--debug=false", "--dir=" + cls.data, "--insecure-options=image,ondisk"]
        r = cls.rkt(["image"] + cls.g + ["fetch", "--pull-policy=update", "--full=true",
                                         "docker://busybox"])
        assert r.returncode == 0, r.stderr
        cls.busybox = r.stdout.strip().splitlines()[-1]

    @classmethod
    def tearDownClass(cls):
        subprocess.run([SYSTEMD_ENV, "stop", cls.envdir], stdout=subprocess.DEVNULL)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def rkt(cls, args, env=None, timeout=30):
        e = dict(cls.env)
        e.update(env or {})
        return subprocess.run([SIM] + args, env=e, capture_output=True, text=True, timeout=timeout)

    def app(self, sub, *args, **kw):
        return self.rkt(["app"] + self.g + [sub] + list(args), **kw)

    def cmd(self, sub, *args, **kw):
        return self.rkt([sub] + self.g + list(args), **kw)

    def ok(self, r):
        self.assertEqual(r.returncode, 0,
                         "rc=%d stdout=%r stderr=%r" % (r.returncode, r.stdout, r.stderr))
        return r

    def faults_set(self, text):
        with open(self.faults, "w") as f:
            f.write(text)

    def systemctl(self, *args):
        return subprocess.run(["systemctl", "--user"] + list(args), env=self.env,
                              capture_output=True, text=True)

    def sandbox(self, *extra, wait_ready=True, setenv=()):
        """systemd-run ... rkt app sandbox, as rktlet does it; returns (uuid, unit)."""
        type(self).units += 1
        unit = "rkt-sim-test-%d-%d.service" % (os.getpid(), self.units)
        uuid_file = os.path.join(self.tmp, unit + ".uuid")
        log = os.path.join(self.tmp, unit + ".log")
        argv = ["systemd-run", "--user", "--unit=" + unit, "--service-type=notify",
                "-p", "CollectMode=inactive-or-failed",
                "-p", "StandardOutput=append:" + log, "-p", "StandardError=append:" + log]
        for k in ("RKT_EXPERIMENT_APP", "RKT_EXPERIMENT_ATTACH", "RKT_SIM_IMAGES",
                  "RKT_SIM_FAULTS"):
            argv.append("--setenv=%s=%s" % (k, self.env[k]))
        argv += ["--setenv=" + e for e in setenv]
        argv += ["--no-block"] if not wait_ready else []
        argv += [SIM, "app"] + self.g + ["sandbox", "--uuid-file-save=" + uuid_file] + list(extra)
        r = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        for _ in range(200):
            if os.path.exists(uuid_file) and os.path.getsize(uuid_file) > 0:
                break
            time.sleep(0.02)
        with open(uuid_file) as f:
            uuid = f.read().strip()
        self.assertRegex(uuid, UUID_RE)
        if wait_ready:
            self.ok(self.cmd("status", "--wait-ready=5s", uuid))
        return uuid, unit

    def pod(self, uuid, state="run"):
        return os.path.join(self.data, "pods", state, uuid)

    def upper(self, uuid):
        return os.path.join(self.pod(uuid), "overlay", STAGE1_TREE, "upper")

    def status_file(self, uuid, name):
        return os.path.join(self.upper(uuid), "rkt", "status", name)

    def app_status(self, uuid, name):
        r = self.ok(self.app("status", uuid, "--app=" + name, "--format=json"))
        return json.loads(r.stdout)

    def pod_status(self, uuid):
        return json.loads(self.ok(self.cmd("status", "--format=json", uuid)).stdout)

    def wait_exited(self, uuid, timeout=5):
        self.ok(self.cmd("status", "--wait=%ds" % timeout, uuid))

    def locked(self, path):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)

    def unit_cgroup(self, uuid):
        with open(os.path.join(self.pod(uuid), "ppid")) as f:
            ppid = f.read().strip()
        with open("/proc/%s/cgroup" % ppid) as f:
            lines = f.read().splitlines()
        named = [ln.split(":", 2)[2] for ln in lines if ":name=systemd:" in ln]
        return named[0] if named else [ln[3:] for ln in lines if ln.startswith("0::")][0]

    def app_procs(self, uuid, app):
        """The app's cgroup.procs: name=systemd on v1/hybrid, the cgroup2 root otherwise."""
        for h in ("systemd", "unified", ""):
            p = "/sys/fs/cgroup/%s%s/payload/system.slice/%s.service/cgroup.procs" % (
                h, self.unit_cgroup(uuid), app)
            if os.path.exists(p):
                return p
        self.fail("no cgroup for app " + app)

    def add_start(self, uuid, name, *args, image=None):
        self.ok(self.app("add", uuid, image or self.busybox, "--name=" + name, *args))
        self.ok(self.app("start", uuid, "--app=" + name))

    # ---- tests ----

    def test_01_version_and_gates(self):
        r = self.ok(self.rkt(["version"]))
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "rkt Version: 1.30.0")
        self.assertIn("Simulator: rkt-sim (test double, not rkt)", lines)
        r = self.rkt(["app", "list", "x"], env={"RKT_EXPERIMENT_APP": ""})
        self.assertEqual(r.returncode, 254)
        self.assertIn('unknown command "app"', r.stderr)
        r = self.rkt(["app"] + self.g + ["add", "x", "y", "--stdin=stream"],
                     env={"RKT_EXPERIMENT_ATTACH": ""})
        self.assertEqual(r.returncode, 254)
        self.assertIn("unknown flag: --stdin", r.stderr)
        r = self.app("list", "x", "--format=json")
        self.assertEqual(r.returncode, 254)
        self.assertIn("Error: unknown flag: --format", r.stderr)
        # Outside a systemd unit, like real rkt's stage1.
        r = self.app("sandbox")
        self.assertEqual(r.returncode, 254)
        self.assertIn("error calling sd_pid_get_unit", r.stderr)

    def test_02_images(self):
        self.assertRegex(self.busybox, r"^sha512-[0-9a-f]{64}$")
        again = self.ok(self.cmd("image", "fetch", "--full",
                                 "docker://docker.io/library/busybox:latest"))
        self.assertEqual(again.stdout.strip().splitlines()[-1], self.busybox)
        tag = self.ok(self.rkt(["image"] + self.g + ["fetch", "docker://busybox:1.36"]))
        short = tag.stdout.strip().splitlines()[-1]
        self.assertRegex(short, r"^sha512-[0-9a-f]{32}$")
        nr = self.ok(self.rkt(["image"] + self.g + ["fetch", "--full", "docker://rktsim/nonroot"]))
        nr_id = nr.stdout.strip().splitlines()[-1]
        images = json.loads(
            self.ok(self.rkt(["image"] + self.g + ["list", "--format=json"])).stdout)
        by_id = {i["id"]: i for i in images}
        self.assertIn(self.busybox, by_id)
        self.assertEqual(by_id[self.busybox]["name"], "registry-1.docker.io/library/busybox:latest")
        self.assertEqual(set(by_id[self.busybox]),
                         {"id", "name", "import_time", "last_used_time", "size"})
        self.assertGreater(by_id[self.busybox]["import_time"], 10**18)  # ns
        m = json.loads(self.ok(self.rkt(["image"] + self.g + ["cat-manifest", nr_id])).stdout)
        ann = {a["name"]: a["value"] for a in m["annotations"]}
        self.assertEqual(ann["appc.io/docker/repository"], "rktsim/nonroot")
        self.assertEqual(json.loads(ann["appc.io/docker/entrypoint"]), ["/bin/sleep"])
        self.assertEqual(m["app"]["user"], "1000")
        r = self.rkt(["image"] + self.g + ["fetch", "--pull-policy=never", "docker://nothere"])
        self.assertEqual(r.returncode, 254)
        r = self.rkt(["image"] + self.g + ["fetch", "docker://nothere:1"])
        self.assertEqual(r.returncode, 254)
        # file:// takes a real ACI: export the blob of busybox and fetch it back.
        blob = os.path.join(self.data, "cas/blob/sha512", self.busybox[7:9], self.busybox)
        r = self.ok(self.rkt(["image"] + self.g + ["fetch", "--full", "file://" + blob]))
        self.assertEqual(r.stdout.strip().splitlines()[-1], self.busybox)
        r = self.ok(self.rkt(["image"] + self.g + ["rm", short]))
        self.assertIn("successfully removed", r.stdout)

    def test_03_pod_layout_lock_and_ready(self):
        uuid, unit = self.sandbox(
            "--hostname=h1", "--port=http:tcp:80:0.0.0.0:8080",
            "--user-annotation=k8s.io/reserved/pod-uid=u1", "--user-label=app=x",
            "--annotation=coreos.com/rkt/experiment/logmode=k8s-plain",
            "--annotation=coreos.com/rkt/experiment/kubernetes-log-dir=" + self.logs)
        p = self.pod(uuid)
        for f in ("pod", "pod-created", "pod.lck", "stage1TreeStoreID", "runtime-config", "ppid",
                  "subcgroup", "net-info.json", "netns", "stage1/.#rootfs.lck", "stage1/manifest",
                  "overlay-prepared"):
            self.assertTrue(os.path.exists(os.path.join(p, f)), f)
        self.assertEqual(os.readlink(os.path.join(p, "flavor")), "host")
        self.assertEqual(open(os.path.join(p, "stage1TreeStoreID")).read(), STAGE1_TREE)
        main_pid = self.systemctl("show", "-p", "MainPID", "--value", unit).stdout.strip()
        self.assertEqual(open(os.path.join(p, "ppid")).read().strip(), main_pid)
        self.assertTrue(open(os.path.join(p, "subcgroup")).read().endswith("/" + unit))
        self.assertEqual(os.readlink(os.path.join(self.upper(uuid), "rkt/supervisor-status")),
                         "ready")
        self.assertEqual(os.readlink(os.path.join(p, "stage1/rootfs/rkt/supervisor-status")),
                         "ready")
        self.assertTrue(self.locked(p))
        m = json.load(open(os.path.join(p, "pod")))
        self.assertEqual(m["acKind"], "PodManifest")
        self.assertIn({"name": "coreos.com/rkt/stage1/mutable", "value": "true"}, m["annotations"])
        self.assertEqual(m["userAnnotations"], {"k8s.io/reserved/pod-uid": "u1"})
        self.assertEqual(m["ports"][0]["podPort"]["port"], 80)
        nets = json.load(open(os.path.join(p, "net-info.json")))
        self.assertRegex(nets[0]["ip"], r"^172\.16\.28\.\d+$")
        st = self.pod_status(uuid)
        self.assertEqual(st["state"], "running")
        self.assertEqual(st["networks"][0]["ip"], nets[0]["ip"])
        self.assertEqual(st["created_at"], int(os.stat(os.path.join(p, "pod-created")).st_mtime))
        self.assertLess(st["created_at"], 10**11)  # pod times are seconds
        self.assertEqual(st["user_labels"], {"app": "x"})
        text = self.ok(self.cmd("status", uuid)).stdout
        self.assertIn("state=running\n", text)
        self.assertIn("pid=%s\nexited=false" % main_pid, text)
        self.assertRegex(text, r"created=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \+0000 UTC")
        self.ok(self.systemctl("stop", unit))
        with open(os.path.join(self.tmp, unit + ".log")) as f:
            self.assertIn('group "rkt" not found, will use default gid', f.read())

    def test_04_apps_status_files_and_quirks(self):
        uuid, unit = self.sandbox(
            "--annotation=coreos.com/rkt/experiment/logmode=k8s-plain",
            "--annotation=coreos.com/rkt/experiment/kubernetes-log-dir=" + self.logs)
        status_dir = os.path.join(self.upper(uuid), "rkt/status")
        ino = Inotify(status_dir, IN_CREATE | IN_CLOSE_WRITE | IN_MODIFY | IN_DELETE)
        log = "web-%s.log" % uuid[:8]
        self.ok(self.app("add", uuid, "docker://busybox", "--name=web", "--stdin=stream",
                         "--stdout=stream", "--stderr=stream",
                         "--annotation=coreos.com/rkt/experiment/kubernetes-log-path=" + log,
                         "--user-annotation=k8s-container=web", "--user-label=tier=test",
                         "--environment=GREETING=hi", "--exec=/bin/sh", "--", "-c",
                         "echo $GREETING; echo oops >&2; exec sleep 1000", "---"))
        self.ok(self.app("add", uuid, self.busybox, "--name=idle", "--exec=/bin/sleep", "--",
                         "1000", "---"))
        st = self.app_status(uuid, "web")
        self.assertEqual(st["state"], "created")
        self.assertEqual(st["created_at"],
                         os.stat(os.path.join(status_dir, "web-created")).st_mtime_ns)
        self.assertEqual(st["user_annotations"], {"k8s-container": "web"})
        self.assertNotIn("started_at", st)
        # Quirk: status/list use the immutable-pod rules; a created app shows "running".
        ps = self.pod_status(uuid)
        self.assertEqual([a["state"] for a in ps["apps"]], ["running", "running"])
        self.assertEqual(ps["app_names"], ["web", "idle"])
        self.ok(self.app("start", uuid, "--app=web"))
        self.ok(self.app("start", uuid, "--app=idle"))
        st = self.app_status(uuid, "web")
        self.assertEqual(st["state"], "running")
        self.assertEqual(st["started_at"],
                         os.stat(os.path.join(status_dir, "web-started")).st_mtime_ns)
        time.sleep(0.2)
        lines = open(os.path.join(self.logs, log)).read().splitlines()
        self.assertRegex(lines[0], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z stdout hi$")
        # As the patched rkt (packaging/rkt/stderr-fd.patch): stderr labelled stderr.
        self.assertTrue(any(re.match(r"^\S+ stderr oops$", ln) for ln in lines), lines)
        # The app runs chrooted in its own cgroup below the unit's.
        with open(os.path.join(self.pod(uuid), "subcgroup")) as f:
            self.assertTrue(self.unit_cgroup(uuid).endswith("/" + f.read()))
        with open(self.app_procs(uuid, "web")) as f:
            pids = f.read().split()
        self.assertTrue(pids)
        self.assertEqual(os.readlink("/proc/%s/root" % pids[0]),
                         os.path.realpath(os.path.join(self.pod(uuid),
                                                       "stage1/rootfs/opt/stage2/web/rootfs")))
        lst = self.ok(self.app("list", uuid)).stdout.splitlines()
        self.assertEqual(lst[0], "NAME\tSTATE")
        self.assertIn("web\trunning", lst)
        # exec/enter pass the exit code through and run with the app's env.
        r = self.app("exec", "--app=web", uuid, "/bin/sh", "-c", "echo $GREETING; exit 3")
        self.assertEqual((r.returncode, r.stdout), (3, "hi\n"))
        r = self.cmd("enter", uuid, "/bin/true")
        self.assertEqual(r.returncode, 254)
        self.assertIn('specify app using "rkt enter --app= ..."', r.stderr)
        self.assertIn("pod contains multiple apps", r.stderr)
        # app stop: SIGTERM, exit file holds the bare signal number.
        ino.events()
        self.ok(self.app("stop", uuid, "--app=web"))
        self.assertEqual(open(os.path.join(status_dir, "web")).read(), "15\n")
        evs = ino.events()
        self.assertIn((IN_CREATE, "web"), evs)
        self.assertIn((IN_CLOSE_WRITE, "web"), evs)
        st = self.app_status(uuid, "web")
        self.assertEqual((st["state"], st["exit_code"]), ("exited", 15))
        self.assertEqual(st["finished_at"], os.stat(os.path.join(status_dir, "web")).st_mtime_ns)
        ps = self.pod_status(uuid)
        web = [a for a in ps["apps"] if a["name"] == "web"][0]
        self.assertEqual((web["state"], web["exit_code"]), ("exited", 15))
        self.assertNotIn("finished_at", web)  # immutable-pod rules
        # app start of an exited app restarts it.
        old = os.stat(os.path.join(status_dir, "web-started")).st_mtime_ns
        time.sleep(0.01)
        self.ok(self.app("start", uuid, "--app=web"))
        self.assertFalse(os.path.exists(os.path.join(status_dir, "web")))
        self.assertGreater(os.stat(os.path.join(status_dir, "web-started")).st_mtime_ns, old)
        self.assertEqual(self.app_status(uuid, "web")["state"], "running")
        # app rm of a running app: stops it, leaves -created/-started, and removes its own
        # layers under overlay/<image tree>; the other app from the same image keeps its
        # rootfs (packaging/rkt/app-rm-shared-image.patch: unpatched rkt removed the tree).
        self.ok(self.app("rm", uuid, "--app=web"))
        self.assertEqual(sorted(os.listdir(status_dir)),
                         ["idle-created", "idle-started", "web-created", "web-started"])
        tree = os.path.join(self.pod(uuid), "overlay", "deps-" + self.busybox)
        self.assertFalse(os.path.exists(os.path.join(tree, "upper", "web")))
        self.assertTrue(os.path.exists(os.path.join(tree, "upper", "idle")))
        r = self.cmd("enter", "--app=idle", uuid, "/bin/true")
        self.assertEqual(r.returncode, 0)
        r = self.app("rm", uuid, "--app=web")
        self.assertEqual(r.returncode, 254)
        self.assertIn('nonexistent app "web"', r.stderr)
        m = json.load(open(os.path.join(self.pod(uuid), "pod")))
        self.assertEqual([a["name"] for a in m["apps"]], ["idle"])
        ino.close()
        self.ok(self.systemctl("stop", unit))

    def test_05_stop_rm_and_ip(self):
        uuid, unit = self.sandbox()
        self.add_start(uuid, "ticker", "--exec=/bin/sleep", "--", "1000", "---")
        self.ok(self.app("add", uuid, self.busybox, "--name=never", "--exec=/bin/true"))
        ip = json.load(open(os.path.join(self.pod(uuid), "net-info.json")))[0]["ip"]
        r = self.ok(self.cmd("stop", uuid))
        self.assertEqual(r.stdout.strip(), '"%s"' % uuid)
        self.wait_exited(uuid)
        p = self.pod(uuid)
        self.assertFalse(self.locked(p))
        self.assertFalse(os.path.exists(os.path.join(p, "stage1/.#rootfs.lck")))
        self.assertFalse(os.path.lexists(os.path.join(self.upper(uuid), "rkt/supervisor-status")))
        self.assertEqual(open(self.status_file(uuid, "ticker")).read(), "15\n")
        self.assertEqual(self.pod_status(uuid)["state"], "exited")
        # After run, an app that never ran is reported exited too (mutable rules).
        self.assertEqual(self.app_status(uuid, "never")["state"], "exited")
        text = self.ok(self.cmd("status", uuid)).stdout
        self.assertIn("exited=true", text)
        self.assertIn("app-ticker=15", text)
        r = self.ok(self.cmd("stop", uuid))
        self.assertIn('pod "%s" is already stopped' % uuid, r.stdout)
        r = self.ok(self.app("stop", uuid, "--app=ticker"))
        self.assertIn("is already stopped", r.stdout)
        # stop does not free the IP; rm does.
        self.assertTrue(os.path.exists(os.path.join(self.data, "networks/default", ip)))
        r = self.app("add", uuid, self.busybox, "--name=late")
        self.assertEqual(r.returncode, 254)
        r = self.ok(self.cmd("rm", uuid))
        self.assertEqual(r.stdout.strip(), '"%s"' % uuid)
        self.assertFalse(os.path.exists(os.path.join(self.data, "networks/default", ip)))
        self.assertFalse(os.path.exists(p))
        r = self.cmd("stop", uuid)
        self.assertEqual(r.returncode, 254)
        self.assertIn('stop: cannot get pod: no matches found for "%s"' % uuid, r.stderr)

    def test_06_systemctl_stop_and_force(self):
        uuid, unit = self.sandbox()
        self.add_start(uuid, "a", "--exec=/bin/sleep", "--", "1000", "---")
        self.ok(self.systemctl("stop", unit))
        self.wait_exited(uuid)
        self.assertEqual(open(self.status_file(uuid, "a")).read(), "15\n")
        self.ok(self.cmd("rm", uuid))
        # --force: SIGKILL; no exit file, nobody removes supervisor-status or the nspawn lock.
        uuid, unit = self.sandbox()
        self.add_start(uuid, "b", "--exec=/bin/sleep", "--", "1000", "---")
        self.ok(self.cmd("stop", "--force", uuid))
        self.wait_exited(uuid)
        self.assertFalse(os.path.exists(self.status_file(uuid, "b")))
        st = self.app_status(uuid, "b")
        self.assertEqual(st["state"], "exited")
        self.assertNotIn("exit_code", st)
        self.ok(self.cmd("rm", uuid))
        # --net=host: no net-info.json, no IP.
        uuid, unit = self.sandbox("--net=host")
        self.assertFalse(os.path.exists(os.path.join(self.pod(uuid), "net-info.json")))
        self.assertNotIn("networks", self.pod_status(uuid))
        self.ok(self.cmd("stop", uuid))
        self.wait_exited(uuid)
        # gc: mark moves to exited-garbage, sweep deletes after the grace period.
        self.ok(self.cmd("gc", "--mark-only"))
        self.assertTrue(os.path.exists(self.pod(uuid, "exited-garbage")))
        self.assertEqual(self.pod_status(uuid)["state"], "exited garbage")
        self.ok(self.cmd("gc", "--grace-period=0s"))
        self.assertFalse(os.path.exists(self.pod(uuid, "exited-garbage")))

    def test_07_app_faults_users_and_oom(self):
        uuid, unit = self.sandbox()
        self.faults_set("app crash die 7\napp boom signal 9 after 50\n")
        self.add_start(uuid, "crash", "--exec=/bin/sleep", "--", "1000", "---")
        self.add_start(uuid, "boom", "--exec=/bin/sleep", "--", "1000", "---")
        self.faults_set("")
        self.add_start(uuid, "nr", image="docker://rktsim/nonroot")
        self.add_start(uuid, "badexec", "--exec=/no/such/binary")
        self.add_start(uuid, "hog", "--memory=16M", "--exec=/bin/dd", "--", "if=/dev/zero",
                       "of=/dev/null", "bs=64M", "count=4", "---")
        time.sleep(0.5)
        self.assertEqual(self.app_status(uuid, "crash")["exit_code"], 7)
        self.assertEqual(self.app_status(uuid, "boom")["exit_code"], 9)
        self.assertEqual(self.app_status(uuid, "badexec")["exit_code"], 203)
        self.assertEqual(self.app_status(uuid, "hog")["exit_code"], 9)
        oom = ("/sys/fs/cgroup/memory%s/payload/system.slice/hog.service/memory.oom_control"
               % self.unit_cgroup(uuid))
        if os.path.exists("/sys/fs/cgroup/memory"):
            with open(oom) as f:
                self.assertIn("oom_kill 1", f.read())
        with open(self.app_procs(uuid, "nr")) as f:
            pids = f.read().split()
        st = os.stat("/proc/%s" % pids[0])
        self.assertEqual((st.st_uid, st.st_gid), (1000, 1000))
        # app exec runs as root whatever the app's user, like rkt's enter.
        r = self.app("exec", "--app=nr", uuid, "/bin/id", "-u")
        self.assertEqual(r.stdout.strip(), "0")
        self.ok(self.systemctl("stop", unit))

    def test_08_command_faults(self):
        self.faults_set("status fail 254 injected failure\n")
        r = self.cmd("status", "00000000")
        self.assertEqual((r.returncode, r.stderr.strip()), (254, "injected failure"))
        self.faults_set("sandbox never-ready\n")
        uuid, unit = self.sandbox(wait_ready=False)
        r = self.cmd("status", "--wait-ready=300ms", uuid)
        self.assertEqual(r.returncode, 254)
        r = self.app("add", uuid, self.busybox, "--name=x")
        self.assertEqual(r.returncode, 254)
        self.assertIn("is not yet ready", r.stderr)
        self.faults_set("app add crash-after created\n")
        self.ok(self.cmd("status", "--wait-ready=5s", uuid))  # the fault was lifted
        r = self.app("add", uuid, self.busybox, "--name=half")
        self.assertEqual(r.returncode, -9)
        self.assertTrue(os.path.exists(self.status_file(uuid, "half-created")))
        m = json.load(open(os.path.join(self.pod(uuid), "pod")))
        self.assertEqual(m["apps"], [])
        # A sandbox that dies halfway leaves an aborted prepare, which gc collects.
        self.faults_set("sandbox crash-after prepare\n")
        before = set(os.listdir(os.path.join(self.data, "pods/prepare")))
        type(self).units += 1
        subprocess.run(["systemd-run", "--user", "--unit=crash-%d.service" % self.units, "--wait",
                        "--setenv=RKT_EXPERIMENT_APP=true",
                        "--setenv=RKT_SIM_FAULTS=" + self.faults,
                        SIM, "app"] + self.g + ["sandbox"],
                       env=self.env, capture_output=True, timeout=30)
        aborted = set(os.listdir(os.path.join(self.data, "pods/prepare"))) - before
        self.assertEqual(len(aborted), 1)
        crashed = aborted.pop()
        self.assertTrue(os.path.exists(os.path.join(self.pod(crashed, "prepare"), "pod")))
        self.assertEqual(self.pod_status(crashed)["state"], "aborted prepare")
        self.faults_set("")
        self.ok(self.cmd("gc", "--grace-period=0s"))
        self.assertFalse(os.path.exists(self.pod(crashed, "prepare")))
        self.assertFalse(os.path.exists(self.pod(crashed, "garbage")))
        self.faults_set("app list hang\n")
        with self.assertRaises(subprocess.TimeoutExpired):
            self.app("list", uuid, timeout=0.5)
        # A hung command whose caller died (a SIGKILLed daemon) does not stay behind.
        out = subprocess.run(["/bin/sh", "-c", '"$0" "$@" >/dev/null 2>&1 & echo $!; sleep 0.5',
                              SIM, "app"]
                             + self.g + ["list", uuid], env=self.env, capture_output=True,
                             text=True, check=True).stdout
        orphan = int(out.strip())
        deadline = time.monotonic() + 10
        while os.path.exists("/proc/%d" % orphan) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(os.path.exists("/proc/%d" % orphan))
        self.faults_set("")
        self.ok(self.systemctl("stop", unit))

    def test_09_stop_escalation(self):
        uuid, unit = self.sandbox(setenv=["RKT_SIM_STOP_TIMEOUT_MS=300"])
        self.add_start(uuid, "stubborn", "--exec=/bin/sh", "--", "-c",
                       "trap '' TERM; while true; do sleep 0.05; done", "---")
        time.sleep(0.1)
        t = time.monotonic()
        self.ok(self.app("stop", uuid, "--app=stubborn"))
        self.assertGreaterEqual(time.monotonic() - t, 0.25)
        self.assertEqual(self.app_status(uuid, "stubborn")["exit_code"], 9)
        # A client's own SIGKILL through the app's cgroup is seen like any exit.
        self.ok(self.app("start", uuid, "--app=stubborn"))
        time.sleep(0.1)
        with open(self.app_procs(uuid, "stubborn")) as f:
            pids = f.read().split()
        for pid in pids:
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass  # a `sleep 0.05` of the loop that ended after the listing
        for _ in range(50):
            if os.path.exists(self.status_file(uuid, "stubborn")):
                break
            time.sleep(0.02)
        self.assertEqual(open(self.status_file(uuid, "stubborn")).read(), "9\n")
        self.ok(self.systemctl("stop", unit))

    def test_09b_volumes_and_readonly(self):
        uuid, unit = self.sandbox()
        host = os.path.join(self.tmp, "hostvol")
        os.makedirs(host, exist_ok=True)
        with open(os.path.join(host, "in.txt"), "w") as f:
            f.write("from host\n")
        self.add_start(uuid, "v", "--readonly-rootfs=true",
                       "--mnt-volume=name=data,kind=host,source=%s,target=/data,readOnly=false"
                       % host,
                       "--mnt-volume=name=scratch,kind=empty,target=/scratch",
                       "--exec=/bin/sh", "--", "-c",
                       "cat /data/in.txt > /data/out.txt; echo x > /scratch/s; "
                       "touch /rootfile || echo ro > /data/ro; sleep 1000",
                       "---")
        time.sleep(0.3)
        with open(os.path.join(host, "out.txt")) as f:
            self.assertEqual(f.read(), "from host\n")
        with open(os.path.join(host, "ro")) as f:
            self.assertEqual(f.read(), "ro\n")
        st = self.app_status(uuid, "v")
        self.assertEqual(st["mounts"][0], {"name": "data", "container_path": "/data",
                                           "host_path": host, "read_only": False})
        r = self.ok(self.app("exec", "--app=v", uuid, "/bin/cat", "/scratch/s"))
        self.assertEqual(r.stdout, "x\n")
        self.ok(self.systemctl("stop", unit))

    def test_10_real_profile(self):
        uuid, unit = self.sandbox()
        t = time.monotonic()
        self.ok(self.app("list", uuid, env={"RKT_SIM_PROFILE": "real"}))
        self.assertGreaterEqual(time.monotonic() - t, 0.025)
        self.ok(self.systemctl("stop", unit))
        pods = {p["name"]: p for p in json.loads(self.ok(self.cmd("list", "--format=json")).stdout)}
        self.assertEqual(pods[uuid]["state"], "exited")

    def test_99_supervisor_logs_clean(self):
        """Sanitizer reports of the supervisors (sanitizer builds) land in the unit logs."""
        time.sleep(0.3)
        for name in os.listdir(self.tmp):
            if name.endswith(".service.log"):
                with open(os.path.join(self.tmp, name)) as f:
                    text = f.read()
                for bad in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
                    self.assertNotIn(bad, text, name + ":\n" + text)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("rkt-sim tests need root (chroot, cgroups, a private systemd)")
        sys.exit(77)
    unittest.main(verbosity=2)
