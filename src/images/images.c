#include "images.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/latch.h"
#include "base/imageref.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "rkt/image.h"
#include "rkt/rkt.h"
#include "base/banned.h"

#define DEFAULT_PULL_TIMEOUT    (30 * 60 * USEC_PER_SEC)
#define DEFAULT_COMMAND_TIMEOUT (60 * USEC_PER_SEC)
#define FS_INFO_MAX_AGE         (10 * USEC_PER_SEC)
#define TAGS_FILE_MAX           (4u << 20)
#define CRED_MAX                4096
#define DU_MAX_DEPTH            128

RKL_DEFINE_CLEANUP(json_object *, json_object_put)

/* An image of rkt's store, as the cache holds it. */
typedef struct entry {
        char *id;
        char *list_name; /* rkt's name:version, when there is no manifest */
        uint64_t size;
        int64_t import_time_ns;
        bool has_manifest;
        rkl_rkt_image_manifest m;
        char *tag;    /* the manifest's name:version, normalised; NULL when none or hidden */
        char *digest; /* name@digest from the manifest, normalised; or NULL */
} entry;

/* A reference a client pulled, and the image it got: a tag (or digest) of that image. */
typedef struct alias {
        char *ref;
        char *id;
        int64_t at_ns;
} alias;

/* Which image a tag or digest names: the most recent claim wins. */
typedef struct index_ent {
        char *key;
        entry *e;
        int64_t at_ns;
} index_ent;

typedef struct mirror {
        char *registry; /* normalised: docker.io, registry.k8s.io */
        char *host;     /* host[:port] of the mirror */
        bool http;
} mirror;

/* One fetch that concurrent pulls of the same reference wait for. */
typedef struct pull_job {
        char *key;
        unsigned refs;
        bool done;
        int r;
        char *id;
        rkl_error err;
        pthread_cond_t cond;
} pull_job;

struct rkl_images {
        rkl_rkt *rkt;
        char *data_dir, *pulls_dir, *tags_path;
        mirror *mirrors;
        size_t n_mirrors;
        uint64_t pull_timeout, cmd_timeout;

        /* Fetches share rkt's image store, an rm has it alone: rkt-level fetch and rm of
         * one image running at once fail each other. Taken before op_lock, never inside. */
        pthread_rwlock_t store_lock;

        /* Refreshes and removals, one at a time: a refresh's list and its application to
         * the cache must not straddle a removal, or a removed image would come back. */
        pthread_mutex_t op_lock;

        pthread_mutex_t lock; /* everything below; taken inside op_lock, never around it */
        entry **entries;      /* oldest import first */
        size_t n_entries;
        rkl_hashmap *by_id;
        alias *aliases;
        size_t n_aliases;
        rkl_hashmap *index; /* tag or digest -> index_ent */
        index_ent *index_ents;
        size_t n_index_ents;

        pthread_mutex_t pull_lock;
        rkl_hashmap *pulls; /* normalised reference -> pull_job */

        /* Opened by the first refresh, whatever its outcome: until then the cache does
         * not say what rkt's store holds. */
        rkl_latch listed;

        pthread_mutex_t fs_lock;
        rkl_images_fs_usage fs;
        uint64_t fs_at_usec;
};

static int no_rkt(rkl_error *reterr)
{
        return rkl_error_set(reterr, -EAGAIN, "no rkt binary is configured (--rkt-path)");
}

/* ---- Mirrors ---- */

static int mirror_parse(const char *s, mirror *ret, rkl_error *reterr)
{
        const char *eq = strchr(s, '=');
        if (!eq || eq == s)
                return rkl_error_set(reterr, -EINVAL, "registry mirror '%s': want HOST=URL", s);
        _cleanup_free_ char *host = rkl_xstrndup(s, (size_t)(eq - s));
        if (!rkl_imageref_registry_is_valid(host))
                return rkl_error_set(reterr, -EINVAL, "registry mirror '%s': invalid registry '%s'",
                                     s, host);
        const char *url = eq + 1;
        bool http = false;
        if (strncmp(url, "http://", 7) == 0) {
                http = true;
                url += 7;
        } else if (strncmp(url, "https://", 8) == 0)
                url += 8;
        else if (strstr(url, "://"))
                return rkl_error_set(reterr, -EINVAL, "registry mirror '%s': only http and https",
                                     s);
        size_t n = strcspn(url, "/");
        if (url[n] && !streq(url + n, "/"))
                return rkl_error_set(reterr, -EINVAL,
                                     "registry mirror '%s': rkt takes a host, not a path", s);
        _cleanup_free_ char *mhost = rkl_xstrndup(url, n);
        if (!rkl_imageref_registry_is_valid(mhost))
                return rkl_error_set(reterr, -EINVAL, "registry mirror '%s': invalid host '%s'", s,
                                     mhost);
        if (ret)
                *ret = (mirror){
                    .registry = rkl_imageref_registry_normalize(host),
                    .host = TAKE_PTR(mhost),
                    .http = http,
                };
        return 0;
}

int rkl_images_mirror_check(const char *spec, rkl_error *reterr)
{
        return mirror_parse(spec, NULL, reterr);
}

static bool is_mirror_host(const rkl_images *im, const char *registry)
{
        for (size_t i = 0; i < im->n_mirrors; i++)
                if (streq(im->mirrors[i].host, registry))
                        return true;
        return false;
}

/* ---- Entries and the index (lock held) ---- */

