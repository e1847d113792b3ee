/* The image store under <dir>/cas: `image fetch` turns a local docker-like image source or an
 * ACI file into an ACI blob whose sha512 is the image id, as rkt's store does.
 *
 *   cas/blob/sha512/<2 hex>/<id>   the ACI (tar of manifest + rootfs/)
 *   cas/imageManifest/<id>         its image manifest
 *   cas/db/<id>.json               rkt-sim's index: name, version, times, size, tree
 *   cas/tree/deps-<id>/            the rendered tree: manifest + rootfs/
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "sim.h"
#include "base/banned.h"

static char *short_id(const char *id)
{
        return rkl_xstrndup(id, strlen("sha512-") + 32);
}

static void store_dirs(const sim_ctx *c)
{
        static const char *const dirs[] = {
            "blob/sha512", "db", "imageManifest", "imagelocks", "tree", "treestorelocks", "tmp"};
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_free_ char *p = sim_path(c, "cas/%s", dirs[i]);
                (void)rkl_mkdir_p(p, 0755);
        }
        _cleanup_free_ char *locks = sim_path(c, "locks");
        (void)rkl_mkdir_p(locks, 0755);
}

char *sim_image_tree(const sim_ctx *c, const char *id)
{
        return sim_path(c, "cas/tree/deps-%s", id);
}

struct json_object *sim_image_manifest(const sim_ctx *c, const char *id)
{
        _cleanup_free_ char *p = sim_path(c, "cas/imageManifest/%s", id);
        return sim_json_read(p);
}

static struct json_object *db_read(const sim_ctx *c, const char *id)
{
        _cleanup_free_ char *p = sim_path(c, "cas/db/%s.json", id);
        return sim_json_read(p);
}

static int64_t json_i64(struct json_object *o, const char *key)
{
        struct json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

void sim_image_touch(const sim_ctx *c, const char *id)
{
        struct json_object *db = db_read(c, id);
        if (!db)
                return;
        json_object_object_add(db, "last_used_time", json_object_new_int64(rkl_realtime_ns()));
        _cleanup_free_ char *p = sim_path(c, "cas/db/%s.json", id);
        (void)sim_json_write_atomic(p, db);
        json_object_put(db);
}

/* Every stored image id, sorted by import time. */
static char **store_ids(const sim_ctx *c)
{
        _cleanup_free_ char *p = sim_path(c, "cas/db");
        char **ids = rkl_xnew0(char *, 1);
        _cleanup_closedir_ DIR *d = opendir(p);
        if (!d)
                return ids;
        struct dirent *de;
        while ((de = readdir(d))) {
                size_t l = strlen(de->d_name);
                if (l > 5 && streq(de->d_name + l - 5, ".json") &&
                    strncmp(de->d_name, "sha512-", 7) == 0)
                        rkl_strv_consume(&ids, rkl_xstrndup(de->d_name, l - 5));
        }
        /* Insertion sort by import_time: stores hold a handful of images. */
        size_t n = rkl_strv_length(ids);
        int64_t *t = rkl_xnew0(int64_t, n + 1);
        for (size_t i = 0; i < n; i++) {
                struct json_object *db = db_read(c, ids[i]);
                t[i] = db ? json_i64(db, "import_time") : 0;
                json_object_put(db);
        }
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && t[j - 1] > t[j]; j--) {
                        int64_t tt = t[j];
                        t[j] = t[j - 1];
                        t[j - 1] = tt;
                        char *s = ids[j];
                        ids[j] = ids[j - 1];
                        ids[j - 1] = s;
                }
        free(t);
        return ids;
}

