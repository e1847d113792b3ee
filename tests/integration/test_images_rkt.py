"""Images on the real rkt: one registry manifest pulled under several tags is one image to a
CRI client (critest's "exactly 3 repoTags"), although rkt's store holds one ACI per tag."""
import json
import unittest

import grpc

import harness
from test_rkt import RealRktBase

pb, pbg = harness.stubs()

SAME = ["docker.io/rktlet/multi:%d" % i for i in (1, 2, 3)]
OTHER = "docker.io/rktlet/other:1"


class ManifestDigestTest(RealRktBase):
    def push(self):
        same = json.dumps({"Cmd": ["sh"], "Labels": {"which": "multi"}})
        other = json.dumps({"Cmd": ["sh"], "Labels": {"which": "other"}})
        out = self.env.run(harness.PYTHON, harness.PUSH_IMAGE, "http://127.0.0.1:5000",
                           *["rktlet/multi:%d=%s" % (i, same) for i in (1, 2, 3)],
                           "rktlet/other:1=" + other).stdout
        digests = dict(line.split() for line in out.splitlines())
        self.assertEqual(len({digests["127.0.0.1:5000/rktlet/multi:%d" % i] for i in (1, 2, 3)}),
                         1, "push-image gave the three tags different manifests")
        return digests["127.0.0.1:5000/rktlet/multi:1"]

    def status(self, ref):
        return self.im.ImageStatus(pb.ImageStatusRequest(image=pb.ImageSpec(image=ref)),
                                   timeout=10).image

    def rkt_images(self):
        """rkt's images of this test's repositories (a pod brings in the stage1 too)."""
        out = self.env.rkt("image", "list", "--format=json", "--full").stdout
        return {i["id"] for i in json.loads(out or "null") or [] if "/rktlet/" in i["name"]}

    def test_tags_of_one_manifest_are_one_image(self):
        digest = self.push()
        ids = [self.pull(ref) for ref in SAME]
        other = self.pull(OTHER)
        self.assertEqual(len(set(ids)), 1, ids)
        self.assertNotEqual(other, ids[0])
        # rkt itself still keeps one image per tag.
        self.assertEqual(len(self.rkt_images()), 4)

        mine = [i for i in self.im.ListImages(pb.ListImagesRequest(), timeout=10).images
                if i.id in (ids[0], other)]
        self.assertEqual(len(mine), 2)
        multi = [i for i in mine if i.id == ids[0]][0]
        self.assertEqual(sorted(multi.repo_tags), SAME)
        self.assertIn("docker.io/rktlet/multi@" + digest, multi.repo_digests)
        self.assertEqual([i for i in mine if i.id == other][0].repo_tags, [OTHER])

        st = self.status(SAME[0])
        for ref in SAME[1:] + [ids[0]] + list(st.repo_digests):
            self.assertEqual(self.status(ref), st, ref)

        # A container of another tag reports the same image ID.
        sid, cfg, _ = self.run_pod("multi")
        cid = self.create(sid, cfg, "c", ["sleep", "3600"], image=SAME[2])
        self.start(cid)
        self.assertEqual(self.wait_state(cid, pb.CONTAINER_RUNNING).image_id, ids[0])
        with self.assertRaises(grpc.RpcError):  # in use, by the container of tag 3
            self.im.RemoveImage(pb.RemoveImageRequest(image=pb.ImageSpec(image=SAME[0])),
                                timeout=60)
        self.stop_remove(sid)

        # Removing it by one tag removes every tag, and all of rkt's images for it.
        self.im.RemoveImage(pb.RemoveImageRequest(image=pb.ImageSpec(image=SAME[1])),
                            timeout=60)
        for ref in SAME:
            self.assertFalse(self.status(ref).id, ref)
        self.assertEqual(self.status(OTHER).id, other)
        self.assertEqual(self.rkt_images(), {other})


if __name__ == "__main__":
    unittest.main()