static void entry_free(entry *e)
{
        if (!e)
                return;
        free(e->id);
        free(e->list_name);
        rkl_rkt_image_manifest_done(&e->m);
        free(e->tag);
        free(e->digest);
        free(e);
}

static void index_clear(rkl_images *im)
{
        for (size_t i = 0; i < im->n_index_ents; i++)
                free(im->index_ents[i].key);
        free(im->index_ents);
        im->index_ents = NULL;
        im->n_index_ents = 0;
        rkl_hashmap_free(im->index);
        im->index = rkl_hashmap_new();
}

static void claim(rkl_images *im, const char *key, entry *e, int64_t at_ns)
{
        index_ent *ie = rkl_hashmap_get(im->index, key);
        if (!ie) {
                ie = &im->index_ents[im->n_index_ents++];
                *ie = (index_ent){rkl_xstrdup(key), e, at_ns};
                rkl_hashmap_put(im->index, ie->key, ie);
        } else if (at_ns > ie->at_ns || (at_ns == ie->at_ns && strcmp(e->id, ie->e->id) > 0)) {
                ie->e = e;
                ie->at_ns = at_ns;
        }
}

static void index_rebuild(rkl_images *im)
{
        index_clear(im);
        im->index_ents = rkl_xnew0(index_ent, 2 * im->n_entries + im->n_aliases + 1);
        for (size_t i = 0; i < im->n_entries; i++) {
                entry *e = im->entries[i];
                if (e->tag)
                        claim(im, e->tag, e, e->import_time_ns);
                if (e->digest)
                        claim(im, e->digest, e, e->import_time_ns);
        }
        for (size_t i = 0; i < im->n_aliases; i++) {
                entry *e = rkl_hashmap_get(im->by_id, im->aliases[i].id);
                if (e)
                        claim(im, im->aliases[i].ref, e, im->aliases[i].at_ns);
        }
}

/* The manifest's own tag and digest; the list name when there is no manifest. */
static void entry_names(const rkl_images *im, entry *e)
{
        _cleanup_free_ char *s = NULL;
        rkl_imageref r = {0};
        bool versioned;

        if (e->has_manifest) {
                const char *v = rkl_kvs_get(&e->m.labels, "version");
                /* rkt keeps a digest pull's digest as its version. */
                bool digest = v && strncmp(v, "sha256:", 7) == 0;
                versioned = v;
                s = v ? rkl_xasprintf("%s%s%s", e->m.name, digest ? "@" : ":", v)
                      : rkl_xstrdup(e->m.name);
        } else {
                const char *slash = strrchr(e->list_name, '/');
                versioned = strchr(slash ? slash : e->list_name, ':');
                s = rkl_xstrdup(e->list_name);
        }
        if (rkl_imageref_parse(s, &r, NULL) < 0 || r.id)
                goto out;
        /* No version: no tag (parsing would make it "latest", which nobody pulled). */
        if (!versioned && !r.digest)
                r.tag = mfree(r.tag);
        /* Pulled through a mirror: the manifest names the mirror, which no client asked for
         * (the reference pulled is recorded as an alias). */
        if (is_mirror_host(im, r.registry))
                goto out;
        e->tag = rkl_imageref_tagged(&r);
        e->digest = rkl_imageref_digested(&r);
        const char *hash =
            e->has_manifest ? rkl_kvs_get(&e->m.annotations, "appc.io/docker/manifesthash") : NULL;
        if (!e->digest && hash) {
                rkl_imageref d = {0};
                _cleanup_free_ char *name = rkl_imageref_name(&r);
                _cleanup_free_ char *ds = rkl_xasprintf("%s@%s", name, hash);
                if (rkl_imageref_parse(ds, &d, NULL) >= 0)
                        e->digest = rkl_imageref_digested(&d);
                rkl_imageref_done(&d);
        }
out:
        rkl_imageref_done(&r);
}

static bool owns(const rkl_images *im, const char *key, const entry *e)
{
        index_ent *ie = rkl_hashmap_get(im->index, key);
        return ie && ie->e == e;
}

static void push_unique(char ***l, const char *s)
{
        RKL_STRV_FOREACH (p, *l)
                if (streq(*p, s))
                        return;
        rkl_strv_push(l, s);
}

static rkl_image *image_copy(const rkl_images *im, const entry *e)
{
        rkl_image *i = rkl_xnew0(rkl_image, 1);
        i->id = rkl_xstrdup(e->id);
        i->repo_tags = rkl_xnew0(char *, 1);
        i->repo_digests = rkl_xnew0(char *, 1);
        if (e->tag && owns(im, e->tag, e))
                push_unique(&i->repo_tags, e->tag);
        if (e->digest && owns(im, e->digest, e))
                push_unique(&i->repo_digests, e->digest);
        for (size_t k = 0; k < im->n_aliases; k++) {
                const alias *a = &im->aliases[k];
                if (streq(a->id, e->id) && owns(im, a->ref, e))
                        push_unique(strchr(a->ref, '@') ? &i->repo_digests : &i->repo_tags, a->ref);
        }
        i->size = e->size;
        i->import_time_ns = e->import_time_ns;
        /* Every sandbox needs it; rkt would only import it again. */
        i->pinned = strncmp(e->has_manifest ? e->m.name : e->list_name, "coreos.com/rkt/stage1",
                            strlen("coreos.com/rkt/stage1")) == 0;
        if (e->has_manifest) {
                const char *v = rkl_kvs_get(&e->m.labels, "version");
                i->name = v ? rkl_xasprintf("%s:%s", e->m.name, v) : rkl_xstrdup(e->m.name);
                i->exec = rkl_strv_copy(e->m.exec);
                i->working_dir = rkl_xstrdup(e->m.working_dir);
                int64_t uid;
                if (!isempty(e->m.user) && rkl_safe_atoi64(e->m.user, &uid) >= 0 && uid >= 0) {
                        i->has_uid = true;
                        i->uid = uid;
                } else if (!isempty(e->m.user))
                        i->username = rkl_xstrdup(e->m.user);
        } else
                i->name = rkl_xstrdup(e->list_name);
        return i;
}