int sim_image_lookup(const sim_ctx *c, const char *ref, char **ret_id)
{
        _cleanup_strv_free_ char **ids = store_ids(c);
        char *found = NULL;
        int matches = 0;

        if (strncmp(ref, "sha512-", 7) == 0) {
                RKL_STRV_FOREACH (id, ids)
                        if (strncmp(*id, ref, strlen(ref)) == 0) {
                                found = *id;
                                matches++;
                        }
        } else {
                _cleanup_free_ char *name = NULL, *version = NULL;
                if (strncmp(ref, "docker://", 9) == 0) {
                        sim_docker_ref r;
                        if (sim_docker_ref_parse(ref + 9, &r) < 0)
                                return -EINVAL;
                        name = rkl_xasprintf("%s/%s", r.registry, r.repo);
                        version = rkl_xstrdup(r.tag ? r.tag : r.digest);
                        sim_docker_ref_done(&r);
                } else {
                        const char *colon = strrchr(ref, ':');
                        name = colon ? rkl_xstrndup(ref, (size_t)(colon - ref)) : rkl_xstrdup(ref);
                        version = rkl_xstrdup(colon ? colon + 1 : "latest");
                }
                /* The most recently imported match wins, as in rkt's store. */
                RKL_STRV_FOREACH (id, ids) {
                        struct json_object *db = db_read(c, *id);
                        if (db && streq_ptr(sim_json_str(db, "name"), name) &&
                            streq_ptr(sim_json_str(db, "version"), version)) {
                                found = *id;
                                matches = 1;
                        }
                        json_object_put(db);
                }
        }
        if (matches == 0)
                return -ENOENT;
        if (matches > 1)
                return -EEXIST;
        *ret_id = rkl_xstrdup(found);
        return 0;
}

static struct json_object *docker_manifest(const char *orig, const sim_docker_ref *r,
                                           struct json_object *config)
{
        struct json_object *m = json_object_new_object(), *labels = json_object_new_array(),
                           *ann = json_object_new_array(), *app = json_object_new_object(),
                           *exec = json_object_new_array(), *v;
        json_object_object_add(m, "acKind", json_object_new_string("ImageManifest"));
        json_object_object_add(m, "acVersion", json_object_new_string(SIM_APPC_VERSION));
        _cleanup_free_ char *name = rkl_xasprintf("%s/%s", r->registry, r->repo);
        json_object_object_add(m, "name", json_object_new_string(name));
        json_object_array_add(labels, sim_json_kv("version", r->tag ? r->tag : r->digest));
        json_object_array_add(labels, sim_json_kv("os", "linux"));
        json_object_array_add(labels, sim_json_kv("arch", "amd64"));
        json_object_object_add(m, "labels", labels);

        /* docker2aci flattens ENTRYPOINT + CMD into exec. */
        struct json_object *ep = NULL, *cmd = NULL;
        if (config && json_object_object_get_ex(config, "Entrypoint", &ep) &&
            json_object_is_type(ep, json_type_array))
                for (size_t i = 0; i < json_object_array_length(ep); i++)
                        json_object_array_add(exec,
                                              json_object_get(json_object_array_get_idx(ep, i)));
        else
                ep = NULL;
        if (config && json_object_object_get_ex(config, "Cmd", &cmd) &&
            json_object_is_type(cmd, json_type_array))
                for (size_t i = 0; i < json_object_array_length(cmd); i++)
                        json_object_array_add(exec,
                                              json_object_get(json_object_array_get_idx(cmd, i)));
        else
                cmd = NULL;
        json_object_object_add(app, "exec", exec);

