/* The image cache and operations against the real simulator (build/rkt-sim) and its local
 * image source (tests/lib/make-test-images). rkt-sim runs behind a recording wrapper that
 * logs each command line and the auth.d files rkt was given. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/imageref.h"
#include "base/spawn.h"
#include "base/strv.h"
#include "images/images.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

typedef struct env {
        char dir[64];
        char *images, *data, *state, *log, *wrapper;
} env;

static void run(char *const argv[])
{
        rkl_spawn_result res = {0};
        rkl_spawn_opts o = {.max_output = 1 << 20, .timeout_usec = 120ULL * 1000000};
        assert_int_equal(rkl_spawn_run(argv, &o, &res, NULL), 0);
        if (res.exit_code != 0)
                fail_msg("%s failed: %s", argv[0], res.err);
        rkl_spawn_result_done(&res);
}

static char *slurp(const char *path)
{
        char *buf = NULL;
        if (rkl_read_file_at(AT_FDCWD, path, 16 << 20, &buf, NULL) < 0)
                return rkl_xstrdup("");
        return buf;
}

static size_t count(const char *hay, const char *needle)
{
        size_t n = 0;
        for (const char *p = hay; (p = strstr(p, needle)); p++)
                n++;
        return n;
}

static int setup(void **state)
{
        const char *src = getenv("RKL_SOURCE_DIR"), *build = getenv("RKL_BUILD_DIR");
        assert_non_null(src);
        assert_non_null(build);
        env *e = rkl_xnew0(env, 1);
        memcpy(e->dir, "/tmp/rkl-images-XXXXXX", sizeof("/tmp/rkl-images-XXXXXX"));
        assert_non_null(mkdtemp(e->dir));
        e->images = rkl_xasprintf("%s/images", e->dir);
        e->data = rkl_xasprintf("%s/rkt", e->dir);
        e->state = rkl_xasprintf("%s/state", e->dir);
        e->log = rkl_xasprintf("%s/rkt.log", e->dir);
        e->wrapper = rkl_xasprintf("%s/rkt-wrapper", e->dir);

        _cleanup_free_ char *mk = rkl_xasprintf("%s/tests/lib/make-test-images", src);
        run(RKL_STRV(mk, e->images));
        /* A digest image and a mirror's copy of registry.k8s.io/pause:3.9, both busybox. */
        _cleanup_free_ char *from =
            rkl_xasprintf("%s/registry-1.docker.io/library/busybox/latest", e->images);
        _cleanup_free_ char *digest =
            rkl_xasprintf("%s/registry-1.docker.io/library/busybox/sha256:" HEX64, e->images);
        _cleanup_free_ char *mirror = rkl_xasprintf("%s/127.0.0.1:5000/pause", e->images);
        _cleanup_free_ char *mirror_tag = rkl_xasprintf("%s/3.9", mirror);
        run(RKL_STRV("/bin/cp", "-a", from, digest));
        assert_int_equal(rkl_mkdir_p(mirror, 0755), 0);
        run(RKL_STRV("/bin/cp", "-a", from, mirror_tag));

        _cleanup_free_ char *script = rkl_xasprintf(
            "#!/bin/sh\n"
            "echo \"ARGV $*\" >> '%s'\n"
            "for a in \"$@\"; do case \"$a\" in --user-config=*)\n"
            "  for f in \"${a#--user-config=}\"/auth.d/*.json; do\n"
            "    echo \"AUTH $(stat -c %%a \"$f\") $(cat \"$f\")\" >> '%s'; done;; esac; done\n"
            "exec '%s/rkt-sim' \"$@\"\n",
            e->log, e->log, build);
        assert_int_equal(
            rkl_write_file_atomic_at(AT_FDCWD, e->wrapper, script, strlen(script), 0755), 0);
        setenv("RKT_SIM_IMAGES", e->images, 1);
        unsetenv("RKT_SIM_PROFILE");
        *state = e;
        return 0;
}

static int teardown(void **state)
{
        env *e = *state;
        (void)rkl_rm_rf_at(AT_FDCWD, e->dir);
        free(e->images);
        free(e->data);
        free(e->state);
        free(e->log);
        free(e->wrapper);
        free(e);
        return 0;
}