rkl_image *rkl_image_free(rkl_image *i)
{
        if (!i)
                return NULL;
        free(i->id);
        rkl_strv_free(i->repo_tags);
        rkl_strv_free(i->repo_digests);
        free(i->username);
        free(i->name);
        rkl_strv_free(i->exec);
        free(i->working_dir);
        free(i);
        return NULL;
}

void rkl_image_array_free(rkl_image **l, size_t n)
{
        for (size_t i = 0; l && i < n; i++)
                rkl_image_free(l[i]);
        free(l);
}

/* ---- Recorded tags (lock held) ---- */

static void alias_drop_at(rkl_images *im, size_t i)
{
        free(im->aliases[i].ref);
        free(im->aliases[i].id);
        im->aliases[i] = im->aliases[--im->n_aliases];
}

static void alias_set(rkl_images *im, const char *ref, const char *id, int64_t at_ns)
{
        for (size_t i = 0; i < im->n_aliases; i++)
                if (streq(im->aliases[i].ref, ref)) {
                        free(im->aliases[i].id);
                        im->aliases[i].id = rkl_xstrdup(id);
                        im->aliases[i].at_ns = at_ns;
                        return;
                }
        im->aliases = rkl_xrealloc(im->aliases, (im->n_aliases + 1) * sizeof(alias));
        im->aliases[im->n_aliases++] = (alias){rkl_xstrdup(ref), rkl_xstrdup(id), at_ns};
}

static int tags_save(rkl_images *im)
{
        _cleanup_(json_object_putp) json_object *root = json_object_new_object();
        json_object *arr = json_object_new_array();
        json_object_object_add(root, "tags", arr);
        for (size_t i = 0; i < im->n_aliases; i++) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "ref", json_object_new_string(im->aliases[i].ref));
                json_object_object_add(o, "id", json_object_new_string(im->aliases[i].id));
                json_object_object_add(o, "at", json_object_new_int64(im->aliases[i].at_ns));
                json_object_array_add(arr, o);
        }
        const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
        return rkl_write_file_atomic_at(AT_FDCWD, im->tags_path, s, strlen(s), 0600);
}

/* A damaged file loses the recorded tags, not the images: they keep their own tags. */
static void tags_load(rkl_images *im)
{
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        if (rkl_read_file_at(AT_FDCWD, im->tags_path, TAGS_FILE_MAX, &buf, &n) < 0)
                return;
        _cleanup_(json_object_putp) json_object *root = json_tokener_parse(buf);
        json_object *arr = NULL;
        if (!root || !json_object_object_get_ex(root, "tags", &arr) ||
            !json_object_is_type(arr, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
                json_object *o = json_object_array_get_idx(arr, i), *ref, *id, *at;
                if (!o || !json_object_object_get_ex(o, "ref", &ref) ||
                    !json_object_object_get_ex(o, "id", &id) ||
                    !json_object_object_get_ex(o, "at", &at))
                        continue;
                const char *rs = json_object_get_string(ref), *is = json_object_get_string(id);
                rkl_imageref r = {0};
                if (!rkl_image_id_is_valid(is) || rkl_imageref_parse(rs, &r, NULL) < 0 || r.id) {
                        rkl_imageref_done(&r);
                        continue;
                }
                _cleanup_free_ char *norm = rkl_imageref_to_string(&r);
                rkl_imageref_done(&r);
                if (streq(norm, rs))
                        alias_set(im, rs, is, json_object_get_int64(at));
        }
}

/* ---- Lifecycle ---- */

int rkl_images_new(const rkl_images_config *cfg, rkl_images **ret, rkl_error *reterr)
{
        _cleanup_(rkl_images_freep) rkl_images *im = rkl_xnew0(rkl_images, 1);
        int r;

        pthread_rwlock_init(&im->store_lock, NULL);
        pthread_mutex_init(&im->op_lock, NULL);
        pthread_mutex_init(&im->lock, NULL);
        pthread_mutex_init(&im->pull_lock, NULL);
        pthread_mutex_init(&im->fs_lock, NULL);
        rkl_latch_init(&im->listed);
        im->by_id = rkl_hashmap_new();
        im->index = rkl_hashmap_new();
        im->pulls = rkl_hashmap_new();
        im->pull_timeout = cfg->pull_timeout_usec ? cfg->pull_timeout_usec : DEFAULT_PULL_TIMEOUT;
        im->cmd_timeout =
            cfg->command_timeout_usec ? cfg->command_timeout_usec : DEFAULT_COMMAND_TIMEOUT;

        if (isempty(cfg->state_dir) || isempty(cfg->rkt_data_dir))
                return rkl_error_set(reterr, -EINVAL, "images: state and rkt data dirs needed");
        im->data_dir = rkl_xstrdup(cfg->rkt_data_dir);
        im->tags_path = rkl_xasprintf("%s/images.json", cfg->state_dir);
        im->pulls_dir = rkl_xasprintf("%s/pulls", cfg->state_dir);

        size_t n = rkl_strv_length(cfg->mirrors);
        im->mirrors = rkl_xnew0(mirror, n + 1);
        RKL_STRV_FOREACH (m, cfg->mirrors) {
                r = mirror_parse(*m, &im->mirrors[im->n_mirrors], reterr);
                if (r < 0)
                        return r;
                im->n_mirrors++;
        }

        if (cfg->rkt_path) {
                rkl_rkt_config rc = {.rkt_path = cfg->rkt_path, .data_dir = cfg->rkt_data_dir};
                r = rkl_rkt_new(&rc, &im->rkt, reterr);
                if (r < 0)
                        return r;
        }

        /* Leftovers of a crash mid-pull hold credentials: remove them before anything. */
        (void)rkl_rm_rf_at(AT_FDCWD, im->pulls_dir);
        r = rkl_mkdir_p(im->pulls_dir, 0700);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot create '%s': %s", im->pulls_dir,
                                     strerror(-r));
        tags_load(im);
        *ret = TAKE_PTR(im);
        return 0;
}

