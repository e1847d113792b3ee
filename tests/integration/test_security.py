"""The container security context on the real rkt 1.30.0 (stage1 host), read from inside:
each container prints what its own first process has (id, /proc/self/status) into its log,
and ExecSync checks what a process there can do. Options rkt cannot express are refused
with INVALID_ARGUMENT naming the field. Skips, saying why, when rkt cannot be built here."""
import json
import os
import subprocess
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

BUSYBOX = "docker.io/library/busybox:latest"
NONROOT = "docker.io/rktsim/nonroot:latest"
CRICTL = os.environ.get("RKL_CRICTL",
                        "/var/cache/rktlet-test/cri-tools-1.26.1/bin/crictl")
PUSH_CRITEST_IMAGES = os.path.join(harness.SOURCE_DIR, "tests", "lib", "push-critest-images")
# What the first process sees, printed once, then it stays up for ExecSync.
REPORT = ("echo uid=$(id -u) gid=$(id -g) groups=$(id -G | tr ' ' ,); "
          "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; "
          "echo end; exec sleep 3600")

# Docker's 14 default capabilities as a CapEff mask; CAP_SYS_ADMIN (21), CAP_SYS_PTRACE (19).
DEFAULT_CAPS = 0xa80425fb
SYS_ADMIN = 1 << 21
SYS_PTRACE = 1 << 19
NET_ADMIN = 1 << 12
# Every capability this kernel has but CAP_SYS_RESOURCE (24), which systemd-nspawn 252 keeps
# from any pod.
with open("/proc/sys/kernel/cap_last_cap") as f:
    ALL_CAPS = ((1 << (int(f.read()) + 1)) - 1) & ~(1 << 24)


