/* The image cache: what rkt's image store holds, rebuilt by a refresh, and the reads that
 * answer from it (list, status, resolve, whether a container uses an image). Also the
 * lifecycle of rkl_images. */
#include "images-internal.h"

#include <fcntl.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/imageref.h"
#include "base/parse.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "rkt/image.h"
#include "rkt/rkt.h"
#include "base/banned.h"

#define DEFAULT_PULL_TIMEOUT_USEC    (30 * 60 * USEC_PER_SEC)
#define DEFAULT_COMMAND_TIMEOUT_USEC (60 * USEC_PER_SEC)

struct rkl_images__entry {
        char *id;
        char *list_name; /* rkt's name:version, when there is no manifest */
        uint64_t size;
        int64_t import_time_ns;
        bool has_manifest;
        rkl_rkt_image_manifest m;
        char *tag;    /* the manifest's name:version, normalised; NULL when none or hidden */
        char *digest; /* name@digest from the manifest, normalised; or NULL */
        /* The image clients see this one as: the oldest with the same registry manifest
         * (itself when none is older or it has none). rkt makes one image per tag pulled,
         * since the tag is in the ACI manifest; the registry's manifest digest says they are
         * one image, and CRI reports one image with all their tags. */
        rkl_images__entry *head;
};

/* The most recent claim wins. */
struct rkl_images__index_ent {
        char *key;
        rkl_images__entry *e;
        int64_t at_ns;
};

int rkl_images__no_rkt(rkl_error *reterr)
{
        return rkl_error_set(reterr, -EAGAIN, "no rkt binary is configured (--rkt-path)");
}

/* ---- Entries and the index (lock held) ---- */

static void entry_free(rkl_images__entry *e)
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

static void claim(rkl_images *im, const char *key, rkl_images__entry *e, int64_t at_ns)
{
        /* A tag whose image was removed is not taken back by an older image of rkt's. */
        if (rkl_images__tags_released(im, key, at_ns))
                return;
        rkl_images__index_ent *ie = rkl_hashmap_get(im->index, key);
        if (!ie) {
                ie = &im->index_ents[im->n_index_ents++];
                *ie = (rkl_images__index_ent){rkl_xstrdup(key), e, at_ns};
                rkl_hashmap_put(im->index, ie->key, ie);
        } else if (at_ns > ie->at_ns || (at_ns == ie->at_ns && strcmp(e->id, ie->e->id) > 0)) {
                ie->e = e;
                ie->at_ns = at_ns;
        }
}

/* The registry's manifest digest docker2aci records, when the image came from a registry. */
static const char *manifest_hash(const rkl_images__entry *e)
{
        const char *h =
            e->has_manifest ? rkl_kvs_get(&e->m.annotations, "appc.io/docker/manifesthash") : NULL;
        return h && strncmp(h, "sha256:", 7) == 0 ? h : NULL;
}

/* Points each entry at its head (entries sorted, oldest first). */
static void groups_rebuild(rkl_images *im)
{
        rkl_hashmap *heads = rkl_hashmap_new();
        for (size_t i = 0; i < im->n_entries; i++) {
                rkl_images__entry *e = im->entries[i];
                const char *h = manifest_hash(e);
                rkl_images__entry *head = h ? rkl_hashmap_get(heads, h) : NULL;
                if (!head && h)
                        rkl_hashmap_put(heads, h, e);
                e->head = head ? head : e;
        }
        rkl_hashmap_free(heads);
}

/* name@hash, normalised, for the image name of r. */
static char *digest_of(const rkl_imageref *r, const char *hash)
{
        rkl_imageref d = {0};
        _cleanup_free_ char *name = rkl_imageref_name(r);
        _cleanup_free_ char *ds = rkl_xasprintf("%s@%s", name, hash);
        char *out = rkl_imageref_parse(ds, &d, NULL) >= 0 ? rkl_imageref_digested(&d) : NULL;
        rkl_imageref_done(&d);
        return out;
}

/* The digest of a tag a client pulled of e: the registry's manifest digest under the name it
 * asked for (a mirror serves the same manifest). NULL for a digest or an ID. */