rkl_images *rkl_images_free(rkl_images *im)
{
        if (!im)
                return NULL;
        for (size_t i = 0; i < im->n_entries; i++)
                entry_free(im->entries[i]);
        free(im->entries);
        rkl_hashmap_free(im->by_id);
        while (im->n_aliases > 0)
                alias_drop_at(im, 0);
        free(im->aliases);
        for (size_t i = 0; i < im->n_index_ents; i++)
                free(im->index_ents[i].key);
        free(im->index_ents);
        rkl_hashmap_free(im->index);
        rkl_hashmap_free(im->pulls); /* empty: pulls hold no reference to im past return */
        for (size_t i = 0; i < im->n_mirrors; i++) {
                free(im->mirrors[i].registry);
                free(im->mirrors[i].host);
        }
        free(im->mirrors);
        rkl_images_fs_usage_done(&im->fs);
        rkl_rkt_free(im->rkt);
        free(im->data_dir);
        free(im->pulls_dir);
        free(im->tags_path);
        pthread_rwlock_destroy(&im->store_lock);
        pthread_mutex_destroy(&im->op_lock);
        pthread_mutex_destroy(&im->lock);
        pthread_mutex_destroy(&im->pull_lock);
        pthread_mutex_destroy(&im->fs_lock);
        rkl_latch_destroy(&im->listed);
        free(im);
        return NULL;
}

/* ---- Refresh ---- */

static entry *entry_new(const rkl_rkt_image *li)
{
        entry *e = rkl_xnew0(entry, 1);
        e->id = rkl_xstrdup(li->id);
        e->list_name = rkl_xstrdup(li->name);
        e->size = li->size;
        e->import_time_ns = li->import_time_ns;
        return e;
}

static int cmp_import(const void *a, const void *b)
{
        const entry *x = *(entry *const *)a, *y = *(entry *const *)b;
        if (x->import_time_ns != y->import_time_ns)
                return x->import_time_ns < y->import_time_ns ? -1 : 1;
        return strcmp(x->id, y->id);
}

static int refresh_locked(rkl_images *im, rkl_error *reterr)
{
        rkl_rkt_image *list = NULL;
        size_t n = 0;
        int r;

        r = rkl_rkt_image_list(im->rkt, im->cmd_timeout, &list, &n, reterr);
        if (r < 0)
                return r;

        /* Manifests of images not seen yet, without the lock: readers go on meanwhile. Only
         * refreshes and removals (serialised by op_lock) change the entries. */
        entry **fresh = rkl_xnew0(entry *, n + 1);
        for (size_t i = 0; i < n; i++) {
                bool known;
                {
                        RKL_GUARD(&im->lock);
                        known = rkl_hashmap_get(im->by_id, list[i].id) != NULL;
                }
                if (known)
                        continue;
                entry *e = entry_new(&list[i]);
                rkl_error err = RKL_ERROR_INIT;
                r = rkl_rkt_image_cat_manifest(im->rkt, e->id, im->cmd_timeout, &e->m, &err);
                if (r == -ENOENT) { /* removed behind our back since the list */
                        entry_free(e);
                        continue;
                }
                /* Without a manifest the image is still listed, under rkt's name for it. */
                e->has_manifest = r >= 0;
                fresh[i] = e;
        }

        RKL_GUARD(&im->lock);
        rkl_hashmap *by_id = rkl_hashmap_new();
        entry **entries = rkl_xnew0(entry *, n + 1);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                entry *e = fresh[i];
                if (!e) {
                        e = rkl_hashmap_remove(im->by_id, list[i].id);
                        if (!e)
                                continue;
                        e->size = list[i].size;
                } else
                        entry_names(im, e);
                if (rkl_hashmap_get(by_id, e->id)) { /* listed twice */
                        entry_free(e);
                        continue;
                }
                rkl_hashmap_put(by_id, e->id, e);
                entries[k++] = e;
        }
        /* What is left in the old map is gone from rkt's store. */
        size_t it = 0;
        void *v;
        while (rkl_hashmap_iterate(im->by_id, &it, NULL, &v))
                entry_free(v);
        rkl_hashmap_free(im->by_id);
        free(im->entries);
        im->by_id = by_id;
        im->entries = entries;
        im->n_entries = k;
        qsort(im->entries, im->n_entries, sizeof(entry *), cmp_import);

        bool dropped = false;
        for (size_t i = 0; i < im->n_aliases;)
                if (!rkl_hashmap_get(im->by_id, im->aliases[i].id)) {
                        alias_drop_at(im, i);
                        dropped = true;
                } else
                        i++;
        if (dropped)
                (void)tags_save(im);
        index_rebuild(im);

        free(fresh);
        rkl_rkt_images_free(list, n);
        return 0;
}