class RealRktSecurityTest(unittest.TestCase):
    def setUp(self):
        self.env = harness.RktEnv(self).start()
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.rs = pbg.RuntimeServiceStub(ch)
        im = pbg.ImageServiceStub(ch)
        for image in (BUSYBOX, NONROOT):
            im.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=image)), timeout=120)

    def run_pod(self, name, privileged=False):
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="sec"),
            hostname=name, log_directory=os.path.join(self.env.dir, "logs", name))
        cfg.linux.security_context.privileged = privileged
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=10).pod_sandbox_id
        harness.wait_sandbox_running(self.rs, sid, name)
        return sid, cfg

    def config(self, name, image=BUSYBOX, command=("sh", "-c", REPORT)):
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                image=pb.ImageSpec(image=image), log_path=name + ".log")
        cc.command.extend(command)
        return cc

    def create(self, pod, cc):
        sid, cfg = pod
        return self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=cc, sandbox_config=cfg), timeout=10).container_id

    def refused(self, pod, cc):
        with self.assertRaises(grpc.RpcError) as e:
            self.create(pod, cc)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        return e.exception.details()

    def start(self, pod, cc, report=True):
        """Starts cc and returns (container id, what its first process reported)."""
        cid = self.create(pod, cc)
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
        log = os.path.join(pod[1].log_directory, cc.log_path)
        end = "end" if report else ""

        def report():
            st = self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid),
                                         timeout=10).status
            if st.state == pb.CONTAINER_EXITED:
                raise AssertionError("%s exited %d: %s" % (cc.metadata.name, st.exit_code,
                                                           self.log_lines(log)))
            lines = self.log_lines(log)
            last["state"], last["lines"] = pb.ContainerState.Name(st.state), lines
            return (not end or end in lines) and st.state == pb.CONTAINER_RUNNING
        last = {}
        try:
            harness.wait_for("%s reported" % cc.metadata.name, report, timeout=60,
                             interval=0.2)
        except AssertionError as e:
            if not last:
                raise
            raise AssertionError("%s; it was %s, its log %r" % (e, last["state"],
                                                                last["lines"])) from None
        seen = {}
        for line in self.log_lines(log):
            if line.startswith("uid=") or line.startswith("try:"):
                seen.update(kv.split("=", 1) for kv in line.split() if "=" in kv)
            elif ":" in line:
                k, v = line.split(":", 1)
                seen[k] = v.strip()
        return cid, seen

    @staticmethod
    def log_records(path):
        """(stream, tag, text) of each CRI log line: "<time> <stream> <tag> <text>"."""
        try:
            with open(path) as f:
                return [tuple(line.rstrip("\n").split(" ", 3)[1:]) for line in f
                        if line.count(" ") >= 3]
        except FileNotFoundError:
            return []

    @staticmethod
    def log_lines(path):
        return [text for _, _, text in RealRktSecurityTest.log_records(path)]

    def exec(self, cid, *cmd):
        r = self.rs.ExecSync(pb.ExecSyncRequest(container_id=cid, cmd=list(cmd), timeout=10),
                             timeout=30)
        return r.exit_code, r.stdout.decode(), r.stderr.decode()

    def test_users_and_groups(self):
        pod = self.run_pod("users")
        # run_as_user that is not root: the app starts (its root directory is the image's
        # 0755, not 0700) and runs with that uid.
        # The image's /etc/group lists "app" (1000) in group 50000: that group is added,
        # as containerd does.
        cc = self.config("uid")
        cc.linux.security_context.run_as_user.value = 1000
        cc.linux.security_context.run_as_group.value = 2000
        cc.linux.security_context.supplemental_groups.extend([3000, 4000])
        cid, seen = self.start(pod, cc)
        self.assertEqual((seen["uid"], seen["gid"]), ("1000", "2000"))
        groups = {"2000", "3000", "4000", "50000"}
        self.assertEqual(set(seen["groups"].split(",")), groups)
        self.assertEqual(self.exec(cid, "id", "-u")[1], "1000\n")
        self.assertEqual(set(self.exec(cid, "id", "-G")[1].split()), groups)
        # Without run_as_group the user's own group from /etc/passwd (critest's "primary UID
        # belongs to some groups in the image" case).
        cc = self.config("uid-only")
        cc.linux.security_context.run_as_user.value = 1000
        cc.linux.security_context.supplemental_groups.append(1234)
        cid, seen = self.start(pod, cc)
        self.assertEqual((seen["uid"], seen["gid"]), ("1000", "1000"))
        self.assertEqual(self.exec(cid, "id", "-G")[1], "1000 1234 50000\n")
        # A uid the image does not name: gid 0, no group of the image's.
        cc = self.config("unnamed")
        cc.linux.security_context.run_as_user.value = 4242
        _, seen = self.start(pod, cc)
        self.assertEqual((seen["uid"], seen["gid"], seen["groups"]), ("4242", "0", "0"))
        # Not root: the image's root-owned files are not writable.
        self.assertNotEqual(self.exec(cid, "touch", "/etc/x")[0], 0)
        # The image's own user (User 1000:1000), with its entrypoint and working directory.
        cid, _ = self.start(pod, self.config("image-user", image=NONROOT, command=()),
                            report=False)
        self.assertEqual(self.exec(cid, "id", "-u")[1], "1000\n")
        self.assertEqual(self.exec(cid, "pwd")[1], "/home/app\n")
        # run_as_username from the image's /etc/passwd.
        cc = self.config("username")
        cc.linux.security_context.run_as_username = "app"
        cid, seen = self.start(pod, cc)
        self.assertEqual((seen["uid"], seen["gid"]), ("1000", "1000"))
        self.assertEqual(set(seen["groups"].split(",")), {"1000", "50000"})
        self.assertEqual(self.exec(cid, "id", "-nu")[1], "app\n")
        # A name the image does not have: the container fails, saying why.
        cc = self.config("nobody-here")
        cc.linux.security_context.run_as_username = "ghost"
        cid = self.create(pod, cc)

        def failed():
            info = json.loads(self.rs.ContainerStatus(pb.ContainerStatusRequest(
                container_id=cid, verbose=True), timeout=10).info["info"])
            return "ghost" in (info.get("lastError") or "")
        harness.wait_for("ghost refused", failed, timeout=60, interval=0.2)
        # run_as_group without a user is refused, naming the field.
        cc = self.config("group-only")
        cc.linux.security_context.run_as_group.value = 5
        self.assertIn("run_as_group", self.refused(pod, cc))

    def test_running_means_its_program_runs(self):
        """RUNNING is reported once the app runs its program, not while systemd's child
        (named "(sleep)") still sets it up with the manager's root and privileges."""
        pod = self.run_pod("exec")
        for i in range(3):
            cc = self.config("c%d" % i, command=("sleep", "3600"))
            cc.linux.security_context.run_as_user.value = 1000
            cid = self.create(pod, cc)
            self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
            info = {}

            def running():
                info.update(json.loads(self.rs.ContainerStatus(pb.ContainerStatusRequest(
                    container_id=cid, verbose=True), timeout=10).info["info"]))
                return info["phase"] == "running"
            harness.wait_for("running", running, timeout=60, interval=0.01)
            comm = self.env.run("cat", "/proc/%d/comm" % info["pid"]).stdout.strip()
            self.assertEqual(comm, "sleep")

    def test_mounts(self):
        pod = self.run_pod("mounts")
        data = os.path.join(self.env.dir, "data")
        os.makedirs(data)
        with open(os.path.join(data, "f"), "w") as f:
            f.write("hello\n")
        link = os.path.join(self.env.dir, "link")
        os.symlink(data, link)
        # A host path that is a symlink: its target is mounted.
        cc = self.config("link")
        cc.mounts.add(container_path="/data", host_path=link)
        cc.mounts.add(container_path="/ro", host_path=link, readonly=True)
        cid, _ = self.start(pod, cc)
        self.assertEqual(self.exec(cid, "cat", "/data/f")[1], "hello\n")
        self.assertEqual(self.exec(cid, "touch", "/data/g")[0], 0)
        self.assertTrue(os.path.exists(os.path.join(data, "g")))
        self.assertNotEqual(self.exec(cid, "touch", "/ro/h")[0], 0)
        # Bound recursively, as runc binds: a file system mounted below the host path is
        # seen too (packaging/rkt/volume-rbind.patch). Privately: what the host mounts there
        # after the container started is not.
        sub = os.path.join(data, "sub")
        os.makedirs(os.path.join(data, "later"))
        os.makedirs(sub)
        self.env.run("mount", "-t", "tmpfs", "-o", "size=1m", "rktlet-test-sub", sub)
        self.addCleanup(self.env.run, "umount", "-l", sub, check=False)
        self.env.run("sh", "-c", "echo below > %s/f" % sub)
        cc = self.config("rbind")
        cc.mounts.add(container_path="/data", host_path=data)
        cc.mounts.add(container_path="/ro", host_path=data, readonly=True)
        cid, _ = self.start(pod, cc)
        self.assertEqual(self.exec(cid, "cat", "/data/sub/f")[1], "below\n")
        self.assertEqual(self.exec(cid, "cat", "/ro/sub/f")[1], "below\n")
        later = os.path.join(data, "later")
        self.env.run("mount", "-t", "tmpfs", "-o", "size=1m", "rktlet-test-later", later)
        self.addCleanup(self.env.run, "umount", "-l", later, check=False)
        self.assertEqual(self.exec(cid, "grep", "-c", "rktlet-test-later", "/proc/mounts")[1],
                         "0\n")
        # Propagation other than private is refused, naming the mount.
        for prop in (pb.PROPAGATION_HOST_TO_CONTAINER, pb.PROPAGATION_BIDIRECTIONAL):
            cc = self.config("prop")
            cc.mounts.add(container_path="/data", host_path=data, propagation=prop)
            self.assertIn("mounts[0].propagation", self.refused(pod, cc))

    def test_readonly_rootfs(self):
        pod = self.run_pod("rofs")
        cc = self.config("ro")
        cc.linux.security_context.readonly_rootfs = True
        cid, _ = self.start(pod, cc)
        code, _, err = self.exec(cid, "touch", "/x")
        self.assertNotEqual(code, 0)
        self.assertIn("Read-only file system", err)
        cid, _ = self.start(pod, self.config("rw"))
        self.assertEqual(self.exec(cid, "touch", "/x")[0], 0)
        # critest's check: the app's own error, in its log as stderr.
        cc = self.config("ro-log", command=("sh", "-c", "touch test.go && echo Found"))
        cc.linux.security_context.readonly_rootfs = True
        cid = self.create(pod, cc)
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)
        log = os.path.join(pod[1].log_directory, cc.log_path)
        harness.wait_for("ro-log's error in its log", lambda: self.log_records(log),
                         timeout=60, interval=0.2)
        self.assertEqual(self.log_records(log),
                         [("stderr", "F", "touch: test.go: Read-only file system")])

    def test_capabilities(self):
        pod = self.run_pod("caps")
        cid, seen = self.start(pod, self.config("default"))
        self.assertEqual(int(seen["CapEff"], 16), DEFAULT_CAPS)
        # CAP_DAC_OVERRIDE: root writes in a directory of another user's.
        self.assertEqual(self.exec(cid, "mkdir", "/home/app/x")[0], 0)

        cc = self.config("add")
        cc.linux.security_context.capabilities.add_capabilities.extend(["SYS_ADMIN",
                                                                        "cap_sys_ptrace"])
        _, seen = self.start(pod, cc)
        self.assertEqual(int(seen["CapEff"], 16), DEFAULT_CAPS | SYS_ADMIN | SYS_PTRACE)

        cc = self.config("drop")
        cc.linux.security_context.capabilities.drop_capabilities.extend(["CHOWN", "KILL"])
        _, seen = self.start(pod, cc)
        self.assertEqual(int(seen["CapEff"], 16), DEFAULT_CAPS & ~(1 << 0) & ~(1 << 5))

        cc = self.config("drop-all")
        cc.linux.security_context.capabilities.drop_capabilities.append("ALL")
        cid, seen = self.start(pod, cc)
        self.assertEqual(int(seen["CapEff"], 16), 0)
        self.assertEqual(int(seen["CapBnd"], 16), 0)
        self.assertNotEqual(self.exec(cid, "mkdir", "/home/app/x")[0], 0)

        cc = self.config("drop-all-add-one")
        cc.linux.security_context.capabilities.drop_capabilities.append("ALL")
        cc.linux.security_context.capabilities.add_capabilities.append("CAP_CHOWN")
        _, seen = self.start(pod, cc)
        self.assertEqual(int(seen["CapEff"], 16), 1 << 0)

        # "ALL" is every capability, whatever is dropped beside it.
        cc = self.config("add-all")
        cc.linux.security_context.capabilities.add_capabilities.append("ALL")
        cc.linux.security_context.capabilities.drop_capabilities.append("ALL")
        _, seen = self.start(pod, cc)
        self.assertEqual(int(seen["CapEff"], 16) & ALL_CAPS, ALL_CAPS)

        # Any capability, also one systemd-nspawn keeps from a pod by default (what critest
        # checks with brctl), in a pod that is not privileged.
        cc = self.config("net-admin")
        cc.linux.security_context.capabilities.add_capabilities.append("NET_ADMIN")
        _, seen = self.start(pod, cc)
        self.assertEqual(int(seen["CapEff"], 16), DEFAULT_CAPS | NET_ADMIN)

        for bad in ("NOT-A-CAP", "CAP_NOT_ONE"):
            cc = self.config("bad")
            cc.linux.security_context.capabilities.add_capabilities.append(bad)
            self.assertIn("capabilities", self.refused(pod, cc))

    def test_privileged(self):
        pod = self.run_pod("priv", privileged=True)
        cc = self.config("priv")
        cc.linux.security_context.privileged = True
        cid, seen = self.start(pod, cc)
        # Every capability: CAP_NET_ADMIN too, which critest's privileged check (brctl addbr)
        # needs.
        caps = int(seen["CapEff"], 16)
        self.assertEqual(caps & ALL_CAPS, ALL_CAPS, hex(caps))
        # rkt keeps an allow-everything filter: sethostname, which rkt's default filter
        # refuses, works.
        self.assertEqual(self.exec(cid, "hostname", "priv0"), (0, "", ""))
        cc = self.config("net-admin")
        cc.linux.security_context.capabilities.add_capabilities.append("NET_ADMIN")
        _, seen = self.start(pod, cc)
        self.assertTrue(int(seen["CapEff"], 16) & NET_ADMIN, seen)
        # No kernel tunable is read-only or hidden from it.
        self.assertEqual(self.exec(cid, "sh", "-c", "echo priv > /proc/sys/kernel/hostname")[0],
                         0)
        self.assertEqual(self.exec(cid, "hostname")[1], "priv\n")

    def test_no_new_privs_and_paths(self):
        pod = self.run_pod("paths")
        plain, seen = self.start(pod, self.config("plain"))
        cid = plain
        self.assertEqual(seen["NoNewPrivs"], "0")  # root, as asked: rkt sets none
        self.assertEqual(self.exec(cid, "sh", "-c", "head -c1 /proc/timer_list")[0], 0)
        self.assertIn("app:", self.exec(cid, "cat", "/etc/group")[1])
        self.assertEqual(self.exec(cid, "touch", "/tmp/x")[0], 0)
        cc = self.config("nnp")
        cc.linux.security_context.no_new_privs = True
        # kubelet's defaults for a container that is not privileged (a directory, files,
        # and paths this kernel may not have).
        cc.linux.security_context.masked_paths.extend([
            "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
            "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
            "/etc/group"])
        cc.linux.security_context.readonly_paths.extend([
            "/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
            "/proc/sysrq-trigger", "/tmp"])
        cid, seen = self.start(pod, cc)
        self.assertEqual(seen["NoNewPrivs"], "1")
        code, out, _ = self.exec(cid, "sh", "-c", "cat /proc/timer_list")
        self.assertTrue(code != 0 or out == "", out[:200])
        self.assertEqual(self.exec(cid, "ls", "/sys/firmware")[1], "")
        code, out, _ = self.exec(cid, "cat", "/etc/group")
        self.assertTrue(code != 0 or out == "", out)
        code, _, err = self.exec(cid, "touch", "/tmp/x")
        self.assertNotEqual(code, 0)
        self.assertIn("Read-only", err)
        # One app's masks are its own: not the pod's, nor an app's started before or after.
        after, _ = self.start(pod, self.config("after"))
        for c in (plain, after):
            self.assertEqual(self.exec(c, "sh", "-c", "head -c1 /proc/timer_list")[0], 0)
            self.assertIn("app:", self.exec(c, "cat", "/etc/group")[1])
            self.assertEqual(self.exec(c, "touch", "/tmp/y")[0], 0)
        # Not a plain absolute path: refused, naming the field.
        for field, path in (("masked_paths", "proc/x"), ("readonly_paths", "/a b"),
                            ("masked_paths", "/proc/%n")):
            cc = self.config("bad-path")
            getattr(cc.linux.security_context, field).append(path)
            self.assertIn(field, self.refused(pod, cc))

    def test_kernel_paths_hidden_from_every_app(self):
        """rkt's own masks, in every app that is not privileged: hidden paths under an empty
        node, read-only (nosuid, nodev, noexec), read-only paths read-only, as the app's
        mountinfo shows them."""
        pod = self.run_pod("kernel-paths")
        cid, _ = self.start(pod, self.config("plain"))
        code, out, _ = self.exec(cid, "cat", "/proc/self/mountinfo")
        self.assertEqual(code, 0)
        opts = {}
        for line in out.splitlines():
            f = line.split()
            opts[f[4]] = set(f[5].split(","))  # the mount point and its options
        # The pod shares the host's kernel: a path it lacks (this one has no /proc/kcore)
        # is skipped, as asked.
        for path in ("/proc/kcore", "/proc/kallsyms", "/sys/firmware", "/sys/fs"):
            if os.path.exists(path):
                self.assertIn(path, opts, "not hidden")
                self.assertLessEqual({"ro", "nosuid", "nodev", "noexec"}, opts[path], path)
        for path in ("/proc/sys/kernel/core_pattern", "/sys/devices", "/sys/kernel"):
            self.assertIn(path, opts, "not made read-only")
            self.assertIn("ro", opts[path], path)
        self.assertEqual(self.exec(cid, "ls", "-A", "/sys/fs")[1], "")
        self.assertEqual(self.exec(cid, "wc", "-c", "/proc/kallsyms")[1].split()[0], "0")
        # Mounted by prepare-app (stage1-path-masks.patch) where the kernel has
        # mount_setattr(2) (5.12): the app's unit then asks systemd for none of them.
        if tuple(int(x) for x in os.uname().release.split(".")[:2]) >= (5, 12):
            # The pod's stage1 root is an overlay mounted in the node's mount namespace.
            units = os.path.join(self.env.rkt_dir, "pods", "run", "*", "stage1", "rootfs",
                                 "usr", "lib", "systemd", "system", "*.service")
            out = subprocess.run(self.env.enter + ["sh", "-c", "grep -l '^RootDirectory=/opt"
                                                   "/stage2/' %s | xargs cat" % units],
                                 capture_output=True, text=True, check=True).stdout
            apps = out.split("[Unit]")[1:]
            self.assertEqual(len(apps), 1, out)
            self.assertIn("PrivateMounts=yes", apps[0])
            self.assertNotIn("InaccessiblePaths=", apps[0])
            self.assertNotIn("ReadOnlyPaths=", apps[0])
        code, _, err = self.exec(cid, "sh", "-c", "echo x > /proc/sys/kernel/core_pattern")
        self.assertNotEqual(code, 0)
        self.assertIn("Read-only", err)

    def test_masked_path_of_the_image(self):
        """critest's MaskedPaths spec: /bin/ls masked in critest's busybox image, whose
        applets are hard links to one busybox and whose shell runs commands through PATH
        (tests/lib/push-critest-images), as Docker's busybox image."""
        self.env.run(harness.PYTHON, PUSH_CRITEST_IMAGES, "http://127.0.0.1:5000",
                     "e2e-test-images/busybox", timeout=300)
        image = "docker.io/e2e-test-images/busybox:1.29-2"
        pbg.ImageServiceStub(self.env.daemon.channel()).PullImage(
            pb.PullImageRequest(image=pb.ImageSpec(image=image)), timeout=120)
        pod = self.run_pod("masked")
        cc = self.config("masked", image=image,
                         command=("sh", "-c", "echo end; exec sleep 3600"))
        cc.linux.security_context.masked_paths.append("/bin/ls")
        cid, _ = self.start(pod, cc)
        self.assertEqual(self.exec(cid, "/bin/sh", "-c", "ls"),
                         (126, "", "/bin/sh: ls: Permission denied\n"))
        # The other names of the same busybox still run.
        self.assertEqual(self.exec(cid, "sh", "-c", "echo ok | cat"), (0, "ok\n", ""))

    def test_seccomp_and_apparmor(self):
        pod = self.run_pod("seccomp")
        # What the first process may do, then the usual report. The host's /usr lends a
        # program of today (dynamically linked, threads, statx) and unshare(0) through ctypes.
        tries = ("echo try: sethostname=$(hostname sec0 2>/dev/null && echo ok || echo no) "
                 "chmod=$(chmod 1777 /tmp 2>/dev/null && echo ok || echo no) "
                 "unshare=$(/usr/bin/python3 -c 'import ctypes; print(\"ok\" if ctypes.CDLL("
                 "None, use_errno=True).syscall(272, 0) == 0 else \"no\")') "
                 "threads=$(/usr/bin/python3 -c 'import threading; t = threading.Thread("
                 "target=print); t.start(); t.join()' >/dev/null && echo ok || echo no); ")

        def run(name, profile=None, path=None, caps=("SYS_ADMIN",)):
            cc = self.config(name, command=("sh", "-c", tries + REPORT))
            for d in ("/usr", "/lib", "/lib64"):
                cc.mounts.add(container_path=d, host_path=d, readonly=True)
            sc = cc.linux.security_context
            sc.capabilities.add_capabilities.extend(caps)
            if profile is not None:
                sc.seccomp.profile_type = profile
                if path:
                    sc.seccomp.localhost_ref = path
            elif path is not None:
                sc.seccomp_profile_path = path
            return self.start(pod, cc)[1]

        block = os.path.join(self.env.dir, "block-chmod.json")
        with open(block, "w") as f:
            json.dump({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                {"names": ["chmod", "fchmodat", "fchmodat2"], "action": "SCMP_ACT_ERRNO"}]}, f)
        # The runtime's default (Docker's denylist, with Docker's exceptions for capabilities
        # held): today's programs run (rkt's own default kills them with SIGSYS), and
        # unshare needs CAP_SYS_ADMIN, as with Docker.
        for name, kw in (("default", {"profile": pb.SecurityProfile.RuntimeDefault}),
                         ("docker-default", {"path": "docker/default"})):
            seen = run(name, **kw)
            self.assertEqual((seen["sethostname"], seen["chmod"], seen["unshare"],
                              seen["threads"]), ("ok", "ok", "ok", "ok"), name)
            seen = run(name + "-nocap", caps=(), **kw)
            self.assertEqual((seen["sethostname"], seen["unshare"], seen["threads"]),
                             ("no", "no", "ok"), name)
        for name, kw in (("unconfined", {"profile": pb.SecurityProfile.Unconfined}),
                         ("nothing", {}), ("unconfined-path", {"path": "unconfined"})):
            seen = run(name, caps=(), **kw)
            self.assertEqual((seen["sethostname"], seen["chmod"], seen["unshare"]),
                             ("no", "ok", "ok"), name)  # no filter: the kernel's rules only
        # A localhost profile, in either field: its syscalls are refused, the rest allowed.
        for name, kw in (("local", {"profile": pb.SecurityProfile.Localhost, "path": block}),
                         ("local-path", {"path": "localhost/" + block})):
            seen = run(name, **kw)
            self.assertEqual((seen["sethostname"], seen["chmod"]), ("ok", "no"), name)
        # What cannot be honoured exactly is refused, naming the field.
        cond = os.path.join(self.env.dir, "cond.json")
        with open(cond, "w") as f:
            json.dump({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                {"names": ["kill"], "action": "SCMP_ACT_ERRNO",
                 "args": [{"index": 1, "value": 9, "op": "SCMP_CMP_EQ"}]}]}, f)
        for field, setup in (
                ("seccomp_profile_path", lambda sc: setattr(sc, "seccomp_profile_path",
                                                            "block-chmod.json")),
                ("localhost_ref", lambda sc: (sc.seccomp.__setattr__(
                    "profile_type", pb.SecurityProfile.Localhost),
                    sc.seccomp.__setattr__("localhost_ref", cond))),
                ("localhost_ref", lambda sc: (sc.seccomp.__setattr__(
                    "profile_type", pb.SecurityProfile.Localhost),
                    sc.seccomp.__setattr__("localhost_ref", block + ".missing"))),
                ("apparmor", lambda sc: (sc.apparmor.__setattr__(
                    "profile_type", pb.SecurityProfile.Localhost),
                    sc.apparmor.__setattr__("localhost_ref", "k8s-deny-write"))),
                ("apparmor_profile", lambda sc: setattr(sc, "apparmor_profile",
                                                        "localhost/k8s-deny-write"))):
            cc = self.config("refused")
            setup(cc.linux.security_context)
            self.assertIn(field, self.refused(pod, cc))
        # SELinux options, on a machine without SELinux (this one), label nothing on any
        # runtime: taken, as containerd takes them (kubelet gives pods a level). Where
        # SELinux is on they are refused: test_selinux.c.
        self.assertFalse(os.path.exists("/sys/fs/selinux/enforce"))
        cc = self.config("selinux-level")
        cc.linux.security_context.selinux_options.level = "s0:c0,c1"
        self.start(pod, cc)
        # AppArmor's runtime default and unconfined are accepted (rkt applies none).
        cc = self.config("apparmor-unconfined")
        cc.linux.security_context.apparmor_profile = "unconfined"
        cc.linux.security_context.apparmor.profile_type = pb.SecurityProfile.RuntimeDefault
        self.start(pod, cc)

    def test_seccomp_in_exec(self):
        """What ExecSync and Exec run is under the container's filter, as runc does for
        `runc exec`: what critest checks seccomp with."""
        pod = self.run_pod("seccomp-exec")
        block = os.path.join(self.env.dir, "block.json")
        with open(block, "w") as f:
            json.dump({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                {"names": ["chmod", "fchmodat", "fchmodat2", "sethostname"],
                 "action": "SCMP_ACT_ERRNO"}]}, f)
        # keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING): allowed to root by the
        # kernel, refused by the runtime's default (any capabilities); the host's /usr lends
        # a python.
        keyctl = ("/usr/bin/python3", "-c", "import ctypes; print('ok' if ctypes.CDLL(None)."
                  "syscall(250, 0, -4, 0) >= 0 else 'no')")

        def start(name, profile, nnp=False):
            cc = self.config(name)
            for d in ("/usr", "/lib", "/lib64"):
                cc.mounts.add(container_path=d, host_path=d, readonly=True)
            sc = cc.linux.security_context
            sc.capabilities.add_capabilities.append("SYS_ADMIN")
            sc.seccomp.profile_type = profile
            if profile == pb.SecurityProfile.Localhost:
                sc.seccomp.localhost_ref = block
            sc.no_new_privs = nnp
            return self.start(pod, cc)

        def seen(cid):
            """What a command run by ExecSync can do, and its /proc/self/status."""
            code, out, err = self.exec(cid, "sh", "-c",
                                       "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status; "
                                       "echo chmod=$(chmod 1777 /tmp 2>&1 && echo ok); "
                                       "echo hostname=$(hostname exec-host 2>&1 && echo ok)")
            self.assertEqual(code, 0, err)
            got = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
            got.update((k, v.strip()) for k, v in (
                line.split(":", 1) for line in out.splitlines()
                if ":" in line and "=" not in line))
            got["keyctl"] = self.exec(cid, *keyctl)[1].strip()
            return got

        denied = "Operation not permitted"
        # The runtime's default: filtered, keyctl refused; CAP_SYS_ADMIN lets the rest
        # through. The app is root without no_new_privs: the filter is loaded before its
        # credentials.
        cid, app = start("default", pb.SecurityProfile.RuntimeDefault)
        got = seen(cid)
        self.assertEqual((got["Seccomp"], got["NoNewPrivs"], app["NoNewPrivs"]), ("2", "0", "0"))
        self.assertEqual((got["keyctl"], got["chmod"], got["hostname"]), ("no", "ok", "ok"))
        # A localhost profile: what it lists fails, in either order of filter and creds.
        for name, nnp in (("local", False), ("local-nnp", True)):
            cid, app = start(name, pb.SecurityProfile.Localhost, nnp)
            got = seen(cid)
            self.assertEqual((got["Seccomp"], got["NoNewPrivs"]), ("2", "1" if nnp else "0"),
                             name)
            self.assertIn(denied, got["chmod"], name)
            # (busybox's words for sethostname's EPERM)
            self.assertIn("you must be root", got["hostname"], name)
            self.assertEqual(got["keyctl"], "ok", name)
        # Unconfined: no filter at all (the pod's nspawn filter is the pod's systemd's, not
        # the command's).
        cid, _ = start("unconfined", pb.SecurityProfile.Unconfined)
        got = seen(cid)
        self.assertEqual((got["Seccomp"], got["chmod"], got["hostname"], got["keyctl"]),
                         ("0", "ok", "ok", "ok"))

        # The streaming Exec too (crictl's exec goes through it).
        if not os.access(CRICTL, os.X_OK):
            return
        local = start("local-stream", pb.SecurityProfile.Localhost)[0]
        p = subprocess.run(self.env.enter + [
            CRICTL, "--runtime-endpoint", "unix://" + self.env.daemon.socket, "--timeout",
            "30s", "exec", local, "sh", "-c", "grep '^Seccomp:' /proc/self/status; "
            "chmod 1777 /tmp"], capture_output=True, text=True, timeout=60, cwd="/",
            stdin=subprocess.DEVNULL)
        self.assertNotEqual(p.returncode, 0, p)
        self.assertIn("Seccomp:\t2", p.stdout)
        self.assertIn(denied, p.stderr)