        /* docker2aci: "user" alone gives user=group=user; empty gives 0/0. */
        const char *user = config ? sim_json_str(config, "User") : NULL;
        _cleanup_free_ char *u = rkl_xstrdup(isempty(user) ? "0" : user);
        char *colon = strchr(u, ':');
        if (colon)
                *colon = 0;
        json_object_object_add(app, "user", json_object_new_string(u));
        json_object_object_add(app, "group", json_object_new_string(colon ? colon + 1 : u));
        const char *wd = config ? sim_json_str(config, "WorkingDir") : NULL;
        if (!isempty(wd))
                json_object_object_add(app, "workingDirectory", json_object_new_string(wd));
        struct json_object *env = json_object_new_array();
        if (config && json_object_object_get_ex(config, "Env", &v) &&
            json_object_is_type(v, json_type_array))
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        const char *e = json_object_get_string(json_object_array_get_idx(v, i));
                        const char *eq = e ? strchr(e, '=') : NULL;
                        if (!eq)
                                continue;
                        _cleanup_free_ char *k = rkl_xstrndup(e, (size_t)(eq - e));
                        json_object_array_add(env, sim_json_kv(k, eq + 1));
                }
        json_object_object_add(app, "environment", env);
        json_object_object_add(m, "app", app);

        json_object_array_add(ann, sim_json_kv("appc.io/docker/registryurl", r->registry));
        json_object_array_add(ann, sim_json_kv("appc.io/docker/repository", r->repo));
        if (r->tag)
                json_object_array_add(ann, sim_json_kv("appc.io/docker/tag", r->tag));
        if (r->digest)
                json_object_array_add(ann, sim_json_kv("appc.io/docker/manifesthash", r->digest));
        json_object_array_add(ann, sim_json_kv("appc.io/docker/originalname", orig));
        if (ep)
                json_object_array_add(
                    ann,
                    sim_json_kv("appc.io/docker/entrypoint",
                                json_object_to_json_string_ext(
                                    ep, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)));
        if (cmd)
                json_object_array_add(
                    ann,
                    sim_json_kv("appc.io/docker/cmd",
                                json_object_to_json_string_ext(
                                    cmd, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)));
        json_object_object_add(m, "annotations", ann);
        return m;
}

static const char *manifest_label(struct json_object *m, const char *label)
{
        struct json_object *labels = NULL;
        json_object_object_get_ex(m, "labels", &labels);
        return sim_json_kv_get(labels, label);
}

/* Imports the ACI at aci_path (moved into the blob store) and returns its id. */
static int store_import(const sim_ctx *c, const char *aci_path, bool update, char **ret_id)
{
        _cleanup_free_ char *id = sim_sha512_file(aci_path);
        if (!id)
                return -EIO;
        struct json_object *db = db_read(c, id);
        if (db) {
                json_object_put(db);
                (void)unlink(aci_path);
                sim_image_touch(c, id);
                *ret_id = TAKE_PTR(id);
                return 0;
        }
        (void)update;
        _cleanup_free_ char *tree = sim_image_tree(c, id);
        (void)rkl_rm_rf_at(AT_FDCWD, tree);
        int r = rkl_mkdir_p(tree, 0755);
        if (r < 0)
                return r;
        if (sim_run(RKL_STRV("/usr/bin/tar", "-xf", (char *)aci_path, "-C", tree)) != 0)
                return -EIO;
        _cleanup_free_ char *mpath = rkl_xasprintf("%s/manifest", tree);
        struct json_object *m = sim_json_read(mpath);
        if (!m)
                return -EBADMSG;
        _cleanup_free_ char *mdst = sim_path(c, "cas/imageManifest/%s", id);
        (void)sim_json_write_atomic(mdst, m);

        _cleanup_free_ char *blobdir = sim_path(c, "cas/blob/sha512/%.2s", id + 7);
        (void)rkl_mkdir_p(blobdir, 0755);
        _cleanup_free_ char *blob = rkl_xasprintf("%s/%s", blobdir, id);
        struct stat st = {0};
        (void)stat(aci_path, &st);
        if (rename(aci_path, blob) < 0) {
                json_object_put(m);
                return -errno;
        }

        int64_t now = rkl_realtime_ns();
        db = json_object_new_object();
        json_object_object_add(db, "id", json_object_new_string(id));
        const char *name = sim_json_str(m, "name");
        json_object_object_add(db, "name", json_object_new_string(name ? name : ""));
        const char *version = manifest_label(m, "version");
        if (version)
                json_object_object_add(db, "version", json_object_new_string(version));
        json_object_object_add(db, "import_time", json_object_new_int64(now));
        json_object_object_add(db, "last_used_time", json_object_new_int64(now));
        json_object_object_add(db, "size", json_object_new_int64((int64_t)st.st_size));
        _cleanup_free_ char *dbp = sim_path(c, "cas/db/%s.json", id);
        r = sim_json_write_atomic(dbp, db);
        json_object_put(db);
        json_object_put(m);
        if (r < 0)
                return r;
        *ret_id = TAKE_PTR(id);
        return 0;
}

