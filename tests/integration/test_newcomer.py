"""The throwaway node as a newcomer meets it: README.md's first command (scripts/setup), then
the README's crictl walk-through as written, from this machine's own namespace (exec and
port-forward included), then `scripts/setup --stop`, which must leave no process, mount or
cgroup behind. The node lives in a directory of the test's own (RKTLET_TRY_DIR) rather than
/var/lib/rktlet-try, so that a node of the machine's is left alone; the walk-through's lines
are run with that one path changed. Needs the real rkt (scripts/build-rkt), as the README's
setup does; skipped, saying why, without it."""
import os
import re
import subprocess
import unittest

import harness

README = os.path.join(harness.SOURCE_DIR, "README.md")
DEFAULT_DIR = "/var/lib/rktlet-try"


def walk_through():
    """The README's walk-through: the sh block after scripts/setup's paragraph."""
    with open(README) as f:
        text = f.read()
    start = text.index("## Quick start")
    blocks = re.findall(r"```sh\n(.*?)```", text[start:], re.S)
    lines = [b for b in blocks if "crictl runp" in b]
    if not lines:
        raise AssertionError("README.md has no crictl walk-through in its quick start")
    return lines[0]


class NewcomerTest(unittest.TestCase):
    def setUp(self):
        rkt, why = harness.real_rkt()
        if not rkt:
            self.skipTest("the real rkt cannot be built here: " + why)
        self.dir = os.path.join(harness.workdir(self), "try")
        # The rkt the other tests use (scripts/build-rkt's, the same build setup would make
        # again into the node's directory), and the build those tests run.
        self.env = dict(os.environ, RKTLET_TRY_DIR=self.dir, RKTLET_BUILD_DIR=harness.BUILD_DIR,
                        RKTLET_RKT=rkt)
        self.addCleanup(subprocess.run, [os.path.join(harness.SOURCE_DIR, "scripts", "setup"),
                                         "--stop"], env=self.env, capture_output=True)

    def test_readme_as_written(self):
        setup = subprocess.run([os.path.join(harness.SOURCE_DIR, "scripts", "setup")],
                               cwd=harness.SOURCE_DIR, env=self.env, capture_output=True,
                               text=True, timeout=1800)
        self.assertEqual(setup.returncode, 0, setup.stdout[-3000:] + setup.stderr[-3000:])
        out = setup.stdout.strip().splitlines()
        self.assertEqual(out[-1], os.path.join(self.dir, "rktlet.sock"), setup.stdout)
        self.assertIn("backend: the real rkt", setup.stdout)
        self.assertIn("setup: rktlet check:", setup.stdout)
        self.assertIn("export CRI_CONFIG_FILE=%s/crictl.yaml" % self.dir, setup.stdout)
        with open(os.path.join(self.dir, "host", "cgroup-name")) as f:
            self.cgroup_name = f.read().strip()

        script = walk_through().replace(DEFAULT_DIR, self.dir)
        # The lines as a person pastes them: one shell, in the source directory, on this
        # machine's network namespace; -x shows which line said what, -e stops at the first
        # that fails.
        r = subprocess.run(["bash", "-e", "-x", "-c", script], cwd=harness.SOURCE_DIR,
                           env=self.env,
                           capture_output=True, text=True, timeout=600)
        said = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, said[-5000:])
        # crictl ps, right after crictl start returned: the container runs already.
        ps = r.stdout.split("CONTAINER", 1)[1].splitlines()[1]
        self.assertIn("Running", ps, said[-5000:])
        self.assertIn("started", r.stdout)                   # its log
        self.assertIn("Linux rkt-", r.stdout)                # the exec
        self.assertIn("httpd", r.stdout.split("CPU %", 1)[1])  # its stats
        self.assertIn("hello from rktlet", r.stdout)         # the port-forward, from here
        self.assertIn("setup: rktlet stopped", r.stdout)

        # Stopped: nothing of it left on the machine.
        procs = subprocess.run(["pgrep", "-af", self.dir], capture_output=True,
                               text=True).stdout.splitlines()
        self.assertEqual(procs, [])
        with open("/proc/self/mounts") as f:
            self.assertEqual([line for line in f if self.dir in line], [])
        hierarchies = ["/sys/fs/cgroup"] + [os.path.join("/sys/fs/cgroup", x)
                                            for x in os.listdir("/sys/fs/cgroup")]
        self.assertEqual([h for h in hierarchies
                          if os.path.isdir(os.path.join(h, self.cgroup_name))], [])
        self.assertFalse(os.path.exists(self.dir))


if __name__ == "__main__":
    unittest.main()