static char *alias_digest(const char *ref, const rkl_images__entry *e)
{
        const char *hash = manifest_hash(e);
        rkl_imageref r = {0};
        char *out = NULL;
        if (hash && !strchr(ref, '@') && rkl_imageref_parse(ref, &r, NULL) >= 0 && !r.id)
                out = digest_of(&r, hash);
        rkl_imageref_done(&r);
        return out;
}

/* The tags and digests e holds in the index go with it: released (tags.c). */
static void release_owned(rkl_images *im, const rkl_images__entry *e)
{
        for (size_t i = 0; i < im->n_index_ents; i++)
                if (im->index_ents[i].e == e)
                        rkl_images__tags_release(im, im->index_ents[i].key,
                                                 im->index_ents[i].at_ns);
}

static void index_rebuild(rkl_images *im)
{
        index_clear(im);
        rkl_images__tags_released_unuse(im);
        im->index_ents =
            rkl_xnew0(rkl_images__index_ent, 2 * im->n_entries + 2 * im->n_aliases + 1);
        for (size_t i = 0; i < im->n_entries; i++) {
                rkl_images__entry *e = im->entries[i];
                if (e->tag)
                        claim(im, e->tag, e, e->import_time_ns);
                if (e->digest)
                        claim(im, e->digest, e, e->import_time_ns);
        }
        for (size_t i = 0; i < im->n_aliases; i++) {
                rkl_images__entry *e = rkl_hashmap_get(im->by_id, im->aliases[i].id);
                if (!e)
                        continue;
                claim(im, im->aliases[i].ref, e, im->aliases[i].at_ns);
                _cleanup_free_ char *d = alias_digest(im->aliases[i].ref, e);
                if (d)
                        claim(im, d, e, im->aliases[i].at_ns);
        }
        rkl_images__tags_released_prune(im);
}

/* The manifest's own tag and digest; the list name when there is no manifest. */
static void entry_names(const rkl_images *im, rkl_images__entry *e)
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
        if (rkl_images__is_mirror_host(im, r.registry))
                goto out;
        e->tag = rkl_imageref_tagged(&r);
        e->digest = rkl_imageref_digested(&r);
        const char *hash = manifest_hash(e);
        if (!e->digest && hash)
                e->digest = digest_of(&r, hash);
out:
        rkl_imageref_done(&r);
}

static bool owns(const rkl_images *im, const char *key, const rkl_images__entry *e)
{
        rkl_images__index_ent *ie = rkl_hashmap_get(im->index, key);
        return ie && ie->e == e;
}

static void push_unique(char ***l, const char *s)
{
        RKL_STRV_FOREACH (p, *l)
                if (streq(*p, s))
                        return;
        rkl_strv_push(l, s);
}