int rkl_images_refresh(rkl_images *im, rkl_error *reterr)
{
        int r;
        if (!im->rkt)
                r = no_rkt(reterr);
        else {
                RKL_GUARD(&im->op_lock);
                r = refresh_locked(im, reterr);
                if (r < 0)
                        rkl_error_prefix(reterr, "cannot read rkt's image store");
        }
        rkl_latch_open(&im->listed);
        return r;
}

bool rkl_images_wait_listed(rkl_images *im, uint64_t timeout_usec)
{
        return rkl_latch_wait(&im->listed, timeout_usec);
}

/* ---- Reads ---- */

/* The entry ref names (lock held). */
static int lookup_locked(rkl_images *im, const rkl_imageref *r, entry **ret)
{
        if (r->id) {
                /* A whole ID first; else a prefix of exactly one. */
                entry *found = rkl_hashmap_get(im->by_id, r->id);
                size_t len = strlen(r->id);
                if (!found)
                        for (size_t i = 0; i < im->n_entries; i++)
                                if (strncmp(im->entries[i]->id, r->id, len) == 0) {
                                        if (found)
                                                return -ENOTUNIQ;
                                        found = im->entries[i];
                                }
                if (!found)
                        return -ENOENT;
                *ret = found;
                return 0;
        }
        /* containerd's rule: with a digest the digest decides, the tag is decoration. */
        _cleanup_free_ char *key = r->digest ? rkl_imageref_digested(r) : rkl_imageref_tagged(r);
        index_ent *ie = rkl_hashmap_get(im->index, key);
        if (!ie)
                return -ENOENT;
        *ret = ie->e;
        return 0;
}

int rkl_images_resolve(rkl_images *im, const char *ref, char **ret_id)
{
        _cleanup_(rkl_imageref_done) rkl_imageref r = {0};
        entry *e;
        int k = rkl_imageref_parse(ref, &r, NULL);
        if (k < 0)
                return k;
        RKL_GUARD(&im->lock);
        k = lookup_locked(im, &r, &e);
        if (k < 0)
                return k;
        *ret_id = rkl_xstrdup(e->id);
        return 0;
}

int rkl_images_resolve_refresh(rkl_images *im, const char *ref, char **ret_id, rkl_error *reterr)
{
        int r = rkl_images_resolve(im, ref, ret_id);
        if (r == -ENOENT && im->rkt) {
                r = rkl_images_refresh(im, reterr);
                if (r < 0)
                        return r;
                r = rkl_images_resolve(im, ref, ret_id);
        }
        if (r == -ENOENT)
                return rkl_error_set(reterr, r, "image '%s' is not in rkt's store: pull it first",
                                     ref);
        if (r == -ENOTUNIQ)
                return rkl_error_set(reterr, r, "image ID prefix '%s' is ambiguous", ref);
        if (r < 0) { /* malformed: the parser says why */
                _cleanup_(rkl_imageref_done) rkl_imageref tmp = {0};
                int k = rkl_imageref_parse(ref, &tmp, reterr);
                return k < 0 ? k : rkl_error_set(reterr, r, "image '%s': %s", ref, strerror(-r));
        }
        return 0;
}

int rkl_images_status(rkl_images *im, const char *ref, rkl_image **ret, rkl_error *reterr)
{
        _cleanup_(rkl_imageref_done) rkl_imageref r = {0};
        entry *e;
        int k = rkl_imageref_parse(ref, &r, reterr);
        if (k < 0)
                return k;
        RKL_GUARD(&im->lock);
        k = lookup_locked(im, &r, &e);
        if (k == -ENOTUNIQ)
                return rkl_error_set(reterr, k, "image ID prefix '%s' is ambiguous", ref);
        if (k < 0)
                return rkl_error_set(reterr, k, "no image '%s'", ref);
        *ret = image_copy(im, e);
        return 0;
}

int rkl_images_list(rkl_images *im, const char *filter_ref, rkl_image ***ret, size_t *ret_n,
                    rkl_error *reterr)
{
        if (!isempty(filter_ref)) {
                rkl_image *one = NULL;
                int k = rkl_images_status(im, filter_ref, &one, reterr);
                if (k < 0 && k != -ENOENT && k != -ENOTUNIQ)
                        return k;
                *ret = rkl_xnew0(rkl_image *, 1);
                (*ret)[0] = one;
                *ret_n = one ? 1 : 0;
                return 0;
        }
        RKL_GUARD(&im->lock);
        rkl_image **l = rkl_xnew0(rkl_image *, im->n_entries + 1);
        for (size_t i = 0; i < im->n_entries; i++)
                l[i] = image_copy(im, im->entries[i]);
        *ret = l;
        *ret_n = im->n_entries;
        return 0;
}

/* ---- Pull ---- */

static const char base64_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int base64_decode(const char *s, char **ret)
{
        size_t n = strlen(s);
        char *out = rkl_xmalloc(n / 4 * 3 + 4), *p = out;
        uint32_t acc = 0;
        int bits = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '=') {
                        while (i < n && s[i] == '=')
                                i++;
                        if (i != n) {
                                free(out);
                                return -EINVAL;
                        }
                        break;
                }
                const char *c = s[i] ? strchr(base64_chars, s[i]) : NULL;
                if (!c) {
                        free(out);
                        return -EINVAL;
                }
                acc = acc << 6 | (uint32_t)(c - base64_chars);
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        *p++ = (char)((acc >> bits) & 0xff);
                }
        }
        *p = 0;
        if ((size_t)(p - out) != strlen(out)) { /* a NUL inside */
                free(out);
                return -EINVAL;
        }
        *ret = out;
        return 0;
}

