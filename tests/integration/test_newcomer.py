"""The throwaway node as a newcomer meets it: README.md's first command, `scripts/setup`,
typed in the clone's top directory with no variable of the project's set, then the README's
crictl walk-through exactly as written (its paths, /var/lib/rktlet-try, unchanged), from this
machine's own namespace (exec and port-forward included), ending with `scripts/setup --stop`,
which must leave no process, mount or cgroup behind. The backend setup names must be the real
rkt: a fall-back to the simulator fails the test.

It uses the machine's /var/lib/rktlet-try, as a user does, so it refuses to run (fails, saying
so) where a node is there already."""
import os
import re
import subprocess
import unittest

import harness

README = os.path.join(harness.SOURCE_DIR, "README.md")
TRY_DIR = "/var/lib/rktlet-try"


def readme_blocks():
    """The quick start's two sh blocks: the set-up commands and the crictl walk-through."""
    with open(README) as f:
        text = f.read()
    start = text.index("## Quick start")
    blocks = re.findall(r"```sh\n(.*?)```", text[start:], re.S)
    setup = [b for b in blocks if "scripts/setup" in b and "crictl" not in b]
    walk = [b for b in blocks if "crictl runp" in b]
    if not setup or not walk:
        raise AssertionError("README.md's quick start lacks its set-up or its walk-through")
    return setup[0], walk[0]


def user_env():
    """The environment a user's shell has: none of the variables the test harness, CI or the
    project's scripts read (RKL_*, RKTLET_*, CRI_CONFIG_FILE)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("RKL_", "RKTLET_")) and k != "CRI_CONFIG_FILE"}


class NewcomerTest(unittest.TestCase):
    def setUp(self):
        if os.path.exists(TRY_DIR):
            self.fail("%s exists: a node of this machine's runs there; the newcomer's run "
                      "would take it over (scripts/setup --stop removes it)" % TRY_DIR)
        self.addCleanup(subprocess.run, ["scripts/setup", "--stop"], cwd=harness.SOURCE_DIR,
                        env=user_env(), capture_output=True)

    def test_readme_as_written(self):
        setup_block, walk = readme_blocks()
        first = setup_block.strip().splitlines()[0].split("#")[0].strip()
        self.assertEqual(first, "scripts/setup")
        setup = subprocess.run(["bash", "-e", "-c", first], cwd=harness.SOURCE_DIR,
                               env=user_env(), capture_output=True, text=True, timeout=1800)
        said = setup.stdout[-4000:] + setup.stderr[-4000:]
        self.assertEqual(setup.returncode, 0, said)
        backend = [line for line in setup.stdout.splitlines() if "setup: backend:" in line]
        self.assertEqual(len(backend), 1, said)
        self.assertIn("backend: the real rkt", backend[0], said)
        self.assertNotIn("SIMULATOR", setup.stdout, said)
        out = setup.stdout.strip().splitlines()
        self.assertEqual(out[-1], os.path.join(TRY_DIR, "rktlet.sock"), said)
        self.assertIn("setup: rktlet check:", setup.stdout)
        self.assertIn("export CRI_CONFIG_FILE=%s/crictl.yaml" % TRY_DIR, setup.stdout)
        with open(os.path.join(TRY_DIR, "host", "cgroup-name")) as f:
            cgroup_name = f.read().strip()

        # The lines as a person pastes them: one shell, in the clone's top directory, on this
        # machine's network namespace; -x shows which line said what, -e stops at the first
        # that fails.
        r = subprocess.run(["bash", "-e", "-x", "-c", walk], cwd=harness.SOURCE_DIR,
                           env=user_env(), capture_output=True, text=True, timeout=600)
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
        procs = subprocess.run(["pgrep", "-af", TRY_DIR], capture_output=True,
                               text=True).stdout.splitlines()
        self.assertEqual(procs, [])
        with open("/proc/self/mounts") as f:
            self.assertEqual([line for line in f if TRY_DIR in line], [])
        hierarchies = ["/sys/fs/cgroup"] + [os.path.join("/sys/fs/cgroup", x)
                                            for x in os.listdir("/sys/fs/cgroup")]
        self.assertEqual([h for h in hierarchies
                          if os.path.isdir(os.path.join(h, cgroup_name))], [])
        self.assertFalse(os.path.exists(TRY_DIR))

    def test_from_elsewhere(self):
        """setup started from another directory by a relative path, as `../rktlet/scripts/setup`:
        the same node, on the real rkt."""
        parent = os.path.dirname(harness.SOURCE_DIR)
        rel = os.path.join(os.path.basename(harness.SOURCE_DIR), "scripts", "setup")
        setup = subprocess.run([rel], cwd=parent, env=user_env(), capture_output=True,
                               text=True, timeout=1800)
        said = setup.stdout[-4000:] + setup.stderr[-4000:]
        self.assertEqual(setup.returncode, 0, said)
        self.assertIn("backend: the real rkt", setup.stdout, said)
        self.assertEqual(setup.stdout.strip().splitlines()[-1],
                         os.path.join(TRY_DIR, "rktlet.sock"), said)
        crictl = subprocess.run(["crictl", "--config", os.path.join(TRY_DIR, "crictl.yaml"),
                                 "version"], cwd="/tmp", env=user_env(), capture_output=True,
                                text=True, timeout=60)
        self.assertEqual(crictl.returncode, 0, crictl.stderr)
        self.assertIn("RuntimeName:  rktlet", crictl.stdout)
        stop = subprocess.run([rel, "--stop"], cwd=parent, env=user_env(),
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(stop.returncode, 0, stop.stdout + stop.stderr)
        self.assertFalse(os.path.exists(TRY_DIR))


if __name__ == "__main__":
    unittest.main()