/* The image head e stands for, with the tags and digests of all its entries. */
static rkl_image *image_copy(const rkl_images *im, const rkl_images__entry *e)
{
        rkl_image *i = rkl_xnew0(rkl_image, 1);
        i->id = rkl_xstrdup(e->id);
        i->repo_tags = rkl_xnew0(char *, 1);
        i->repo_digests = rkl_xnew0(char *, 1);
        for (size_t j = 0; j < im->n_entries; j++) {
                const rkl_images__entry *m = im->entries[j];
                if (m->head != e)
                        continue;
                if (m->tag && owns(im, m->tag, m))
                        push_unique(&i->repo_tags, m->tag);
                if (m->digest && owns(im, m->digest, m))
                        push_unique(&i->repo_digests, m->digest);
                for (size_t k = 0; k < im->n_aliases; k++) {
                        const rkl_images__alias *a = &im->aliases[k];
                        if (!streq(a->id, m->id))
                                continue;
                        if (owns(im, a->ref, m))
                                push_unique(strchr(a->ref, '@') ? &i->repo_digests : &i->repo_tags,
                                            a->ref);
                        _cleanup_free_ char *d = alias_digest(a->ref, m);
                        if (d && owns(im, d, m))
                                push_unique(&i->repo_digests, d);
                }
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
                i->entrypoint = rkl_strv_copy(e->m.entrypoint);
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
        rkl_strv_free(i->entrypoint);
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
        im->pull_timeout_usec =
            cfg->pull_timeout_usec ? cfg->pull_timeout_usec : DEFAULT_PULL_TIMEOUT_USEC;
        im->cmd_timeout_usec =
            cfg->command_timeout_usec ? cfg->command_timeout_usec : DEFAULT_COMMAND_TIMEOUT_USEC;

        if (isempty(cfg->state_dir) || isempty(cfg->rkt_data_dir))
                return rkl_error_set(reterr, -EINVAL, "images: state and rkt data dirs needed");
        im->data_dir = rkl_xstrdup(cfg->rkt_data_dir);
        im->tags_path = rkl_xasprintf("%s/images.json", cfg->state_dir);
        im->pulls_dir = rkl_xasprintf("%s/pulls", cfg->state_dir);

        r = rkl_images__mirrors_parse(im, cfg->mirrors, reterr);
        if (r < 0)
                return r;

        if (cfg->rkt_path) {
                rkl_rkt_config rc = {.rkt_path = cfg->rkt_path, .data_dir = cfg->rkt_data_dir};
                r = rkl_rkt_new(&rc, &im->rkt, reterr);
                if (r < 0)
                        return r;
        }

        /* Leftovers of a crash mid-pull hold credentials: remove them before anything. A
         * failure is dropped: what stays is as private as it was (0700 dirs, 0600 files,
         * under the state dir), new pulls use fresh dirs beside it, the next start tries
         * again, and refusing to start would not remove it either. */
        (void)rkl_rm_rf_at(AT_FDCWD, im->pulls_dir);
        r = rkl_mkdir_p(im->pulls_dir, 0700);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot create '%s': %s", im->pulls_dir,
                                     strerror(-r));
        rkl_images__tags_load(im);
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
        rkl_images__tags_clear(im);
        for (size_t i = 0; i < im->n_index_ents; i++)
                free(im->index_ents[i].key);
        free(im->index_ents);
        rkl_hashmap_free(im->index);
        rkl_hashmap_free(im->pulls); /* empty: pulls hold no reference to im past return */
        rkl_images__mirrors_free(im);
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

static rkl_images__entry *entry_new(const rkl_rkt_image *li)
{
        rkl_images__entry *e = rkl_xnew0(rkl_images__entry, 1);
        e->id = rkl_xstrdup(li->id);
        e->list_name = rkl_xstrdup(li->name);
        e->size = li->size;
        e->import_time_ns = li->import_time_ns;
        return e;
}

static int cmp_import(const void *a, const void *b)
{
        const rkl_images__entry *x = *(rkl_images__entry *const *)a,
                                *y = *(rkl_images__entry *const *)b;
        if (x->import_time_ns != y->import_time_ns)
                return x->import_time_ns < y->import_time_ns ? -1 : 1;
        return strcmp(x->id, y->id);
}

int rkl_images__refresh_locked(rkl_images *im, rkl_error *reterr)
{
        rkl_rkt_image *list = NULL;
        size_t n = 0;
        int r;

        r = rkl_rkt_image_list(im->rkt, im->cmd_timeout_usec, &list, &n, reterr);
        if (r < 0)
                return r;

        /* Manifests of images not seen yet, without the lock: readers go on meanwhile. Only
         * refreshes and removals (serialised by op_lock) change the entries. */
        rkl_images__entry **fresh = rkl_xnew0(rkl_images__entry *, n + 1);
        for (size_t i = 0; i < n; i++) {
                bool known;
                {
                        RKL_GUARD(&im->lock);
                        known = rkl_hashmap_get(im->by_id, list[i].id) != NULL;
                }
                if (known)
                        continue;
                rkl_images__entry *e = entry_new(&list[i]);
                rkl_error err = RKL_ERROR_INIT;
                r = rkl_rkt_image_cat_manifest(im->rkt, e->id, im->cmd_timeout_usec, &e->m, &err);
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
        rkl_images__entry **entries = rkl_xnew0(rkl_images__entry *, n + 1);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                rkl_images__entry *e = fresh[i];
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
        /* What is left in the old map is gone from rkt's store: its tags with it. */
        size_t it = 0;
        void *v;
        while (rkl_hashmap_iterate(im->by_id, &it, NULL, &v)) {
                release_owned(im, v);
                entry_free(v);
        }
        rkl_hashmap_free(im->by_id);
        free(im->entries);
        im->by_id = by_id;
        im->entries = entries;
        im->n_entries = k;
        qsort(im->entries, im->n_entries, sizeof(rkl_images__entry *), cmp_import);
        groups_rebuild(im);

        rkl_images__tags_drop_unlisted(im);
        index_rebuild(im);

        free(fresh);
        rkl_rkt_images_free(list, n);
        return 0;
}

int rkl_images_refresh(rkl_images *im, rkl_error *reterr)
{
        int r;
        if (!im->rkt)
                r = rkl_images__no_rkt(reterr);
        else {
                RKL_GUARD(&im->op_lock);
                r = rkl_images__refresh_locked(im, reterr);
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

/* ---- Removal ---- */

void rkl_images__forget(rkl_images *im, const char *id)
{
        RKL_GUARD(&im->lock);
        rkl_images__entry *e = rkl_hashmap_remove(im->by_id, id);
        for (size_t i = 0; e && i < im->n_entries; i++)
                if (im->entries[i] == e) {
                        memmove(&im->entries[i], &im->entries[i + 1],
                                (im->n_entries - i - 1) * sizeof(rkl_images__entry *));
                        im->n_entries--;
                        break;
                }
        if (e)
                release_owned(im, e);
        rkl_images__tags_drop_image(im, id);
        groups_rebuild(im);
        index_rebuild(im); /* before e goes: the index points at it */
        entry_free(e);
}

char **rkl_images__members(rkl_images *im, const char *id)
{
        RKL_GUARD(&im->lock);
        char **l = rkl_xnew0(char *, 1);
        rkl_images__entry *head = rkl_hashmap_get(im->by_id, id);
        for (size_t i = 0; head && i < im->n_entries; i++)
                if (im->entries[i]->head == head->head)
                        rkl_strv_push(&l, im->entries[i]->id);
        return l;
}

char *rkl_images__head_id(rkl_images *im, const char *id)
{
        RKL_GUARD(&im->lock);
        rkl_images__entry *e = rkl_hashmap_get(im->by_id, id);
        return rkl_xstrdup(e ? e->head->id : id);
}

/* ---- Reads ---- */

/* The entry ref names (lock held). */
static int lookup_locked(rkl_images *im, const rkl_imageref *r, rkl_images__entry **ret)
{
        if (r->id) {
                /* A whole ID first; else a prefix of exactly one. */
                rkl_images__entry *found = rkl_hashmap_get(im->by_id, r->id);
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
                *ret = found->head;
                return 0;
        }
        /* containerd's rule: with a digest the digest decides, the tag is decoration. */
        _cleanup_free_ char *key = r->digest ? rkl_imageref_digested(r) : rkl_imageref_tagged(r);
        rkl_images__index_ent *ie = rkl_hashmap_get(im->index, key);
        if (!ie)
                return -ENOENT;
        *ret = ie->e->head;
        return 0;
}

int rkl_images_resolve(rkl_images *im, const char *ref, char **ret_id)
{
        _cleanup_(rkl_imageref_done) rkl_imageref r = {0};
        rkl_images__entry *e;
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

bool rkl_images_container_uses(rkl_images *im, const char *ran_id, const char *ref,
                               const char *image_id)
{
        if (!isempty(ran_id)) {
                /* It may have run another image of the same registry manifest. */
                _cleanup_free_ char *head = rkl_images__head_id(im, ran_id);
                return streq(head, image_id);
        }
        if (isempty(ref))
                return false;
        /* Not run yet: it will run what its reference names now. */
        _cleanup_free_ char *id = NULL;
        return rkl_images_resolve(im, ref, &id) >= 0 && streq(id, image_id);
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
        rkl_images__entry *e;
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
        size_t n = 0;
        for (size_t i = 0; i < im->n_entries; i++)
                if (im->entries[i]->head == im->entries[i])
                        l[n++] = image_copy(im, im->entries[i]);
        *ret = l;
        *ret_n = n;
        return 0;
}