/* Writes <tmp>.aci from a source image dir: the same content always gives the same bytes. */
static int build_docker_aci(const sim_ctx *c, const char *orig, const sim_docker_ref *r,
                            const char *src, char **ret_aci)
{
        _cleanup_free_ char *cfgp = rkl_xasprintf("%s/config.json", src);
        struct json_object *config = sim_json_read(cfgp);
        struct json_object *m = docker_manifest(orig, r, config);
        json_object_put(config);

        char rnd[17];
        sim_random_hex(rnd, 8);
        _cleanup_free_ char *stage = sim_path(c, "cas/tmp/%s", rnd);
        _cleanup_free_ char *aci = sim_path(c, "cas/tmp/%s.aci", rnd);
        (void)rkl_mkdir_p(stage, 0755);
        _cleanup_free_ char *mp = rkl_xasprintf("%s/manifest", stage);
        _cleanup_free_ char *ms = sim_json_go(m, false);
        json_object_put(m);
        int k = sim_write_file(mp, ms, 0644);
        if (k < 0)
                return k;
        int rc = sim_run(RKL_STRV("/usr/bin/tar", "--sort=name", "--mtime=@0", "--numeric-owner",
                                  "--format=gnu", "-cf", aci, "-C", stage, "manifest", "-C",
                                  (char *)src, "rootfs"));
        (void)rkl_rm_rf_at(AT_FDCWD, stage);
        if (rc != 0) {
                (void)unlink(aci);
                return -EIO;
        }
        *ret_aci = TAKE_PTR(aci);
        return 0;
}

static void print_id(const char *id, bool full)
{
        if (full)
                sim_out("%s", id);
        else {
                _cleanup_free_ char *s = short_id(id);
                sim_out("%s", s);
        }
}

