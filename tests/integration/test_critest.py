"""critest, kubelet's conformance suite for CRI runtimes, against the daemon on the real rkt,
in two versions: v1.26.1 (scripts/build-critest) and v1.34.0, of the kubelet's minor
(scripts/build-kubernetes); each the gate of docs/conformance.md. critest runs inside the
private systemd host's namespaces (pod IPs and the registry are local to it), pulls its
images from the registry there (tests/lib/push-critest-images: both versions ask for the
same ones), reached through --registry-mirror for every registry critest names, and writes
a ginkgo JSON report, parsed here spec by spec.

Fails when fewer specs pass than docs/conformance.md records for that version, or when a
spec that does not pass is missing from its list; a spec that fails and is not one of those
docs/conformance.md says do not pass comes with what the daemon logged of its sandboxes and
containers. The results go to
$RKL_BUILD_DIR/critest-VERSION/ (report.json, results.txt, critest.log, rktlet.log) and stay
there for a look after the run. $RKL_CRITEST_FOCUS (a ginkgo regular expression) runs only
the specs it matches, without the gate: for work on one spec."""
import json
import os
import re
import shutil
import subprocess
import time
import unittest

import harness
import kubelet

CONFORMANCE_DOC = os.path.join(harness.SOURCE_DIR, "docs", "conformance.md")
PUSH_CRITEST_IMAGES = os.path.join(harness.SOURCE_DIR, "tests", "lib", "push-critest-images")
REGISTRY_URL = "http://127.0.0.1:5000"
# Every registry critest pulls from, all served by the env's one registry (RktEnv maps
# docker.io).
MIRRORED = ("registry.k8s.io", "k8s.gcr.io", "gcr.io", "quay.io")
# Specs not run, each with why. Only for specs that cannot finish; a failing spec runs.
SKIPPED = {
}
CRITEST_TIMEOUT = 40 * 60


def recorded_count(version):
    """The passing count docs/conformance.md records for critest VERSION, on its line
    `critest VERSION: **N** passed of M run`."""
    with open(CONFORMANCE_DOC) as f:
        m = re.search(r"^critest %s: \*\*(\d+)\*\* passed of (\d+) run" % re.escape(version),
                      f.read(), re.M)
    if not m:
        raise AssertionError("docs/conformance.md has no line 'critest %s: **N** passed of M "
                             "run'" % version)
    return int(m.group(1))


def spec_name(r):
    return " ".join(list(r.get("ContainerHierarchyTexts") or []) + [r.get("LeafNodeText", "")])


def parse_report(path):
    """[(state, name, failure message, ids)] for each spec in critest's ginkgo JSON report;
    ids: the sandboxes and containers its output names (critest logs each it makes)."""
    with open(path) as f:
        suites = json.load(f)
    out = []
    for suite in suites:
        for r in suite.get("SpecReports") or []:
            if r.get("LeafNodeType") != "It":
                continue  # BeforeSuite and friends: their failures fail specs too
            msg = (r.get("Failure") or {}).get("Message", "")
            ids = sorted(set(re.findall(r'"([0-9a-f]{64})"', r.get("CapturedGinkgoWriterOutput")
                                        or "")))
            out.append((r.get("State", "?"), spec_name(r), " ".join(msg.split())[:300], ids))
    return out


def known_failures():
    """The part of docs/conformance.md that lists the specs that do not pass."""
    with open(CONFORMANCE_DOC) as f:
        doc = f.read()
    start = doc.find("## What does not pass")
    return doc[start:doc.find("\n## ", start + 1)] if start >= 0 else ""


def daemon_lines(log_path, ids, limit=40):
    """What the daemon logged of those sandboxes and containers (by the 12-character form
    it logs), the last `limit` lines: why a spec failed, from rktlet's side."""
    if not ids:
        return []
    with open(log_path, errors="replace") as f:
        log = f.read().splitlines()
    # A container's first line names its sandbox.
    short = {i[:12] for i in ids}
    short |= {m[:12] for ln in log if any(i in ln for i in short)
              for m in re.findall(r"for sandbox ([0-9a-f]{64})", ln)}
    return [ln for ln in log if any(i in ln for i in short)][-limit:]