class RealRktPodNetworkTest(unittest.TestCase):
    """DNS, hostname, sysctls, port mappings and the host's network, seen from inside."""
    setUp = RealRktSecurityTest.setUp
    start = RealRktSecurityTest.start
    create = RealRktSecurityTest.create
    refused = RealRktSecurityTest.refused
    exec = RealRktSecurityTest.exec
    log_lines = staticmethod(RealRktSecurityTest.log_lines)

    def run_pod(self, name, **kw):
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="net"),
            log_directory=os.path.join(self.env.dir, "logs", name), **kw)
        return self.run_config(cfg)

    def run_config(self, cfg):
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=10).pod_sandbox_id
        harness.wait_sandbox_running(self.rs, sid)
        return sid, cfg

    def config(self, name, command):
        cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name),
                                image=pb.ImageSpec(image=BUSYBOX), log_path=name + ".log")
        cc.command.extend(["sh", "-c", command + "; echo end; exec sleep 3600"])
        return cc

    def test_pod_network(self):
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="web", uid="web-uid", namespace="net"),
            hostname="web-host.net.", log_directory=os.path.join(self.env.dir, "logs", "web"),
            dns_config=pb.DNSConfig(servers=["10.96.0.10"],
                                    searches=["net.svc.cluster.local", "cluster.local"],
                                    options=["ndots:5"]),
            port_mappings=[pb.PortMapping(protocol=pb.TCP, container_port=80, host_port=8080)])
        cfg.linux.sysctls["net.ipv4.ip_local_port_range"] = "20000 30000"
        cfg.linux.sysctls["kernel.shm_rmid_forced"] = "1"
        host_range = self.env.run("cat", "/proc/sys/net/ipv4/ip_local_port_range").stdout
        pod = self.run_config(cfg)
        cid, _ = self.start(pod, self.config("web", (
            "echo index > /tmp/index.html; httpd -p 80 -h /tmp; "
            "echo sysctl: range=$(tr '\\t' - < /proc/sys/net/ipv4/ip_local_port_range) "
            "rmid=$(cat /proc/sys/kernel/shm_rmid_forced)")))
        resolv = self.exec(cid, "cat", "/etc/resolv.conf")[1]
        self.assertIn("nameserver 10.96.0.10", resolv)
        self.assertIn("search net.svc.cluster.local cluster.local", resolv)
        self.assertIn("options ndots:5", resolv)
        # As asked, with its trailing dot (kubelet's setHostnameAsFQDN with no cluster
        # domain), which the pod's systemd drops.
        self.assertEqual(self.exec(cid, "hostname")[1], "web-host.net.\n")
        lines = self.log_lines(os.path.join(cfg.log_directory, "web.log"))
        self.assertIn("sysctl: range=20000-30000 rmid=1", lines)
        # Only the pod's namespaces changed.
        self.assertEqual(self.env.run("cat", "/proc/sys/net/ipv4/ip_local_port_range").stdout,
                         host_range)
        # The host port reaches the pod's port 80 at the host's address (inside the env).
        addrs = self.env.run("ip", "-4", "-o", "addr", "show").stdout
        host_ip = [line.split()[3].split("/")[0] for line in addrs.splitlines()
                   if " lo " not in line][0]
        got = self.env.run("sh", "-c", "printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | "
                           "busybox nc -w 5 %s 8080" % host_ip, check=False).stdout
        self.assertIn("index", got)

    def test_host_network_and_refusals(self):
        first = pod = self.run_pod("hostnet")
        cfg = pod[1]
        cfg2 = pb.PodSandboxConfig()
        cfg2.CopyFrom(cfg)
        cfg2.metadata.name = cfg2.metadata.uid = "hostnet2"
        cfg2.linux.security_context.namespace_options.network = pb.NODE
        pod = self.run_config(cfg2)
        # kubelet gives a host-network pod's containers network NODE too.
        node = self.config("h", "true")
        node.linux.security_context.namespace_options.network = pb.NODE
        cid, _ = self.start(pod, node)
        with self.assertRaises(grpc.RpcError) as e:
            self.rs.CreateContainer(pb.CreateContainerRequest(
                pod_sandbox_id=first[0], config=node, sandbox_config=first[1]), timeout=10)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("namespace_options.network", e.exception.details())
        self.assertEqual(sorted(ln.split(":")[0].strip() for ln in self.exec(
            cid, "cat", "/proc/net/dev")[1].splitlines()[2:]), sorted(
            ln.split(":")[0].strip() for ln in self.env.run("cat", "/proc/net/dev").stdout
            .splitlines()[2:]))
        # The node's /etc/hosts, read-only, where kubelet mounts none; kubelet's file (a
        # host-network pod with hostAliases) where it does.
        self.assertEqual(self.exec(cid, "cat", "/etc/hosts")[1],
                         self.env.run("cat", "/etc/hosts").stdout)
        self.assertNotEqual(self.exec(cid, "sh", "-c", "echo x >> /etc/hosts")[0], 0)
        managed = os.path.join(self.env.dir, "etc-hosts")
        with open(managed, "w") as f:
            f.write("# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n"
                    "123.45.67.89 foo.local\n")
        aliased = self.config("aliased", "true")
        aliased.linux.security_context.namespace_options.network = pb.NODE
        aliased.mounts.add(container_path="/etc/hosts", host_path=managed)
        aliased_cid, _ = self.start(pod, aliased)
        self.assertIn("123.45.67.89 foo.local", self.exec(aliased_cid, "cat", "/etc/hosts")[1])

        def bad(field, change):
            c = pb.PodSandboxConfig()
            c.CopyFrom(cfg)
            change(c)
            with self.assertRaises(grpc.RpcError) as e:
                self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=c), timeout=10)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(field, e.exception.details())
        bad("sysctls", lambda c: c.linux.sysctls.__setitem__("vm.swappiness", "1"))
        bad("sysctls", lambda c: c.linux.sysctls.__setitem__("net/ipv4/ip_forward", "1"))
        bad("sysctls", lambda c: (c.linux.security_context.namespace_options.__setattr__(
            "network", pb.NODE), c.linux.sysctls.__setitem__("net.ipv4.ip_forward", "1")))
        bad("namespace_options.pid", lambda c: setattr(
            c.linux.security_context.namespace_options, "pid", pb.NODE))
        bad("namespace_options.ipc", lambda c: setattr(
            c.linux.security_context.namespace_options, "ipc", pb.NODE))
        bad("seccomp_profile_path", lambda c: setattr(
            c.linux.security_context, "seccomp_profile_path", "nonsense"))


if __name__ == "__main__":
    unittest.main()