static rkl_images *images_new(env *e)
{
        rkl_images *im = NULL;
        rkl_error err = RKL_ERROR_INIT;
        rkl_images_config cfg = {
            .rkt_path = e->wrapper,
            .rkt_data_dir = e->data,
            .state_dir = e->state,
            .mirrors = RKL_STRV("registry.k8s.io=http://127.0.0.1:5000"),
        };
        if (rkl_images_new(&cfg, &im, &err) < 0)
                fail_msg("images_new: %s", err.msg);
        if (rkl_images_refresh(im, &err) < 0)
                fail_msg("refresh: %s", err.msg);
        return im;
}

static char *pull(rkl_images *im, const char *ref, const rkl_image_auth *auth)
{
        char *id = NULL;
        rkl_error err = RKL_ERROR_INIT;
        if (rkl_images_pull(im, ref, auth, &id, &err) < 0)
                fail_msg("pull '%s': %s", ref, err.msg);
        assert_true(rkl_image_id_is_valid(id));
        return id;
}

static rkl_image *status(rkl_images *im, const char *ref)
{
        rkl_image *i = NULL;
        rkl_error err = RKL_ERROR_INIT;
        if (rkl_images_status(im, ref, &i, &err) < 0)
                fail_msg("status '%s': %s", ref, err.msg);
        return i;
}

static void assert_strv(char **l, const char *a, const char *b)
{
        assert_int_equal(rkl_strv_length(l), (a ? 1 : 0) + (b ? 1 : 0));
        if (a)
                assert_string_equal(l[0], a);
        if (b)
                assert_string_equal(l[1], b);
}

static bool in_use_yes(void *userdata, const char *id, char **ret_user)
{
        *ret_user = rkl_xstrdup("container c0ffee");
        return streq(id, userdata);
}

