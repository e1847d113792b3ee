"""Every sqlite3 command in docs/operators.md runs as written, against a database the daemon
wrote: the paths of the doc are swapped for the test's, nothing else."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

import harness

pb, pbg = harness.stubs()
DOC = os.path.join(harness.SOURCE_DIR, "docs", "operators.md")
DOC_DB = "/var/lib/rktlet/rktlet.db"


def doc_commands():
    """(line number, command, the output shown below it) for each command in the doc."""
    out = []
    with open(DOC) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^ {4,6}(?:\$ )?((?:\(umask 077; )?sqlite3 -readonly .*)$", line)
        if not m:
            continue
        shown = []
        for nxt in lines[i + 1:]:
            if not nxt.startswith("    ") or nxt.startswith("    $ "):
                break
            shown.append(nxt[4:])
        out.append((i + 1, m.group(1), shown))
    return out


class OperatorDocsTest(unittest.TestCase):
    def test_every_command_runs(self):
        tmp = tempfile.mkdtemp(prefix="rktlet-docs-")
        self.addCleanup(shutil.rmtree, tmp, True)
        systemd = harness.Systemd(os.path.join(tmp, "systemd"))
        self.addCleanup(systemd.stop)
        d = harness.Daemon(harness.workdir(self), rkt_path=harness.fake_rkt(tmp),
                           bus=systemd.address)
        self.addCleanup(d.stop, signal.SIGKILL)
        d.start()
        ch = d.channel()
        self.addCleanup(ch.close)
        rs = pbg.RuntimeServiceStub(ch)
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="web-0", uid="u", namespace="default"),
            labels={"app": "web", "tier": "frontend"},
            log_directory=harness.LOG_ROOT + "/default_web-0")
        rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=10)

        db = os.path.join(d.state_dir, "rktlet.db")
        commands = doc_commands()
        self.assertGreaterEqual(len(commands), 14)
        for line, cmd, shown in commands:
            run = cmd.replace(DOC_DB, db).replace("/root/rktlet-copy.db",
                                                  os.path.join(tmp, "copy.db"))
            self.assertNotIn("/var/lib/rktlet/", run, "line %d" % line)
            r = subprocess.run(["bash", "-c", run], capture_output=True, text=True, timeout=30)
            if "DELETE" in cmd:
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(shown[0], r.stderr, "line %d" % line)
                continue
            self.assertEqual(r.returncode, 0, "line %d: %s: %s" % (line, cmd, r.stderr))
            if "user_version" in cmd:
                self.assertEqual(r.stdout.split(), shown, "line %d" % line)
        self.assertTrue(os.path.exists(os.path.join(tmp, "copy.db")))

    def test_unit_name_format(self):
        """The doc's unit name is the real one."""
        with open(DOC) as f:
            text = f.read()
        self.assertIn("`rktlet-<sandbox ID>.service`", text)
        self.assertRegex(text, r"rktlet-[0-9a-f]{64}\.service")
        with open(os.path.join(harness.SOURCE_DIR, "src", "reconciler", "unit.c")) as f:
            self.assertIn('"rktlet-%s.service", sandbox_id', f.read())


if __name__ == "__main__":
    unittest.main()
