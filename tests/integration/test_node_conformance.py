"""Kubernetes' node conformance suite (test/e2e_node of k8s.io/kubernetes v1.34, built by
scripts/build-kubernetes) against rktlet on the real rkt. The suite starts etcd and
kube-apiserver in its own process and the real kubelet as a unit of the private systemd host
(systemd-run), with rktlet as kubelet's runtime; it runs inside the host's namespaces (pod
IPs, the node's address and the registry live there), from a directory of its own. The
images it asks for come from the registry in the host (tests/lib/push-node-images), which
rktlet reaches with --registry-mirror for registry.k8s.io.

Which specs: the suite's [NodeConformance] specs but [Flaky], [Slow] and [Serial] ones, as
Kubernetes' own node e2e jobs pick them. CI runs the subset SUBSET names (one or more specs of
every area, chosen to fit CI's time); `scripts/node-conformance` runs them all. Fails when
fewer specs pass than docs/conformance.md records for the run, or when a spec that does not
pass is not named there. Results go to $RKL_BUILD_DIR/node-conformance/ (report.json,
results.txt, e2e.log, rktlet.log, kubelet.log). $RKL_NODE_CONFORMANCE=all runs every spec
(with the gate of the whole run); $RKL_NODE_CONFORMANCE_FOCUS (a regular expression) runs the
specs it matches, without a gate: for work on one spec."""
import json
import os
import re
import shutil
import subprocess
import time
import unittest

import harness
import kubelet
import test_critest

PUSH_NODE_IMAGES = os.path.join(harness.SOURCE_DIR, "tests", "lib", "push-node-images")
REGISTRY_URL = "http://127.0.0.1:5000"
FOCUS = r"\[NodeConformance\]"
SKIP = r"\[Flaky\]|\[Slow\]|\[Serial\]"
# CI's subset: regular expressions over spec names, each an area of the suite.
SUBSET = [
    r"Containers should use the image defaults",
    r"Container Runtime blackbox test on terminated container should report termination "
    r"message if TerminationMessagePath is set \[",
    r"Container Runtime blackbox test when starting a container that exits should run",
    r"Container Lifecycle Hook when create a pod with lifecycle hook should execute "
    r"(poststart|prestop) (exec|http) hook",
    r"Probing container should be restarted with a exec",
    r"Probing container should \*not\* be restarted with a tcp:8080",
    r"InitContainer \[NodeConformance\] should invoke init containers on a RestartNever",
    r"Downward API should provide pod name, namespace and IP address as env vars",
    r"Kubelet when scheduling a busybox command in a pod should print the output to logs",
    r"KubeletManagedEtcHosts",
    r"Pods should be submitted and removed",
    r"Pods should support remote command execution over websockets",
    r"ConfigMap should be consumable from pods in volume \[",
    r"EmptyDir volumes should support \(root,0644,tmpfs\)",
    r"Secrets should be consumable from pods in volume \[",
    r"Security Context When creating a container with runAsUser should run the container "
    r"with uid 65534",
    r"Sysctls \[LinuxOnly\] \[NodeConformance\] should support sysctls \[",
    r"Hostname of Pod \[NodeConformance\] a pod with subdomain field has FQDN, when "
    r"setHostnameAsFQDN is set to true",
    r"with hostAliases and hostNetwork should write entries to /etc/hosts",
    r"Networking Granular Checks: Pods should function for intra-pod communication: http",
    r"Variable Expansion should allow composing env vars",
]
TIMEOUT = 110 * 60


# rktlet's own cgroup in the host (RktEnv.start(unit=)): kubelet's "runtime" system container
# in /stats/summary, which the Summary API spec expects. --runtime-cgroups is a flag of
# kubelet's, not a field of its configuration; Kubernetes' own node e2e jobs pass it so too
# (--kubelet-flags), with their runtime's service.
RUNTIME_UNIT = "rktlet.scope"
RUNTIME_CGROUP = "/system.slice/" + RUNTIME_UNIT


def kubelet_config(path):
    """The KubeletConfiguration the suite starts from (it adds its own test settings): the
    node's, as docs/kubelet.md gives it, with PodAndContainerStatsFromCRI: kubelet's
    /stats/summary and /metrics/cadvisor from CRI, since cAdvisor knows no rkt pod."""
    with open(path, "w") as f:
        json.dump({
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "cgroupDriver": "systemd",
            "failSwapOn": False,
            "runtimeRequestTimeout": "4m",
            "cgroupRoot": "/",
            "serializeImagePulls": False,
            "fileCheckFrequency": "10s",
            "volumeStatsAggPeriod": "10s",
            "evictionHard": {"memory.available": "250Mi", "nodefs.available": "5%",
                             "nodefs.inodesFree": "5%", "imagefs.available": "5%"},
            "featureGates": {"PodAndContainerStatsFromCRI": True},
        }, f, indent=2)