int sim_cmd_image_fetch(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *policy = NULL;
        bool full = false, no_store = false, store_only = false;
        sim_flag flags[] = {
            {"pull-policy", SIM_FLAG_STRING, &policy},
            {"full", SIM_FLAG_BOOL, &full},
            {"no-store", SIM_FLAG_BOOL, &no_store},
            {"store-only", SIM_FLAG_BOOL, &store_only},
        };
        sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        int ret = SIM_EXIT_ERROR;
        if (!policy)
                policy = rkl_xstrdup(no_store ? "update" : store_only ? "never" : "new");
        if (!streq(policy, "never") && !streq(policy, "new") && !streq(policy, "update")) {
                sim_err("fetch: invalid pull policy %s", policy);
                goto out;
        }
        if (rkl_strv_length(a.pos) < 1) {
                sim_err("Error: fetch: must provide at least one image");
                goto out;
        }
        store_dirs(c);
        RKL_STRV_FOREACH (ref, a.pos) {
                _cleanup_free_ char *id = NULL, *aci = NULL;
                const char *img = *ref;
                bool is_docker = strncmp(img, "docker://", 9) == 0;
                bool is_file = strncmp(img, "file://", 7) == 0;
                if (!is_docker && !is_file) {
                        sim_err("fetch: rkt-sim only fetches docker:// and file:// images, not "
                                "%s",
                                img);
                        goto out;
                }
                if (is_docker && !streq(policy, "update") && sim_image_lookup(c, img, &id) == 0) {
                        sim_image_touch(c, id);
                        print_id(id, full);
                        continue;
                }
                if (streq(policy, "never")) {
                        sim_err("fetch: unable to fetch image from image store: image \"%s\" not "
                                "found in the store",
                                img);
                        goto out;
                }
                if (is_docker) {
                        sim_docker_ref r;
                        if (sim_docker_ref_parse(img + 9, &r) < 0) {
                                sim_err("fetch: invalid docker reference \"%s\"", img + 9);
                                goto out;
                        }
                        const char *src_root = getenv("RKT_SIM_IMAGES");
                        _cleanup_free_ char *src = rkl_xasprintf(
                            "%s/%s/%s/%s", isempty(src_root) ? "/nonexistent" : src_root,
                            r.registry, r.repo, r.tag ? r.tag : r.digest);
                        _cleanup_free_ char *rootfs = rkl_xasprintf("%s/rootfs", src);
                        if (!sim_exists(rootfs)) {
                                sim_err("image: remote fetching failed\n  └─error fetching docker "
                                        "image: HTTP 404 on %s/%s:%s (rkt-sim: no %s)",
                                        r.registry, r.repo, r.tag ? r.tag : r.digest, src);
                                sim_docker_ref_done(&r);
                                goto out;
                        }
                        int k = build_docker_aci(c, img + 9, &r, src, &aci);
                        sim_docker_ref_done(&r);
                        if (k < 0) {
                                sim_err("fetch: cannot build image: %s", strerror(-k));
                                goto out;
                        }
                } else {
                        /* Copy first: the store takes ownership of its blob. */
                        char rnd[17];
                        sim_random_hex(rnd, 8);
                        aci = sim_path(c, "cas/tmp/%s.aci", rnd);
                        if (sim_run(RKL_STRV("/bin/cp", (char *)img + 7, aci)) != 0) {
                                sim_err("fetch: unable to open %s", img + 7);
                                goto out;
                        }
                }
                sim_fault_step(c, "downloaded");
                int k = store_import(c, aci, streq(policy, "update"), &id);
                if (k < 0) {
                        (void)unlink(aci);
                        sim_err("fetch: cannot import image \"%s\": %s", img, strerror(-k));
                        goto out;
                }
                print_id(id, full);
        }
        sim_profile_pad(c, 280);
        ret = 0;
out:
        sim_args_done(&a);
        return ret;
}

int sim_cmd_image_list(sim_ctx *c, char **argv)
{
        _cleanup_free_ char *format = NULL, *sort = NULL;
        bool full = false, no_legend = false;
        _cleanup_strv_free_ char **fields = NULL;
        sim_flag flags[] = {
            {"format", SIM_FLAG_STRING, &format},
            {"full", SIM_FLAG_BOOL, &full},
            {"no-legend", SIM_FLAG_BOOL, &no_legend},
            {"fields", SIM_FLAG_STRV, &fields, .split = true},
            {"sort", SIM_FLAG_STRING, &sort},
            {"order", SIM_FLAG_STRING, &sort},
        };
        sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        sim_args_done(&a);
        _cleanup_strv_free_ char **ids = store_ids(c);
        bool json = format && (streq(format, "json") || streq(format, "json-pretty"));
        struct json_object *arr = rkl_strv_length(ids) ? json_object_new_array() : NULL;
        if (!json && !no_legend)
                sim_out("ID\tNAME\tSIZE\tIMPORT TIME\tLAST USED");
        RKL_STRV_FOREACH (id, ids) {
                struct json_object *db = db_read(c, *id);
                if (!db)
                        continue;
                const char *version = sim_json_str(db, "version");
                _cleanup_free_ char *name =
                    version ? rkl_xasprintf("%s:%s", sim_json_str(db, "name"), version)
                            : rkl_xstrdup(sim_json_str(db, "name"));
                if (json) {
                        struct json_object *e = json_object_new_object();
                        json_object_object_add(e, "id", json_object_new_string(*id));
                        json_object_object_add(e, "name", json_object_new_string(name));
                        json_object_object_add(e, "import_time",
                                               json_object_new_int64(json_i64(db, "import_time")));
                        json_object_object_add(
                            e, "last_used_time",
                            json_object_new_int64(json_i64(db, "last_used_time")));
                        json_object_object_add(e, "size",
                                               json_object_new_int64(json_i64(db, "size")));
                        json_object_array_add(arr, e);
                } else {
                        _cleanup_free_ char *sid = full ? rkl_xstrdup(*id) : short_id(*id);
                        _cleanup_free_ char *it = sim_format_time_ms(json_i64(db, "import_time"));
                        _cleanup_free_ char *lu =
                            sim_format_time_ms(json_i64(db, "last_used_time"));
                        sim_out("%s\t%s\t%" PRId64 "\t%s\t%s", sid, name, json_i64(db, "size"), it,
                                lu);
                }
                json_object_put(db);
        }
        if (json) {
                _cleanup_free_ char *s = sim_json_go(arr, streq(format, "json-pretty"));
                sim_out("%s", s);
        }
        json_object_put(arr);
        sim_profile_pad(c, 40);
        return 0;
}

