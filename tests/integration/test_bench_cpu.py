"""bench/cpu-by-command against the kernel's own process accounting: the records it reads are
what the kernel wrote for real processes (a shell that spins, a program it runs twice, a
script that execs it), not a file made up to match the parser."""
import json
import os
import resource
import subprocess
import tempfile
import unittest

import harness

TOOL = os.path.join(harness.SOURCE_DIR, "bench", "cpu-by-command")


@unittest.skipUnless(os.geteuid() == 0, "process accounting needs root (CAP_SYS_PACCT)")
class CpuByCommandTest(unittest.TestCase):
    def run_tool(self, *args):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "cpu.json")
            p = subprocess.run([TOOL, "--json", out, *args], capture_output=True, text=True,
                               timeout=120)
            with open(out) as f:
                return p, json.load(f)

    def test_counts_by_program(self):
        # The shell spins (its CPU is far above a tick), runs `second` twice and `first`,
        # which execs `second`: counted under its last program. The names are this test's
        # own, as accounting counts every process of the machine that exits meanwhile.
        with tempfile.TemporaryDirectory() as tmp:
            first, second = ("%s/cbc%da" % (tmp, os.getpid()), "%s/cbc%db" % (tmp, os.getpid()))
            with open(first, "w") as f:
                f.write("#!/bin/sh\nexec %s\n" % second)
            os.symlink("/bin/true", second)
            os.chmod(first, 0o755)
            script = ("i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; %s; %s; %s"
                      % (second, second, first))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            p, r = self.run_tool("--per", "2", "--", "sh", "-c", script)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.assertEqual(p.returncode, 0, p.stderr)
        by = {c["name"]: c for c in r["by_command"]}
        # Not more than the tool and everything below it used, by the kernel's own count
        # (and a tick, the records' unit): read from the wrong field, it would be.
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        self.assertGreater(by["sh"]["cpu_s"], 0.0)
        self.assertLessEqual(by["sh"]["cpu_s"], used + 0.02)
        self.assertEqual(by[os.path.basename(second)]["processes"], 3)
        self.assertNotIn(os.path.basename(first), by)
        self.assertEqual(r["per"], 2.0)
        self.assertAlmostEqual(r["cpu_s"], sum(c["cpu_s"] for c in r["by_command"]), places=2)
        # The table divides by --per: the shell's line shows half its processes.
        line = next(row for row in p.stdout.splitlines() if row.startswith("sh "))
        self.assertEqual(line.split()[1], "%.1f" % (by["sh"]["processes"] / 2))

    def test_exit_status_and_usage(self):
        p, r = self.run_tool("--", "sh", "-c", "exit 3")
        self.assertEqual(p.returncode, 3)
        self.assertEqual(r["exit_status"], 3)
        p = subprocess.run([TOOL], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no COMMAND", p.stderr)


if __name__ == "__main__":
    unittest.main()