class TestCritest(unittest.TestCase):
    def test_v1_26_1(self):
        critest, why = harness.real_critest()
        if not critest:
            self.skipTest("critest cannot be built here: " + why)
        self.conformance("v1.26.1", critest)

    def test_v1_34_0(self):
        bindir, why = kubelet.real_kubernetes()
        if not bindir:
            self.skipTest("cri-tools 1.34 cannot be built here: " + why)
        self.conformance("v1.34.0", os.path.join(bindir, "critest"))

    def conformance(self, version, critest):
        out_dir = os.path.join(harness.BUILD_DIR, "critest-" + version)
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)

        # --wait, as kubelet wants it (the packaged rktlet.conf sets it): critest reads a
        # sandbox's IP right after RunPodSandbox and two container calls.
        mirrors = [a for h in MIRRORED for a in ("--registry-mirror", h + "=" + REGISTRY_URL)]
        env = harness.RktEnv(self, extra=["--wait"] + mirrors)
        env.run(harness.PYTHON, PUSH_CRITEST_IMAGES, REGISTRY_URL, timeout=300)
        env.start()
        self.addCleanup(shutil.copy, env.daemon.log_path, out_dir)

        report = os.path.join(out_dir, "report.json")
        sock = "unix://" + env.daemon.socket
        args = [critest, "--runtime-endpoint", sock, "--image-endpoint", sock,
                "--ginkgo.json-report=" + report, "--ginkgo.no-color"]
        focus = os.environ.get("RKL_CRITEST_FOCUS")
        if focus:
            args.append("--ginkgo.focus=" + focus)
        for spec in SKIPPED:
            args.append("--ginkgo.skip=" + re.escape(spec))
        started = time.monotonic()
        with open(os.path.join(out_dir, "critest.log"), "w") as log:
            # From the env's / and with its TMPDIR: critest makes pod log dirs under /tmp.
            proc = subprocess.run(env.enter + args, stdout=log, stderr=subprocess.STDOUT,
                                  cwd="/", timeout=CRITEST_TIMEOUT)
        minutes = (time.monotonic() - started) / 60
        self.assertTrue(os.path.exists(report),
                        "critest wrote no report (exit %d); see %s" % (proc.returncode, out_dir))

        specs = parse_report(report)
        passed = [n for s, n, _, _ in specs if s == "passed"]
        failed = [(s, n, m, i) for s, n, m, i in specs
                  if s not in ("passed", "skipped", "pending")]
        skipped = [n for s, n, _, _ in specs if s in ("skipped", "pending")]
        lines = ["critest %s: %d passed, %d failed, %d skipped of %d specs in %.1f min" % (
            version, len(passed), len(failed), len(skipped), len(specs), minutes)]
        lines += ["%-8s %s%s" % (s, n, ("\n         " + m) if m else "")
                  for s, n, m, _ in sorted(specs, key=lambda x: (x[0], x[1]))]
        with open(os.path.join(out_dir, "results.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print("\n" + lines[0] + "\n(full list in %s/results.txt)" % out_dir)

        if focus:
            return
        recorded = recorded_count(version)
        # A spec that fails and is not one of those known not to pass comes with what the
        # daemon logged of its sandboxes and containers.
        known, failing = known_failures(), []
        for _, n, m, ids in failed:
            failing.append("%s: %s" % (n, m))
            if n not in known:
                failing += ["    rktlet: " + ln
                            for ln in daemon_lines(env.daemon.log_path, ids)]
        failing = "\n".join(failing)
        self.assertGreaterEqual(
            len(passed), recorded,
            "fewer critest %s specs pass than docs/conformance.md records (%d < %d); failing:"
            "\n%s" % (version, len(passed), recorded, failing))
        with open(CONFORMANCE_DOC) as f:
            doc = f.read()
        unlisted = [n for _, n, _, _ in failed if n not in doc]
        self.assertEqual(unlisted, [], "failing specs docs/conformance.md does not list")


if __name__ == "__main__":
    unittest.main()