int sim_cmd_image_cat_manifest(sim_ctx *c, char **argv)
{
        bool pretty = true;
        sim_flag flags[] = {{"pretty-print", SIM_FLAG_BOOL, &pretty}};
        _cleanup_args_ sim_args a = {0};
        if (sim_cmd_parse(c, argv, flags, ELEMENTSOF(flags), 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        _cleanup_free_ char *id = NULL;
        if (rkl_strv_length(a.pos) != 1) {
                sim_err("Error: cat-manifest: exactly one image ID must be given");
                return SIM_EXIT_ERROR;
        }
        if (sim_image_lookup(c, a.pos[0], &id) < 0) {
                sim_err("cat-manifest: cannot get image manifest: image \"%s\" not found",
                        a.pos[0]);
                return SIM_EXIT_ERROR;
        }
        _cleanup_json_ struct json_object *m = sim_image_manifest(c, id);
        _cleanup_free_ char *s = sim_json_go(m, pretty);
        sim_out("%s", s);
        return 0;
}

int sim_cmd_image_rm(sim_ctx *c, char **argv)
{
        sim_args a = {0};
        if (sim_cmd_parse(c, argv, NULL, 0, 0, false, &a) < 0)
                return SIM_EXIT_ERROR;
        int done = 0, failed = 0;
        RKL_STRV_FOREACH (ref, a.pos) {
                _cleanup_free_ char *id = NULL;
                /* rkt removes images even while running pods use them (docs/rkt.md, 'Quirks'). */
                if (sim_image_lookup(c, *ref, &id) < 0) {
                        sim_err("rm: image ID \"%s\" not found", *ref);
                        failed++;
                        continue;
                }
                _cleanup_free_ char *tree = sim_image_tree(c, id);
                _cleanup_free_ char *blob = sim_path(c, "cas/blob/sha512/%.2s/%s", id + 7, id);
                _cleanup_free_ char *man = sim_path(c, "cas/imageManifest/%s", id);
                _cleanup_free_ char *db = sim_path(c, "cas/db/%s.json", id);
                (void)unlink(db);
                (void)unlink(man);
                (void)unlink(blob);
                (void)rkl_rm_rf_at(AT_FDCWD, tree);
                sim_out("successfully removed aci for image: \"%s\"", id);
                done++;
        }
        sim_args_done(&a);
        if (done)
                sim_out("rm: %d image(s) successfully removed", done);
        sim_profile_pad(c, 75);
        if (failed) {
                sim_err("rm: %d image(s) failed to remove", failed);
                return SIM_EXIT_ERROR;
        }
        return 0;
}