def recorded(run):
    """The count docs/conformance.md records for a run ('subset' or 'all'), on its line
    `Node conformance (RUN): **N** passed of M run`."""
    with open(test_critest.CONFORMANCE_DOC) as f:
        m = re.search(r"^Node conformance \(%s\): \*\*(\d+)\*\* passed of (\d+) run" % run,
                      f.read(), re.M)
    if not m:
        raise AssertionError("docs/conformance.md has no line 'Node conformance (%s): **N** "
                             "passed of M run'" % run)
    return int(m.group(1))


class NodeConformanceTest(unittest.TestCase):
    def test_node_conformance(self):
        bindir, why = kubelet.real_kubernetes()
        if not bindir:
            self.skipTest("Kubernetes cannot be built here: " + why)
        run = os.environ.get("RKL_NODE_CONFORMANCE") or "subset"
        focus = os.environ.get("RKL_NODE_CONFORMANCE_FOCUS")
        # Normalized: systemd-run refuses kubelet's log path with a ".." in it.
        out_dir = os.path.abspath(os.path.join(harness.BUILD_DIR, "node-conformance"))
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)

        env = harness.RktEnv(self, extra=[
            "--wait", "--registry-mirror", "registry.k8s.io=" + REGISTRY_URL])
        env.run(harness.PYTHON, PUSH_NODE_IMAGES, REGISTRY_URL, bindir, timeout=300)
        env.start(unit=RUNTIME_UNIT)
        self.addCleanup(shutil.copy, env.daemon.log_path, out_dir)
        work = os.path.join(env.dir, "e2e")
        os.makedirs(work)
        kubelet.host_node(env, work)
        # kubelet's root and the pods' logs where the suite puts them, in the host only.
        for d, where in (("root", "/var/lib/kubelet"), ("pods", "/var/log/pods")):
            os.makedirs(os.path.join(work, d))
            env.run("sh", "-c", "mkdir -p %s && mount --bind %s %s" % (
                where, os.path.join(work, d), where))
        kubelet_config(os.path.join(work, "kubelet-base.json"))
        pid_file = os.path.join(work, "rktlet.pid")
        with open(pid_file, "w") as f:
            f.write("%d\n" % env.daemon.daemon_pid())

        report = os.path.join(out_dir, "report.json")
        sock = "unix://" + env.daemon.socket
        spec_focus = focus or (FOCUS if run == "all" else "|".join(SUBSET))
        args = [os.path.join(bindir, "ginkgo"), "--procs=2", "--timeout=%ds" % (TIMEOUT - 300),
                "--json-report=" + report, "--no-color", "--focus=" + spec_focus,
                "--skip=" + SKIP, os.path.join(bindir, "e2e_node.test"), "--",
                "--container-runtime-endpoint=" + sock, "--image-service-endpoint=" + sock,
                "--container-runtime-process-name=rktlet",
                "--container-runtime-pid-file=" + pid_file,
                "--k8s-bin-dir=" + bindir, "--node-name=" + "rktlet-node",
                "--report-dir=" + out_dir, "--prepull-images=false",
                "--kubelet-config-file=" + os.path.join(work, "kubelet-base.json"),
                "--kubelet-flags=--node-ip=%s --runtime-cgroups=%s" % (
                    kubelet.NODE_IP, RUNTIME_CGROUP),
                "--systemd-services=rktlet*", "--dump-logs-on-failure=false"]
        started = time.monotonic()
        with open(os.path.join(out_dir, "e2e.log"), "w") as log:
            proc = subprocess.run(env.enter + ["sh", "-c", 'cd "$0" && exec "$@"', work] + args,
                                  stdout=log, stderr=subprocess.STDOUT, cwd="/", timeout=TIMEOUT)
        minutes = (time.monotonic() - started) / 60
        self.assertTrue(os.path.exists(report), "the suite wrote no report (exit %d); see %s"
                        % (proc.returncode, out_dir))

        specs = test_critest.parse_report(report)
        ran = [x for x in specs if x[0] not in ("skipped", "pending")]
        passed = [n for s, n, _, _ in ran if s == "passed"]
        failed = [(s, n, m) for s, n, m, _ in ran if s != "passed"]
        skipped = [n for s, n, _, _ in specs if s in ("skipped", "pending")]
        lines = ["node conformance (%s): %d passed of %d run, %d skipped, in %.1f min" % (
            run if not focus else "focus", len(passed), len(ran), len(skipped), minutes)]
        lines += ["%-8s %s%s" % (s, n, ("\n         " + m) if m else "")
                  for s, n, m, _ in sorted(ran, key=lambda x: (x[0], x[1]))]
        with open(os.path.join(out_dir, "results.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print("\n" + lines[0] + "\n(full list in %s/results.txt)" % out_dir)
        if focus:
            return
        want = recorded(run)
        failing = "\n".join("%s: %s" % (n, m) for _, n, m in failed)
        self.assertGreaterEqual(
            len(passed), want,
            "fewer node conformance specs pass than docs/conformance.md records (%d < %d); "
            "failing:\n%s" % (len(passed), want, failing))
        with open(test_critest.CONFORMANCE_DOC) as f:
            doc = f.read()
        self.assertEqual([n for _, n, _ in failed if n not in doc], [],
                         "failing specs docs/conformance.md does not list")


if __name__ == "__main__":
    unittest.main()
