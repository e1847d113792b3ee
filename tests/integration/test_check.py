"""`rktlet check` on a real node: the real rkt that scripts/build-rkt builds, a real systemd
manager (tests/lib/systemd-env), a CNI configuration with Debian's plugins, this machine's
cgroups and filesystems. It changes nothing and starts no pod.

fs.inotify.max_user_instances is not namespaced: it is the initial user namespace's limit,
shared by every root process of the machine, and a test must not change it. So the check is
shown a value through a bind mount over /proc/sys/fs/inotify/max_user_instances in a private
mount namespace (unshare -m). What that covers: the check reads the sysctl's file and judges
the value against the instances root really holds now; the kernel's limit stays as it is."""
import glob
import os
import socket
import subprocess
import tempfile
import unittest

import harness


class CheckTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rkt, why = harness.real_rkt()
        if not cls.rkt:
            raise unittest.SkipTest("the real rkt cannot be built here: " + why)
        cls.tmp = tempfile.mkdtemp(prefix="rktlet-check-")
        cls.systemd = harness.Systemd(os.path.join(cls.tmp, "systemd"))
        # The cluster network's configuration files only: nothing is run, no address used.
        cls.cni = harness.write_cni_config(os.path.join(cls.tmp, "cni"), "10.88.0.0/24")
        # A socket as rktlet.socket makes it (0660); nothing accepts on it.
        cls.socket_path = os.path.join(cls.tmp, "rktlet.sock")
        cls.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        cls.sock.bind(cls.socket_path)
        os.chmod(cls.socket_path, 0o660)

    @classmethod
    def tearDownClass(cls):
        cls.sock.close()
        cls.systemd.stop()
        subprocess.run(["rm", "-rf", cls.tmp])

    def check(self, rkt=None, inotify=8192, extra=(), config=""):
        args = [harness.DAEMON, "check", "--config", config]
        if config == "":
            args += ["--rkt-path", rkt or self.rkt,
                     "--rkt-data-dir", os.path.join(self.tmp, "rkt"),
                     "--state-dir", os.path.join(self.tmp, "state"),
                     "--listen", self.socket_path,
                     "--systemd-bus", self.systemd.address,
                     "--cni-conf-dir", self.cni, "--cni-bin-dir", harness.CNI_PLUGINS]
        value = os.path.join(harness.workdir(self), "max_user_instances")
        with open(value, "w") as f:
            f.write("%d\n" % inotify)
        show = ('mount --bind "$1" /proc/sys/fs/inotify/max_user_instances && shift && '
                'exec "$@"')
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", show, "sh",
                            value] + args + list(extra), capture_output=True, text=True,
                           timeout=120)
        lines = {}
        for line in r.stdout.splitlines():
            level, rest = line.split(None, 1)
            name, text = rest.split(": ", 1)
            lines.setdefault(name, (level, text))
        return r.returncode, lines, r.stdout + r.stderr

    def test_passes_on_a_node_that_can_run_pods(self):
        rc, lines, out = self.check()
        self.assertEqual(rc, 0, out)
        for name in ("rkt", "systemd", "cgroups", "inotify", "cni", "socket", "state"):
            self.assertEqual(lines[name][0], "ok", out)
        patches = sorted(os.path.basename(p)[:-len(".patch")] for p in glob.glob(
            os.path.join(harness.SOURCE_DIR, "packaging", "rkt", "*.patch")))
        self.assertIn("1.30.0 with %d patches (%s)" % (len(patches), ", ".join(patches)),
                      lines["rkt"][1])
        self.assertIn("stage1 coreos.com/rkt/stage1-host:1.30.0 sha512-", lines["rkt"][1])
        self.assertIn("plugins bridge, host-local, portmap, bandwidth found", lines["cni"][1])
        self.assertIn("= 8192", lines["inotify"][1])
        self.assertIn("mode 0660", lines["socket"][1])
        self.assertEqual(lines["mirror"][0], "ok", out)

    def test_fails_at_the_kernels_default_inotify_limit(self):
        rc, lines, out = self.check(inotify=128)
        self.assertEqual(rc, 1, out)
        self.assertEqual(lines["inotify"][0], "FAIL", out)
        self.assertIn("fs.inotify.max_user_instances = 128", lines["inotify"][1])
        self.assertIn("sysctl -w fs.inotify.max_user_instances=8192", lines["inotify"][1])
        self.assertEqual(lines["rkt"][0], "ok", out)

    def test_fails_on_an_unpatched_rkt(self):
        """A copy of the real rkt without its build record: rkt runs, the fixes are unknown."""
        copy = os.path.join(harness.workdir(self), "rkt")
        subprocess.run(["cp", self.rkt, copy], check=True)
        rc, lines, out = self.check(rkt=copy)
        self.assertEqual(rc, 1, out)
        self.assertEqual(lines["rkt"][0], "FAIL", out)
        self.assertIn("rkt '%s' has no build record '%s.patches'" % (copy, copy), lines["rkt"][1])
        self.assertIn("install the rktlet-rkt package", lines["rkt"][1])

        # A record without one of the patches.
        with open(self.rkt + ".patches") as f:
            record = [line for line in f if "stderr-fd.patch" not in line]
        with open(copy + ".patches", "w") as f:
            f.writelines(record)
        rc, lines, out = self.check(rkt=copy)
        self.assertEqual(rc, 1, out)
        self.assertIn("lacks fixes rktlet relies on: built without stderr-fd", lines["rkt"][1])

    def test_reads_the_daemons_config_file(self):
        """The same options and file as the daemon: here rkt's own networking, and a mirror
        nothing listens on (loopback only), which is worth a warning, not a failure."""
        conf = os.path.join(harness.workdir(self), "rktlet.conf")
        with open(conf, "w") as f:
            f.write("rkt-path = %s\nrkt-data-dir = %s/rkt\nstate-dir = %s/state\n"
                    "listen = %s\nsystemd-bus = %s\nnet = default\n"
                    "registry-mirror = docker.io=http://127.0.0.1:9\n" % (
                        self.rkt, self.tmp, self.tmp, self.socket_path, self.systemd.address))
        rc, lines, out = self.check(config=conf)
        self.assertEqual(rc, 0, out)
        self.assertIn("rkt's own network 'default'", lines["cni"][1])
        self.assertEqual(lines["mirror"][0], "WARN", out)
        self.assertIn("docker.io=http://127.0.0.1:9", lines["mirror"][1])

        # A bad value stops it as it stops the daemon, naming the file and line.
        with open(conf, "a") as f:
            f.write("max-actions = lots\n")
        rc, _, out = self.check(config=conf)
        self.assertEqual(rc, 2, out)
        self.assertIn(conf, out)


if __name__ == "__main__":
    unittest.main()
