"""ImageService end to end: CRI calls over gRPC into the real daemon, which drives the rkt
simulator (its local image source stands in for registries). rkt-sim runs behind a wrapper
script (--rkt-path) that records each command line and the auth.d files rkt was given, so
credentials and mirror mappings are checked as rkt saw them."""
import os
import shutil
import threading
import unittest

import grpc

import harness

pb, pbg = harness.stubs()

HEX64 = "0123456789abcdef" * 4
DIGEST_REF = "busybox@sha256:" + HEX64
MIRROR = "registry.k8s.io=http://127.0.0.1:5000"

WRAPPER = """#!/bin/sh
echo "ARGV $*" >> '{log}'
for a in "$@"; do case "$a" in --user-config=*)
  for f in "${{a#--user-config=}}"/auth.d/*.json; do
    echo "AUTH $(stat -c %a "$f") $(cat "$f")" >> '{log}'; done;; esac; done
exec '{sim}' "$@"
"""


def private_images(directory):
    """The test images plus a digest image and a mirror's copy of registry.k8s.io/pause."""
    out = os.path.join(directory, "images")
    shutil.copytree(harness.test_images(), out, symlinks=True)
    busybox = os.path.join(out, "registry-1.docker.io", "library", "busybox")
    shutil.copytree(os.path.join(busybox, "latest"), os.path.join(busybox, "sha256:" + HEX64),
                    symlinks=True)
    shutil.copytree(os.path.join(busybox, "latest"),
                    os.path.join(out, "127.0.0.1:5000", "pause", "3.9"), symlinks=True)
    return out


def start_env(test, profile=None):
    d = harness.workdir(test)
    log = os.path.join(d, "rkt.log")
    wrapper = os.path.join(d, "rkt-wrapper")
    with open(wrapper, "w") as f:
        f.write(WRAPPER.format(log=log, sim=harness.RKT_SIM))
    os.chmod(wrapper, 0o755)
    harness.write_rkt_record(wrapper)
    images = private_images(d)
    env = harness.SimEnv(test, profile=profile,
                         extra=["--rkt-path", wrapper, "--registry-mirror", MIRROR])
    env.env["RKT_SIM_IMAGES"] = images
    env.daemon.env["RKT_SIM_IMAGES"] = images
    env.rkt_log = log
    return env.start()


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