/* The username and password rkt can use; both NULL when there are no credentials. */
static int auth_creds(const rkl_image_auth *a, char **ret_user, char **ret_pass, rkl_error *reterr)
{
        *ret_user = *ret_pass = NULL;
        if (!a)
                return 0;
        if (!isempty(a->username)) {
                if (strlen(a->username) > CRED_MAX ||
                    (a->password && strlen(a->password) > CRED_MAX))
                        return rkl_error_set(reterr, -EINVAL, "auth: credentials too long");
                if (strchr(a->username, ':'))
                        return rkl_error_set(reterr, -EINVAL, "auth: username holds ':'");
                *ret_user = rkl_xstrdup(a->username);
                *ret_pass = rkl_xstrdup(a->password ? a->password : "");
                return 0;
        }
        if (!isempty(a->auth)) {
                _cleanup_free_ char *dec = NULL;
                if (strlen(a->auth) > 2 * CRED_MAX || base64_decode(a->auth, &dec) < 0)
                        return rkl_error_set(reterr, -EINVAL, "auth.auth: not base64");
                char *colon = strchr(dec, ':');
                if (!colon)
                        return rkl_error_set(reterr, -EINVAL,
                                             "auth.auth: not base64 of 'username:password'");
                *ret_user = rkl_xstrndup(dec, (size_t)(colon - dec));
                *ret_pass = rkl_xstrdup(colon + 1);
                return 0;
        }
        if (!isempty(a->identity_token) || !isempty(a->registry_token))
                return rkl_error_set(reterr, -EOPNOTSUPP,
                                     "auth: rkt takes a username and password, not tokens");
        return 0;
}