static void test_pull_status_remove(void **state)
{
        env *e = *state;
        rkl_images *im = images_new(e);
        rkl_image **l = NULL;
        size_t n = 9;
        rkl_error err = RKL_ERROR_INIT;

        assert_int_equal(rkl_images_list(im, NULL, &l, &n, &err), 0);
        assert_int_equal(n, 0);
        rkl_image_array_free(l, n);

        /* Without a tag, and the same image by every name a client may use. */
        _cleanup_free_ char *id = pull(im, "busybox", NULL);
        rkl_image *i = status(im, "busybox");
        assert_string_equal(i->id, id);
        assert_strv(i->repo_tags, "docker.io/library/busybox:latest", NULL);
        assert_strv(i->repo_digests, NULL, NULL);
        assert_true(i->has_uid);
        assert_int_equal(i->uid, 0);
        assert_null(i->username);
        assert_true(i->size > 0);
        assert_string_equal(i->exec[0], "sh");
        rkl_image_free(i);
        static const char *const names[] = {"docker.io/library/busybox:latest", "docker://busybox",
                                            "busybox:latest", "index.docker.io/library/busybox"};
        for (size_t k = 0; k < ELEMENTSOF(names); k++) {
                _cleanup_free_ char *rid = NULL;
                assert_int_equal(rkl_images_resolve(im, names[k], &rid), 0);
                assert_string_equal(rid, id);
        }
        _cleanup_free_ char *prefix = rkl_xstrndup(id, 7 + 32), *rid = NULL;
        assert_int_equal(rkl_images_resolve(im, prefix, &rid), 0);
        assert_string_equal(rid, id);
        i = status(im, id);
        assert_string_equal(i->id, id);
        rkl_image_free(i);

        /* A second tag of the same content is a second image, as with rkt. */
        _cleanup_free_ char *id2 = pull(im, "busybox:1.36", NULL);
        assert_string_not_equal(id, id2);
        i = status(im, "busybox:1.36");
        assert_strv(i->repo_tags, "docker.io/library/busybox:1.36", NULL);
        rkl_image_free(i);

        _cleanup_free_ char *id3 = pull(im, "rktsim/nonroot", NULL);
        i = status(im, id3);
        assert_true(i->has_uid);
        assert_int_equal(i->uid, 1000);
        assert_string_equal(i->working_dir, "/home/app");
        rkl_image_free(i);

        assert_int_equal(rkl_images_list(im, NULL, &l, &n, &err), 0);
        assert_int_equal(n, 3);
        assert_string_equal(l[0]->id, id);
        rkl_image_array_free(l, n);
        assert_int_equal(rkl_images_list(im, "busybox:1.36", &l, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(l[0]->id, id2);
        rkl_image_array_free(l, n);
        assert_int_equal(rkl_images_list(im, "nothere", &l, &n, &err), 0);
        assert_int_equal(n, 0);
        rkl_image_array_free(l, n);

        /* A container uses what it ran, else what its reference names now. */
        assert_true(rkl_images_container_uses(im, id, "busybox:1.36", id));
        assert_false(rkl_images_container_uses(im, id2, "busybox", id));
        assert_true(rkl_images_container_uses(im, NULL, "busybox", id));
        assert_true(rkl_images_container_uses(im, "", "docker.io/library/busybox:latest", id));
        assert_false(rkl_images_container_uses(im, NULL, "busybox:1.36", id));
        assert_false(rkl_images_container_uses(im, NULL, "nothere", id));
        assert_false(rkl_images_container_uses(im, NULL, "Bad:", id));
        assert_false(rkl_images_container_uses(im, NULL, NULL, id));
        assert_false(rkl_images_container_uses(im, "", "", id));

        /* Refused while in use, then gone with all its names; again: still fine. */
        assert_int_equal(rkl_images_remove(im, "busybox", in_use_yes, id, &err), -ETXTBSY);
        assert_non_null(strstr(err.msg, "in use by container c0ffee"));
        assert_int_equal(rkl_images_remove(im, "busybox", in_use_yes, id2, &err), 0);
        assert_int_equal(rkl_images_status(im, "busybox", &i, &err), -ENOENT);
        assert_int_equal(rkl_images_status(im, id, &i, &err), -ENOENT);
        assert_int_equal(rkl_images_remove(im, "busybox", NULL, NULL, &err), 0);
        assert_int_equal(rkl_images_remove(im, id, NULL, NULL, &err), 0);
        assert_int_equal(rkl_images_remove(im, "Bad:", NULL, NULL, &err), -EINVAL);
        assert_int_equal(rkl_images_list(im, NULL, &l, &n, &err), 0);
        assert_int_equal(n, 2);
        rkl_image_array_free(l, n);
        /* rkt agrees. */
        assert_int_equal(rkl_images_refresh(im, &err), 0);
        assert_int_equal(rkl_images_status(im, id, &i, &err), -ENOENT);

        /* An image fetched behind rktlet's back: found after one refresh. */
        _cleanup_free_ char *dir_flag = rkl_xasprintf("--dir=%s", e->data);
        run(RKL_STRV(e->wrapper, dir_flag, "image", "fetch", "--full", "docker://busybox"));
        _cleanup_free_ char *behind = NULL;
        assert_int_equal(rkl_images_resolve(im, "busybox", &behind), -ENOENT);
        assert_int_equal(rkl_images_resolve_refresh(im, "busybox", &behind, &err), 0);
        /* Another image than id: rkt records the name as given ("busybox") in the ACI. */
        assert_string_not_equal(behind, id);
        i = status(im, behind);
        assert_strv(i->repo_tags, "docker.io/library/busybox:latest", NULL);
        rkl_image_free(i);
        free(behind);
        behind = NULL;
        assert_int_equal(rkl_images_resolve_refresh(im, "busybox:0.1", &behind, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "pull it first"));
        assert_int_equal(rkl_images_resolve_refresh(im, "A", &behind, &err), -EINVAL);

        /* Errors say why. */
        char *bad = NULL;
        assert_int_equal(rkl_images_pull(im, "nope", NULL, &bad, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "'docker.io/library/nope:latest' not found"));
        assert_int_equal(rkl_images_pull(im, "Nope", NULL, &bad, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "lowercase"));
        assert_int_equal(rkl_images_status(im, "a b", &i, &err), -EINVAL);
        rkl_images_free(im);
}

/* A tag belongs to one image: once the image holding it is removed, the tag names nothing,
 * even though rkt still holds an older image of that name (which once took the tag back). */
static void test_removed_tag_stays_gone(void **state)
{
        env *e = *state;
        rkl_error err = RKL_ERROR_INIT;
        rkl_image *i = NULL;
        rkl_image **l = NULL;
        size_t n = 0;

        /* An older busybox in rkt's store, fetched by hand. */
        _cleanup_free_ char *dir_flag = rkl_xasprintf("--dir=%s", e->data);
        run(RKL_STRV(e->wrapper, dir_flag, "image", "fetch", "--full", "docker://busybox"));
        rkl_images *im = images_new(e);
        _cleanup_free_ char *old = NULL;
        assert_int_equal(rkl_images_resolve(im, "busybox", &old), 0);

        /* Pulled: the tag moves to the new image; removed by its ID: the tag goes with it. */
        _cleanup_free_ char *id = pull(im, "busybox", NULL);
        assert_string_not_equal(id, old);
        i = status(im, "busybox");
        assert_string_equal(i->id, id);
        rkl_image_free(i);
        assert_int_equal(rkl_images_remove(im, id, NULL, NULL, &err), 0);
        assert_int_equal(rkl_images_status(im, "busybox", &i, &err), -ENOENT);
        _cleanup_free_ char *none = NULL;
        assert_int_equal(rkl_images_resolve(im, "docker.io/library/busybox:latest", &none),
                         -ENOENT);
        /* The older image stays, untagged. */
        i = status(im, old);
        assert_strv(i->repo_tags, NULL, NULL);
        rkl_image_free(i);
        assert_int_equal(rkl_images_list(im, NULL, &l, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(l[0]->id, old);
        rkl_image_array_free(l, n);

        /* Whatever rkt keeps: after a refresh, and after a restart. */
        assert_int_equal(rkl_images_refresh(im, &err), 0);
        assert_int_equal(rkl_images_status(im, "busybox", &i, &err), -ENOENT);
        rkl_images_free(im);
        im = images_new(e);
        assert_int_equal(rkl_images_status(im, "busybox", &i, &err), -ENOENT);

        /* A pull gives it a holder again. */
        _cleanup_free_ char *again = pull(im, "busybox", NULL);
        i = status(im, "busybox");
        assert_string_equal(i->id, again);
        assert_strv(i->repo_tags, "docker.io/library/busybox:latest", NULL);
        rkl_image_free(i);
        rkl_images_free(im);
}

static void test_digest(void **state)
{
        env *e = *state;
        rkl_images *im = images_new(e);
        const char *ref = "busybox@sha256:" HEX64;
        _cleanup_free_ char *id = pull(im, ref, NULL);
        rkl_image *i = status(im, ref);
        assert_string_equal(i->id, id);
        assert_strv(i->repo_tags, NULL, NULL);
        assert_strv(i->repo_digests, "docker.io/library/busybox@sha256:" HEX64, NULL);
        rkl_image_free(i);
        /* A tag next to the digest: the digest decides. */
        i = status(im, "busybox:whatever@sha256:" HEX64);
        assert_string_equal(i->id, id);
        rkl_image_free(i);
        _cleanup_free_ char *log = slurp(e->log);
        assert_non_null(
            strstr(log, "--pull-policy=new --full docker://docker.io/library/busybox@sha256:"));
        rkl_images_free(im);
}

static void test_auth_and_mirror(void **state)
{
        env *e = *state;
        rkl_images *im = images_new(e);
        rkl_error err = RKL_ERROR_INIT;
        (void)unlink(e->log);

        /* Credentials reach rkt in a private auth.d, gone once the pull is over. */
        rkl_image_auth auth = {.username = "alice", .password = "s3cr\"et"};
        _cleanup_free_ char *id = pull(im, "busybox:1.36", &auth);
        _cleanup_free_ char *log = slurp(e->log);
        assert_non_null(strstr(log, "AUTH 600 {\"rktKind\":\"dockerAuth\",\"rktVersion\":\"v1\","
                                    "\"registries\":[\"registry-1.docker.io\",\"index.docker.io\","
                                    "\"docker.io\"],\"credentials\":{\"user\":\"alice\","
                                    "\"password\":\"s3cr\\\"et\"}}"));
        assert_non_null(strstr(log, "--user-config="));
        _cleanup_free_ char *pulls = rkl_xasprintf("%s/pulls", e->state);
        _cleanup_closedir_ DIR *d = opendir(pulls);
        assert_non_null(d);
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        fail_msg("'%s' left in %s", de->d_name, pulls);
        struct stat st;
        assert_int_equal(stat(pulls, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0700);

        /* auth: base64 of user:password works the same; tokens rkt cannot use. */
        (void)unlink(e->log);
        auth = (rkl_image_auth){.auth = "Ym9iOnB3"}; /* bob:pw */
        _cleanup_free_ char *id2 = pull(im, "busybox:1.36", &auth);
        free(log);
        log = slurp(e->log);
        assert_non_null(strstr(log, "\"credentials\":{\"user\":\"bob\",\"password\":\"pw\"}"));
        assert_string_equal(id, id2);
        char *bad = NULL;
        auth = (rkl_image_auth){.identity_token = "tok"};
        assert_int_equal(rkl_images_pull(im, "busybox:1.36", &auth, &bad, &err), -EOPNOTSUPP);
        auth = (rkl_image_auth){.auth = "!!"};
        assert_int_equal(rkl_images_pull(im, "busybox:1.36", &auth, &bad, &err), -EINVAL);

        /* The mirror serves registry.k8s.io over plain HTTP; the client sees its own name. */
        (void)unlink(e->log);
        _cleanup_free_ char *pid = pull(im, "registry.k8s.io/pause:3.9", NULL);
        free(log);
        log = slurp(e->log);
        assert_non_null(strstr(log, "--insecure-options=image,ondisk,http"));
        assert_non_null(strstr(log, "docker://127.0.0.1:5000/pause:3.9"));
        rkl_image *i = status(im, "registry.k8s.io/pause:3.9");
        assert_string_equal(i->id, pid);
        assert_strv(i->repo_tags, "registry.k8s.io/pause:3.9", NULL);
        rkl_image_free(i);
        rkl_images_free(im);

        /* The pulled name survives a restart. */
        im = images_new(e);
        i = status(im, "registry.k8s.io/pause:3.9");
        assert_string_equal(i->id, pid);
        assert_strv(i->repo_tags, "registry.k8s.io/pause:3.9", NULL);
        rkl_image_free(i);

        rkl_images_fs_usage u = {0};
        assert_int_equal(rkl_images_fs_info(im, &u, &err), 0);
        assert_true(u.used_bytes > 0);
        assert_true(u.inodes_used > 10);
        assert_true(u.fs_size_bytes > 0);
        assert_non_null(strstr(u.path, "/rkt/cas"));
        assert_int_equal(u.mountpoint[0], '/');
        rkl_images_fs_usage_done(&u);
        rkl_images_free(im);
}

typedef struct puller {
        rkl_images *im;
        char *id;
        int r;
} puller;

static void *pull_thread(void *p)
{
        puller *x = p;
        x->r = rkl_images_pull(x->im, "rktsim/nonroot", NULL, &x->id, NULL);
        return NULL;
}

static void test_concurrent(void **state)
{
        env *e = *state;
        /* rkt's real latencies (a fetch takes ~280 ms) make the pulls overlap. */
        setenv("RKT_SIM_PROFILE", "real", 1);
        rkl_images *im = images_new(e);
        unsetenv("RKT_SIM_PROFILE");
        (void)unlink(e->log);

        puller p[4] = {0};
        pthread_t t[4];
        for (int k = 0; k < 4; k++) {
                p[k].im = im;
                assert_int_equal(pthread_create(&t[k], NULL, pull_thread, &p[k]), 0);
        }
        for (int k = 0; k < 4; k++) {
                pthread_join(t[k], NULL);
                assert_int_equal(p[k].r, 0);
                assert_string_equal(p[k].id, p[0].id);
        }
        _cleanup_free_ char *log = slurp(e->log);
        assert_int_equal(count(log, "image fetch"), 1);

        /* Pulls and removals of the same image at once: each succeeds, the end is sane. */
        puller q[2] = {{.im = im}, {.im = im}};
        for (int k = 0; k < 2; k++)
                assert_int_equal(pthread_create(&t[k], NULL, pull_thread, &q[k]), 0);
        rkl_error err = RKL_ERROR_INIT;
        for (int k = 0; k < 3; k++)
                assert_int_equal(rkl_images_remove(im, "rktsim/nonroot", NULL, NULL, &err), 0);
        for (int k = 0; k < 2; k++) {
                pthread_join(t[k], NULL);
                assert_int_equal(q[k].r, 0);
        }
        assert_int_equal(rkl_images_refresh(im, &err), 0);
        rkl_image *i = NULL;
        int r = rkl_images_status(im, "rktsim/nonroot", &i, &err);
        if (r == 0) {
                assert_string_equal(i->id, p[0].id);
                rkl_image_free(i);
        } else
                assert_int_equal(r, -ENOENT);
        for (int k = 0; k < 4; k++)
                free(p[k].id);
        for (int k = 0; k < 2; k++)
                free(q[k].id);
        rkl_images_free(im);
}

/* A local ACI, as the node's stage1 comes in: imported, listed under its manifest's name,
 * and a file that is not there is an error that names it. */
static void test_import(void **state)
{
        env *e = *state;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_(rkl_images_freep) rkl_images *im = images_new(e);
        _cleanup_free_ char *stage = rkl_xasprintf("%s/stage1", e->dir);
        _cleanup_free_ char *rootfs = rkl_xasprintf("%s/rootfs", stage);
        _cleanup_free_ char *manifest = rkl_xasprintf("%s/manifest", stage);
        _cleanup_free_ char *aci = rkl_xasprintf("%s/stage1-host.aci", e->dir);
        const char *m = "{\"acKind\":\"ImageManifest\",\"acVersion\":\"0.8.11\","
                        "\"name\":\"coreos.com/rkt/stage1-host\","
                        "\"labels\":[{\"name\":\"version\",\"value\":\"1.30.0\"}]}";
        assert_int_equal(rkl_mkdir_p(rootfs, 0755), 0);
        assert_int_equal(rkl_write_file_atomic_at(AT_FDCWD, manifest, m, strlen(m), 0644), 0);
        run(RKL_STRV("/usr/bin/tar", "-cf", aci, "-C", stage, "manifest", "rootfs"));

        _cleanup_free_ char *id = NULL;
        if (rkl_images_import(im, aci, &id, &err) < 0)
                fail_msg("import: %s", err.msg);
        assert_true(rkl_image_id_is_valid(id));
        rkl_image **l = NULL;
        size_t n = 0;
        assert_int_equal(rkl_images_list(im, NULL, &l, &n, &err), 0);
        bool listed = false;
        for (size_t i = 0; i < n; i++)
                listed = listed || (streq(l[i]->id, id) &&
                                    streq_ptr(l[i]->name, "coreos.com/rkt/stage1-host:1.30.0"));
        rkl_image_array_free(l, n);
        assert_true(listed);

        _cleanup_free_ char *gone = rkl_xasprintf("%s/none.aci", e->dir);
        rkl_error_clear(&err);
        assert_true(rkl_images_import(im, gone, NULL, &err) < 0);
        assert_non_null(strstr(err.msg, "cannot import"));
        assert_non_null(strstr(err.msg, gone));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_pull_status_remove, setup, teardown),
            cmocka_unit_test_setup_teardown(test_removed_tag_stays_gone, setup, teardown),
            cmocka_unit_test_setup_teardown(test_digest, setup, teardown),
            cmocka_unit_test_setup_teardown(test_auth_and_mirror, setup, teardown),
            cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
            cmocka_unit_test_setup_teardown(test_import, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