class ImagesTest(unittest.TestCase):
    def setUp(self):
        self.env = start_env(self)
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.img = pbg.ImageServiceStub(ch)
        self.rs = pbg.RuntimeServiceStub(ch)

    def pull(self, ref, auth=None):
        return self.img.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=ref), auth=auth),
                                  timeout=60).image_ref

    def status(self, ref, verbose=False):
        return self.img.ImageStatus(pb.ImageStatusRequest(image=pb.ImageSpec(image=ref),
                                                          verbose=verbose), timeout=10)

    def list(self, ref=None):
        f = pb.ImageFilter(image=pb.ImageSpec(image=ref)) if ref else None
        return list(self.img.ListImages(pb.ListImagesRequest(filter=f), timeout=10).images)

    def remove(self, ref):
        self.img.RemoveImage(pb.RemoveImageRequest(image=pb.ImageSpec(image=ref)), timeout=30)

    def assert_code(self, code, fn, *args):
        with self.assertRaises(grpc.RpcError) as cm:
            fn(*args)
        self.assertEqual(cm.exception.code(), code, cm.exception.details())
        return cm.exception.details()

    def test_pull_list_status_remove(self):
        self.assertEqual(self.list(), [])
        # Without a tag: one ID everywhere, visible at once.
        bid = self.pull("busybox")
        # Whatever length rkt prints (64 hex digits on rkt 1.30), one full ID everywhere.
        self.assertRegex(bid, r"^sha512-[0-9a-f]{64}$")
        st = self.status("busybox")
        self.assertEqual(st.image.id, bid)
        self.assertEqual(list(st.image.repo_tags), ["docker.io/library/busybox:latest"])
        self.assertEqual(list(st.image.repo_digests), [])
        self.assertTrue(st.image.HasField("uid"))
        self.assertEqual(st.image.uid.value, 0)
        self.assertGreater(st.image.size, 0)
        for ref in ("docker.io/library/busybox:latest", "busybox:latest", bid, bid[:7 + 32]):
            self.assertEqual(self.status(ref).image.id, bid, ref)
        self.assertEqual([i.id for i in self.list()], [bid])

        # By tag: two tags of the same content are two images (the tag is in rkt's
        # manifest), each listing its own tag.
        tid = self.pull("busybox:1.36")
        self.assertNotEqual(tid, bid)
        self.assertEqual(list(self.status("busybox:1.36").image.repo_tags),
                         ["docker.io/library/busybox:1.36"])
        nid = self.pull("docker.io/rktsim/nonroot:latest")
        st = self.status("rktsim/nonroot", verbose=True)
        self.assertEqual(st.image.id, nid)
        self.assertEqual(st.image.uid.value, 1000)
        self.assertIn('"workingDir":"/home/app"', st.info["info"])
        images = self.list()
        self.assertEqual(sorted(i.id for i in images), sorted([bid, tid, nid]))
        self.assertEqual(sorted(t for i in images for t in i.repo_tags),
                         ["docker.io/library/busybox:1.36", "docker.io/library/busybox:latest",
                          "docker.io/rktsim/nonroot:latest"])
        self.assertEqual([i.id for i in self.list("busybox:1.36")], [tid])
        self.assertEqual(self.list("nothere"), [])

        # Removed: gone from list and status at once; removing again is fine.
        self.remove("busybox")
        self.assertFalse(self.status("busybox").HasField("image"))
        self.assertFalse(self.status(bid).HasField("image"))
        self.assertEqual(sorted(i.id for i in self.list()), sorted([tid, nid]))
        self.remove("busybox")
        self.remove(bid)
        self.remove("never/pulled:x")
        self.assertNotIn(bid, self.env.rkt("image", "list", "--format=json", "--full").stdout)

        fs = self.img.ImageFsInfo(pb.ImageFsInfoRequest(), timeout=10)
        self.assertEqual(len(fs.image_filesystems), 1)
        u = fs.image_filesystems[0]
        self.assertGreater(u.used_bytes.value, 0)
        self.assertGreater(u.inodes_used.value, 0)
        self.assertTrue(u.fs_id.mountpoint.startswith("/"))
        self.assertGreater(u.timestamp, 10**18)

    def test_digest(self):
        did = self.pull(DIGEST_REF)
        st = self.status(DIGEST_REF).image
        self.assertEqual(st.id, did)
        self.assertEqual(list(st.repo_tags), [])
        self.assertEqual(list(st.repo_digests), ["docker.io/library/busybox@sha256:" + HEX64])
        self.assertEqual(self.status("docker.io/library/busybox@sha256:" + HEX64).image.id, did)
        self.remove("docker.io/library/busybox@sha256:" + HEX64)
        self.assertEqual(self.list(), [])

    def test_errors(self):
        details = self.assert_code(grpc.StatusCode.INVALID_ARGUMENT, self.pull, "Busybox")
        self.assertIn("lowercase", details)
        self.assert_code(grpc.StatusCode.INVALID_ARGUMENT, self.pull, "")
        self.assert_code(grpc.StatusCode.INVALID_ARGUMENT, self.status, "a b")
        self.assert_code(grpc.StatusCode.INVALID_ARGUMENT, self.remove, "x@sha256:12")
        details = self.assert_code(grpc.StatusCode.NOT_FOUND, self.pull, "nope")
        self.assertIn("'docker.io/library/nope:latest' not found", details)
        self.env.set_faults("image fetch fail 254 error fetching docker image: HTTP 401 "
                            "unauthorized\n")
        details = self.assert_code(grpc.StatusCode.PERMISSION_DENIED, self.pull, "busybox")
        self.assertIn("not authorised", details)
        self.env.set_faults("image fetch fail 254 Get https://registry-1.docker.io/v2/: dial "
                            "tcp: lookup registry-1.docker.io: no such host\n")
        details = self.assert_code(grpc.StatusCode.UNAVAILABLE, self.pull, "busybox")
        self.assertIn("unreachable", details)
        self.env.set_faults("")
        self.assertEqual(self.list(), [])
        # Unknown images: empty answers, not errors.
        self.assertFalse(self.status("busybox").HasField("image"))
        self.assertFalse(self.status("sha512-" + HEX64 * 2).HasField("image"))

    def test_credentials_and_mirror(self):
        auth = pb.AuthConfig(username="alice", password="s3cret")
        self.pull("busybox:1.36", auth=auth)
        log = read(self.env.rkt_log)
        self.assertIn('AUTH 600 {"rktKind":"dockerAuth","rktVersion":"v1","registries":'
                      '["registry-1.docker.io","index.docker.io","docker.io"],'
                      '"credentials":{"user":"alice","password":"s3cret"}}', log)
        pulls = os.path.join(self.env.daemon.state_dir, "pulls")
        self.assertEqual(os.listdir(pulls), [])
        self.assertEqual(os.stat(pulls).st_mode & 0o777, 0o700)
        self.assertNotIn("s3cret", self.env.daemon.log())

        # A mirror for registry.k8s.io on loopback, plain HTTP: rkt fetches from the
        # mirror, the client sees the name it pulled.
        pid = self.pull("registry.k8s.io/pause:3.9")
        log = read(self.env.rkt_log)
        fetch = [ln for ln in log.splitlines() if "image fetch" in ln][-1]
        self.assertIn("--insecure-options=image,ondisk,http", fetch)
        self.assertTrue(fetch.endswith("docker://127.0.0.1:5000/pause:3.9"), fetch)
        st = self.status("registry.k8s.io/pause:3.9").image
        self.assertEqual(st.id, pid)
        self.assertEqual(list(st.repo_tags), ["registry.k8s.io/pause:3.9"])
        self.assertEqual([list(i.repo_tags) for i in self.list() if i.id == pid],
                         [["registry.k8s.io/pause:3.9"]])

        # After a restart the pulled name is still there. The daemon stops cleanly (under
        # sanitizers: without leaks or errors).
        self.assertEqual(self.env.daemon.stop(), 0, self.env.daemon.log())
        self.assertNotIn("runtime error", self.env.daemon.log())
        self.env.daemon.start()
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.img = pbg.ImageServiceStub(ch)
        st = self.status("registry.k8s.io/pause:3.9").image
        self.assertEqual(st.id, pid)
        self.assertEqual(list(st.repo_tags), ["registry.k8s.io/pause:3.9"])

    def test_removed_tag_stays_gone(self):
        """A tag belongs to one image: once the image holding it is removed, ImageStatus of
        the tag answers nothing, though rkt keeps an older image of that name."""
        old = self.env.fetch("docker://busybox")  # by hand, behind rktlet's back
        bid = self.pull("busybox")
        self.assertNotEqual(bid, old)
        self.assertEqual(self.status("busybox").image.id, bid)
        self.remove(bid)
        self.assertFalse(self.status("busybox").HasField("image"))
        # The older image is still there, untagged; and so after a restart.
        self.assertEqual([(i.id, list(i.repo_tags)) for i in self.list()], [(old, [])])
        self.assertEqual(self.env.daemon.stop(), 0, self.env.daemon.log())
        self.env.daemon.start()
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.img = pbg.ImageServiceStub(ch)
        self.assertFalse(self.status("busybox").HasField("image"))
        # A pull gives the tag a holder again.
        again = self.pull("busybox")
        self.assertEqual(self.status("busybox").image.id, again)

    def test_image_in_use_and_container_image_id(self):
        bid = self.pull("busybox")
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="img", uid="img-uid", namespace="default"),
            hostname="img", log_directory=harness.LOG_ROOT + "/default_img")
        sid = self.rs.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                    timeout=10).pod_sandbox_id
        ccfg = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="c"),
                                  image=pb.ImageSpec(image="busybox"),
                                  command=["/bin/sleep", "1000"], log_path="c/0.log")
        cid = self.rs.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=ccfg, sandbox_config=cfg), timeout=10).container_id
        self.rs.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=10)

        def running():
            s = self.rs.ContainerStatus(pb.ContainerStatusRequest(container_id=cid),
                                        timeout=10).status
            return s.state == pb.CONTAINER_RUNNING and s

        s = harness.wait_for("container running", running, timeout=30)
        # One image ID: PullImage's, the list's and the container's.
        self.assertEqual(s.image_ref, bid)
        self.assertEqual(s.image_id, bid)
        c = self.rs.ListContainers(pb.ListContainersRequest(), timeout=10).containers[0]
        self.assertEqual(c.image_ref, bid)

        # rkt would remove it from under the pod: refused while the container exists, for
        # good (FAILED_PRECONDITION: a client must not retry it as if the runtime were busy),
        # naming the container.
        details = self.assert_code(grpc.StatusCode.FAILED_PRECONDITION, self.remove, "busybox")
        self.assertIn("in use by container " + cid, details)
        self.assertEqual(self.status(bid).image.id, bid)

        self.rs.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=5), timeout=20)
        self.rs.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=20)
        self.remove(bid)
        self.assertFalse(self.status("busybox").HasField("image"))