static int write_private(int dirfd, const char *name, const char *s)
{
        _cleanup_close_ int fd =
            openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        size_t n = strlen(s);
        while (n > 0) {
                ssize_t k = write(fd, s, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                s += k;
                n -= (size_t)k;
        }
        return 0;
}

/* A fresh private user config dir for one pull: DIR/auth.d/registry.json, in rkt's format. */
static int auth_dir_new(rkl_images *im, const rkl_imageref *ref, const char *user, const char *pass,
                        char **ret_dir, rkl_error *reterr)
{
        _cleanup_free_ char *dir = rkl_xasprintf("%s/pull-XXXXXX", im->pulls_dir);
        if (!mkdtemp(dir)) /* mode 0700 */
                return rkl_error_set(reterr, -errno, "cannot create a pull dir: %m");
        _cleanup_free_ char *authd = rkl_xasprintf("%s/auth.d", dir);
        int r = 0;
        if (mkdir(authd, 0700) < 0)
                r = rkl_error_set(reterr, -errno, "cannot create '%s': %m", authd);

        if (r >= 0) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();
                json_object *regs = json_object_new_array(), *creds = json_object_new_object();
                json_object_object_add(o, "rktKind", json_object_new_string("dockerAuth"));
                json_object_object_add(o, "rktVersion", json_object_new_string("v1"));
                /* rkt matches the host it fetches from; Docker Hub goes by several. */
                if (streq(ref->registry, "docker.io")) {
                        json_object_array_add(regs, json_object_new_string("registry-1.docker.io"));
                        json_object_array_add(regs, json_object_new_string("index.docker.io"));
                }
                json_object_array_add(regs, json_object_new_string(ref->registry));
                json_object_object_add(o, "registries", regs);
                json_object_object_add(creds, "user", json_object_new_string(user));
                json_object_object_add(creds, "password", json_object_new_string(pass));
                json_object_object_add(o, "credentials", creds);
                _cleanup_close_ int dfd = open(authd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                r = dfd < 0 ? -errno
                            : write_private(
                                  dfd, "registry.json",
                                  json_object_to_json_string_ext(
                                      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
                if (r < 0)
                        r = rkl_error_set(reterr, r, "cannot write credentials: %s", strerror(-r));
        }
        if (r < 0) {
                (void)rkl_rm_rf_at(AT_FDCWD, dir);
                return r;
        }
        *ret_dir = TAKE_PTR(dir);
        return 0;
}

static int pull_failed(int r, const char *what, const char *host, uint64_t timeout,
                       rkl_error *reterr)
{
        switch (r) {
        case -ENOENT:
                return rkl_error_prefix(reterr, "image '%s' not found", what);
        case -EACCES:
                return rkl_error_prefix(reterr,
                                        "not authorised to pull '%s' (credentials missing or "
                                        "refused)",
                                        what);
        case -EHOSTUNREACH:
                return rkl_error_prefix(reterr, "registry '%s' unreachable while pulling '%s'",
                                        host, what);
        case -ETIMEDOUT:
                return rkl_error_set(reterr, r, "pulling '%s' took longer than %llu s", what,
                                     (unsigned long long)(timeout / USEC_PER_SEC));
        default:
                return rkl_error_prefix(reterr, "cannot pull '%s'", what);
        }
}

static int do_pull(rkl_images *im, const rkl_imageref *ref, const char *key,
                   const rkl_image_auth *auth, char **ret_id, rkl_error *reterr)
{
        _cleanup_free_ char *user = NULL, *pass = NULL, *dir = NULL, *id = NULL;
        int r;

        r = auth_creds(auth, &user, &pass, reterr);
        if (r < 0)
                return r;
        if (user) {
                r = auth_dir_new(im, ref, user, pass, &dir, reterr);
                if (r < 0)
                        return r;
        }

        /* Mirrors first, in the configured order, then the registry itself (containerd's
         * order). The mirror host replaces the registry in the reference fetched. */
        const char *host = ref->registry;
        r = -ENOENT;
        pthread_rwlock_rdlock(&im->store_lock);
        for (size_t i = 0; i <= im->n_mirrors; i++) {
                const mirror *m = i < im->n_mirrors ? &im->mirrors[i] : NULL;
                if (m && !streq(m->registry, ref->registry))
                        continue;
                host = m ? m->host : ref->registry;
                _cleanup_free_ char *target = rkl_imageref_to_rkt(ref, m ? m->host : NULL);
                rkl_rkt_fetch_opts o = {
                    /* A tag may have moved; a digest cannot. */
                    .pull_policy = ref->digest ? "new" : "update",
                    .user_config = dir,
                    .insecure_http = m && m->http,
                    .timeout_usec = im->pull_timeout,
                };
                rkl_error_clear(reterr);
                r = rkl_rkt_image_fetch(im->rkt, target, &o, &id, reterr);
                if (r >= 0)
                        break;
        }
        pthread_rwlock_unlock(&im->store_lock);
        if (dir)
                (void)rkl_rm_rf_at(AT_FDCWD, dir);
        if (r < 0)
                return pull_failed(r, key, host, im->pull_timeout, reterr);

        /* Record the tag and refresh in one go: a refresh that listed the store before the
         * fetch ended would otherwise drop the tag of an image it did not see. */
        RKL_GUARD(&im->op_lock);
        {
                RKL_GUARD(&im->lock);
                _cleanup_free_ char *alias_ref =
                    ref->digest ? rkl_imageref_digested(ref) : rkl_imageref_tagged(ref);
                alias_set(im, alias_ref, id, rkl_realtime_nsec());
                (void)tags_save(im);
        }
        r = refresh_locked(im, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "pulled '%s' but cannot read rkt's image store",
                                        key);
        *ret_id = TAKE_PTR(id);
        return 0;
}

static void job_unref_locked(pull_job *j)
{
        if (--j->refs > 0)
                return;
        pthread_cond_destroy(&j->cond);
        free(j->key);
        free(j->id);
        free(j);
}

int rkl_images_pull(rkl_images *im, const char *ref, const rkl_image_auth *auth, char **ret_id,
                    rkl_error *reterr)
{
        _cleanup_(rkl_imageref_done) rkl_imageref r = {0};
        int k;

        k = rkl_imageref_parse(ref, &r, reterr);
        if (k < 0)
                return k;
        if (r.id) {
                /* An ID names what is in the store already: there is nothing to fetch. */
                k = rkl_images_resolve(im, ref, ret_id);
                if (k < 0)
                        return rkl_error_set(reterr, -ENOENT,
                                             "image ID '%s' is not in the store; pull it by name",
                                             ref);
                return 0;
        }
        if (!im->rkt)
                return no_rkt(reterr);

        _cleanup_free_ char *key = rkl_imageref_to_string(&r);
        pull_job *j;
        {
                RKL_GUARD(&im->pull_lock);
                j = rkl_hashmap_get(im->pulls, key);
                if (j) {
                        /* Someone fetches this already: share its outcome. */
                        j->refs++;
                        while (!j->done)
                                pthread_cond_wait(&j->cond, &im->pull_lock);
                        k = j->r;
                        if (k < 0 && reterr)
                                *reterr = j->err;
                        else if (k >= 0)
                                *ret_id = rkl_xstrdup(j->id);
                        job_unref_locked(j);
                        return k;
                }
                j = rkl_xnew0(pull_job, 1);
                j->key = rkl_xstrdup(key);
                j->refs = 1;
                pthread_cond_init(&j->cond, NULL);
                rkl_hashmap_put(im->pulls, j->key, j);
        }

        rkl_error err = RKL_ERROR_INIT;
        char *id = NULL;
        k = do_pull(im, &r, key, auth, &id, &err);

        RKL_GUARD(&im->pull_lock);
        rkl_hashmap_remove(im->pulls, j->key);
        j->done = true;
        j->r = k;
        j->err = err;
        j->id = id;
        pthread_cond_broadcast(&j->cond);
        if (k < 0 && reterr)
                *reterr = err;
        else if (k >= 0)
                *ret_id = rkl_xstrdup(id);
        job_unref_locked(j);
        return k;
}

/* ---- Remove ---- */

int rkl_images_remove(rkl_images *im, const char *ref, rkl_images_in_use_fn in_use, void *userdata,
                      rkl_error *reterr)
{
        _cleanup_(rkl_imageref_done) rkl_imageref parsed = {0};
        _cleanup_free_ char *id = NULL, *user = NULL;
        int r;

        r = rkl_imageref_parse(ref, &parsed, reterr);
        if (r < 0)
                return r;
        r = rkl_images_resolve(im, ref, &id);
        if (r == -ENOENT)
                return 0; /* CRI: removing what is gone succeeds */
        if (r == -ENOTUNIQ)
                return rkl_error_set(reterr, r, "image ID prefix '%s' is ambiguous", ref);
        if (r < 0)
                return rkl_error_set(reterr, r, "image '%s': %s", ref, strerror(-r));
        if (in_use && in_use(userdata, id, &user))
                return rkl_error_set(reterr, -EBUSY, "image '%s' (%s) is in use by %s", ref, id,
                                     user ? user : "a container");
        if (!im->rkt)
                return no_rkt(reterr);

        pthread_rwlock_wrlock(&im->store_lock);
        RKL_GUARD(&im->op_lock);
        r = rkl_rkt_image_rm(im->rkt, id, im->cmd_timeout, reterr);
        pthread_rwlock_unlock(&im->store_lock);
        if (r < 0 && r != -ENOENT)
                return rkl_error_prefix(reterr, "cannot remove image '%s'", ref);

        RKL_GUARD(&im->lock);
        entry *e = rkl_hashmap_remove(im->by_id, id);
        for (size_t i = 0; e && i < im->n_entries; i++)
                if (im->entries[i] == e) {
                        memmove(&im->entries[i], &im->entries[i + 1],
                                (im->n_entries - i - 1) * sizeof(entry *));
                        im->n_entries--;
                        break;
                }
        bool dropped = false;
        for (size_t i = 0; i < im->n_aliases;)
                if (streq(im->aliases[i].id, id)) {
                        alias_drop_at(im, i);
                        dropped = true;
                } else
                        i++;
        if (dropped)
                (void)tags_save(im);
        index_rebuild(im); /* before e goes: the index points at it */
        entry_free(e);
        return 0;
}

/* ---- Filesystem usage ---- */

void rkl_images_fs_usage_done(rkl_images_fs_usage *u)
{
        free(u->path);
        free(u->mountpoint);
        *u = (rkl_images_fs_usage){0};
}

static void du_at(int fd, unsigned depth, uint64_t *bytes, uint64_t *inodes)
{
        _cleanup_closedir_ DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                (*inodes)++;
                *bytes += (uint64_t)st.st_blocks * 512;
                if (S_ISDIR(st.st_mode) && depth < DU_MAX_DEPTH) {
                        int sub = openat(dirfd(d), de->d_name,
                                         O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                        if (sub >= 0)
                                du_at(sub, depth + 1, bytes, inodes);
                }
        }
}

/* The longest mount point in /proc/self/mountinfo that holds path. */
static char *mountpoint_of(const char *path)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        char *best = NULL, *line = NULL;
        size_t cap = 0, best_len = 0;
        while (f && getline(&line, &cap, f) > 0) {
                /* id parent major:minor root mountpoint ...; octal escapes in paths. */
                char *p = line;
                for (int field = 0; field < 4 && p; field++)
                        p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
                if (!p)
                        continue;
                size_t n = strcspn(p, " ");
                char *mp = rkl_xmalloc(n + 1), *o = mp;
                for (size_t i = 0; i < n; i++) {
                        if (p[i] == '\\' && i + 3 < n && p[i + 1] >= '0' && p[i + 1] <= '3') {
                                *o++ = (char)((p[i + 1] - '0') * 64 + (p[i + 2] - '0') * 8 +
                                              (p[i + 3] - '0'));
                                i += 3;
                        } else
                                *o++ = p[i];
                }
                *o = 0;
                size_t m = strlen(mp);
                bool holds = streq(mp, "/") ||
                             (strncmp(path, mp, m) == 0 && (path[m] == 0 || path[m] == '/'));
                if (holds && (m > best_len || !best)) {
                        free(best);
                        best = mp;
                        best_len = m;
                } else
                        free(mp);
        }
        free(line);
        return best ? best : rkl_xstrdup("/");
}

int rkl_images_fs_info(rkl_images *im, rkl_images_fs_usage *ret, rkl_error *reterr)
{
        RKL_GUARD(&im->fs_lock);
        uint64_t now = rkl_now_usec(CLOCK_MONOTONIC);

        if (!im->fs_at_usec || now - im->fs_at_usec >= FS_INFO_MAX_AGE) {
                rkl_images_fs_usage u = {.timestamp_ns = rkl_realtime_nsec()};
                u.path = rkl_xasprintf("%s/cas", im->data_dir);
                /* Before the first fetch rkt has no store: measure where it will be. */
                _cleanup_free_ char *probe = rkl_xstrdup(u.path);
                struct statvfs sv;
                while (statvfs(probe, &sv) < 0) {
                        char *slash = strrchr(probe, '/');
                        if (errno != ENOENT || !slash || slash == probe) {
                                int r = -errno;
                                rkl_images_fs_usage_done(&u);
                                return rkl_error_set(reterr, r, "statvfs '%s': %s", probe,
                                                     strerror(-r));
                        }
                        *slash = 0;
                }
                _cleanup_free_ char *real = realpath(probe, NULL);
                u.mountpoint = mountpoint_of(real ? real : probe);
                u.fs_size_bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
                u.fs_avail_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
                u.fs_inodes = sv.f_files;
                u.fs_inodes_free = sv.f_ffree;
                int fd = open(u.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd >= 0) {
                        struct stat st;
                        if (fstat(fd, &st) == 0) {
                                u.inodes_used = 1;
                                u.used_bytes = (uint64_t)st.st_blocks * 512;
                        }
                        du_at(fd, 0, &u.used_bytes, &u.inodes_used);
                }
                rkl_images_fs_usage_done(&im->fs);
                im->fs = u;
                im->fs_at_usec = now;
        }
        *ret = im->fs;
        ret->path = rkl_xstrdup(im->fs.path);
        ret->mountpoint = rkl_xstrdup(im->fs.mountpoint);
        return 0;
}