class ConcurrentImagesTest(unittest.TestCase):
    def setUp(self):
        # rkt's real latencies (a fetch takes ~280 ms) make the calls overlap.
        self.env = start_env(self, profile="real")
        ch = self.env.daemon.channel()
        self.addCleanup(ch.close)
        self.img = pbg.ImageServiceStub(ch)

    def run_all(self, fns):
        results = [None] * len(fns)

        def run(i):
            try:
                results[i] = fns[i]()
            except grpc.RpcError as e:
                results[i] = e
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    def pull(self, ref):
        return self.img.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=ref)),
                                  timeout=60).image_ref

    def remove(self, ref):
        return self.img.RemoveImage(pb.RemoveImageRequest(image=pb.ImageSpec(image=ref)),
                                    timeout=60)

    def test_client_gone_during_pull(self):
        """Regression: a deferred call's client that went away freed the call under the
        worker still pulling (a crash, or a use-after-free under ASan)."""
        with self.assertRaises(grpc.RpcError) as cm:
            self.img.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image="busybox")),
                               timeout=0.05)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        # The fetch goes on without its client and lands in the cache.
        harness.wait_for("busybox pulled anyway", lambda: self.img.ImageStatus(
            pb.ImageStatusRequest(image=pb.ImageSpec(image="busybox")),
            timeout=10).HasField("image"))
        self.assertEqual(self.pull("busybox").split("-")[0], "sha512")
        self.assertEqual(self.env.daemon.stop(), 0, self.env.daemon.log())

    def test_concurrent_pull_and_remove(self):
        # Four pulls of one reference share one fetch; other calls are not held up.
        ids = self.run_all([lambda: self.pull("busybox")] * 3 +
                           [lambda: self.pull("busybox:latest")])
        self.assertTrue(all(isinstance(i, str) for i in ids), ids)
        self.assertEqual(len(set(ids)), 1)
        fetches = [ln for ln in read(self.env.rkt_log).splitlines() if "image fetch" in ln]
        self.assertEqual(len(fetches), 1, fetches)

        # Concurrent removals all succeed and the image is gone for good.
        res = self.run_all([lambda: self.remove("busybox")] * 3)
        self.assertFalse([r for r in res if isinstance(r, grpc.RpcError)], res)
        st = self.img.ImageStatus(pb.ImageStatusRequest(image=pb.ImageSpec(image="busybox")),
                                  timeout=10)
        self.assertFalse(st.HasField("image"))

        # Pulls racing removals: every call succeeds, and the end state is what rkt has.
        res = self.run_all([lambda: self.pull("busybox:1.36"), lambda: self.remove("busybox:1.36"),
                            lambda: self.pull("busybox:1.36"), lambda: self.remove("busybox:1.36")])
        self.assertFalse([r for r in res if isinstance(r, grpc.RpcError)], res)
        listed = self.img.ListImages(pb.ListImagesRequest(), timeout=10).images
        in_rkt = self.env.rkt("image", "list", "--format=json", "--full").stdout
        for i in listed:
            self.assertIn(i.id, in_rkt)


if __name__ == "__main__":
    unittest.main()
