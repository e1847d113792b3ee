#include "image.h"

#include "convert.h"
#include "page.h"
#include "pb.h"
#include "base/json.h"
#include "base/alloc.h"
#include "base/imageref.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/utf8.h"
#include "store/cache.h"
#include "images/images.h"
#include "base/banned.h"

#define MAX_CRED 4096

static int images_of(rkl_api_ctx *ctx, rkl_error *reterr)
{
        if (!ctx->images)
                return rkl_error_set(reterr, -EAGAIN, "the image service is not available");
        return 0;
}

static void wait_listed(void *images)
{
        (void)rkl_images_wait_listed(images, RKL_API_FIRST_LOOK_USEC);
}

/* Right after a start the reconciler has not listed rkt's images yet: a read of the
 * cache then would miss every image, so it waits for that first list. */
static bool wait_for_list(rkl_api_ctx *ctx)
{
        return !ctx->late && !rkl_images_wait_listed(ctx->images, 0);
}

/* A client's image reference: bounded, UTF-8, and well-formed. */
static int check_ref(const char *field, const Runtime__V1__ImageSpec *spec, bool required,
                     rkl_error *reterr)
{
        const char *s = spec ? spec->image : NULL;
        int r = rkl_api_check_string(field, s, RKL_IMAGEREF_MAX, required, reterr);
        if (r < 0 || isempty(s))
                return r;
        _cleanup_(rkl_imageref_done) rkl_imageref ref = {0};
        r = rkl_imageref_parse(s, &ref, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "%s", field);
        return 0;
}

/* The images ListImages and StreamImages answer, from the image cache once the reconciler
 * has listed rkt's images; before that, RKL_API_DEFERRED (the call waits for the list). */
static int images_listed(rkl_api_ctx *ctx, const Runtime__V1__ImageFilter *f, rkl_image ***ret,
                         size_t *ret_n, rkl_error *reterr)
{
        const Runtime__V1__ImageSpec *filter = f ? f->image : NULL;
        int r = images_of(ctx, reterr);
        if (r >= 0)
                r = check_ref("filter.image.image", filter, false, reterr);
        if (r < 0)
                return r;
        if (wait_for_list(ctx))
                return rkl_api_defer_until(ctx, RKL_API_POOL_SLOW, wait_listed, ctx->images);
        return rkl_images_list(ctx->images, filter ? filter->image : NULL, ret, ret_n, reterr);
}

static char **pb_strv(rkl_arena *a, char **l, size_t *ret_n)
{
        size_t n = rkl_strv_length(l);
        char **out = rkl_arena_newa(char *, a, n ? n : 1);
        for (size_t i = 0; i < n; i++)
                out[i] = rkl_api_pb_text(a, l[i]);
        *ret_n = n;
        return out;
}

static Runtime__V1__Image *image_pb(rkl_arena *a, const rkl_image *i)
{
        Runtime__V1__Image *p = rkl_arena_newa(Runtime__V1__Image, a, 1);
        runtime__v1__image__init(p);
        p->id = rkl_api_pb_text(a, i->id);
        p->repo_tags = pb_strv(a, i->repo_tags, &p->n_repo_tags);
        p->repo_digests = pb_strv(a, i->repo_digests, &p->n_repo_digests);
        p->size = i->size;
        if (i->has_uid) {
                Runtime__V1__Int64Value *u = rkl_arena_newa(Runtime__V1__Int64Value, a, 1);
                runtime__v1__int64_value__init(u);
                u->value = i->uid;
                p->uid = u;
        }
        p->username = rkl_api_pb_text(a, i->username);
        Runtime__V1__ImageSpec *spec = rkl_arena_newa(Runtime__V1__ImageSpec, a, 1);
        runtime__v1__image_spec__init(spec);
        spec->image = p->id;
        p->spec = spec;
        p->pinned = i->pinned;
        return p;
}

int rkl_api_list_images(rkl_api_ctx *ctx, const Runtime__V1__ListImagesRequest *req,
                        Runtime__V1__ListImagesResponse *resp, rkl_error *reterr)
{
        rkl_image **l = NULL;
        size_t n = 0;
        int r = images_listed(ctx, req->filter, &l, &n, reterr);
        if (r < 0 || r == RKL_API_DEFERRED)
                return r;
        resp->images = rkl_arena_newa(Runtime__V1__Image *, ctx->arena, n ? n : 1);
        for (size_t i = 0; i < n; i++)
                resp->images[resp->n_images++] = image_pb(ctx->arena, l[i]);
        rkl_image_array_free(l, n);
        return 0;
}

int rkl_api_image_status(rkl_api_ctx *ctx, const Runtime__V1__ImageStatusRequest *req,
                         Runtime__V1__ImageStatusResponse *resp, rkl_error *reterr)
{
        _cleanup_(rkl_image_freep) rkl_image *i = NULL;
        rkl_arena *a = ctx->arena;
        int r;

        r = images_of(ctx, reterr);
        if (r >= 0)
                r = check_ref("image.image", req->image, true, reterr);
        if (r < 0)
                return r;
        if (wait_for_list(ctx))
                return rkl_api_defer_until(ctx, RKL_API_POOL_SLOW, wait_listed, ctx->images);
        r = rkl_images_status(ctx->images, req->image->image, &i, reterr);
        if (r == -ENOENT || r == -ENOTUNIQ)
                return 0; /* CRI: an unknown image is an empty answer, not an error */
        if (r < 0)
                return r;
        resp->image = image_pb(a, i);

        if (req->verbose) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "id", rkl_api_json_str(i->id));
                json_object_object_add(o, "name", rkl_api_json_str(i->name));
                json_object_object_add(o, "size", json_object_new_int64((int64_t)i->size));
                json_object_object_add(o, "importedAt", rkl_api_json_ns(i->import_time_ns));
                json_object_object_add(o, "exec", rkl_json_new_strv(i->exec));
                json_object_object_add(o, "workingDir", rkl_api_json_str(i->working_dir));
                json_object_object_add(o, "user",
                                       i->has_uid ? json_object_new_int64(i->uid)
                                                  : rkl_api_json_str(i->username));
                RKL_API_PB_SET_INFO(a, resp, Runtime__V1__ImageStatusResponse__InfoEntry,
                                    runtime__v1__image_status_response__info_entry__init, o);
        }
        return 0;
}

/* ---- Deferred calls: everything they need is copied into the call's arena first ---- */

typedef struct image_job {
        rkl_api_call *call;
        rkl_images *images;
        rkl_cache *cache;
        rkl_arena *arena;
        char *ref;
        bool has_auth;
        rkl_image_auth auth;
        ProtobufCMessage *resp;
} image_job;

static image_job *job_new(rkl_api_ctx *ctx, const char *ref, void *resp)
{
        image_job *j = rkl_arena_newa(image_job, ctx->arena, 1);
        j->call = ctx->call;
        j->images = ctx->images;
        j->cache = ctx->cache;
        j->arena = ctx->arena;
        j->ref = ref ? rkl_arena_strdup(ctx->arena, ref) : NULL;
        j->resp = resp;
        return j;
}

static const char *arena_cred(rkl_arena *a, const char *s)
{
        return isempty(s) ? NULL : rkl_arena_strdup(a, s);
}

static void pull_run(void *userdata)
{
        image_job *j = userdata;
        rkl_error err = RKL_ERROR_INIT;
        _cleanup_free_ char *id = NULL;
        int r;

        if (rkl_api_call_cancelled(j->call)) {
                rkl_api_call_finish(j->call, rkl_error_set(&err, -ECANCELED, "cancelled"), &err);
                return;
        }
        r = rkl_images_pull(j->images, j->ref, j->has_auth ? &j->auth : NULL, &id, &err);
        if (r >= 0) {
                ((Runtime__V1__PullImageResponse *)j->resp)->image_ref =
                    rkl_api_pb_text(j->arena, id);
                rkl_log_info("pulled image '%s' as %s", j->ref, id);
        } else
                rkl_log_info("pull of '%s' failed: %s", j->ref, err.msg);
        rkl_api_call_finish(j->call, r, &err);
}

int rkl_api_pull_image(rkl_api_ctx *ctx, const Runtime__V1__PullImageRequest *req,
                       Runtime__V1__PullImageResponse *resp, rkl_error *reterr)
{
        const Runtime__V1__AuthConfig *a = req->auth;
        int r;

        r = images_of(ctx, reterr);
        if (r >= 0)
                r = check_ref("image.image", req->image, true, reterr);
        if (r < 0)
                return r;
        if (a) {
                static const struct {
                        const char *field;
                        size_t offset;
                } fields[] = {
                    {"auth.username", offsetof(Runtime__V1__AuthConfig, username)},
                    {"auth.password", offsetof(Runtime__V1__AuthConfig, password)},
                    {"auth.auth", offsetof(Runtime__V1__AuthConfig, auth)},
                    {"auth.server_address", offsetof(Runtime__V1__AuthConfig, server_address)},
                    {"auth.identity_token", offsetof(Runtime__V1__AuthConfig, identity_token)},
                    {"auth.registry_token", offsetof(Runtime__V1__AuthConfig, registry_token)},
                };
                for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                        const char *s = *(char *const *)((const char *)a + fields[i].offset);
                        /* Secrets: the message names the field, never the value. */
                        if (s && (strlen(s) > MAX_CRED || !rkl_utf8_is_valid(s, strlen(s))))
                                return rkl_error_set(reterr, -EINVAL,
                                                     "%s: longer than %d bytes or not UTF-8",
                                                     fields[i].field, MAX_CRED);
                }
        }

        image_job *j = job_new(ctx, req->image->image, resp);
        if (a) {
                j->has_auth = true;
                j->auth = (rkl_image_auth){
                    .username = arena_cred(ctx->arena, a->username),
                    .password = arena_cred(ctx->arena, a->password),
                    .auth = arena_cred(ctx->arena, a->auth),
                    .server_address = arena_cred(ctx->arena, a->server_address),
                    .identity_token = arena_cred(ctx->arena, a->identity_token),
                    .registry_token = arena_cred(ctx->arena, a->registry_token),
                };
        }
        return rkl_api_defer(ctx, pull_run, j);
}

/* Containers a refused RemoveImage names, at most. */
#define IN_USE_NAMED 8

bool rkl_api_image_in_use(rkl_cache *cache, rkl_images *images, const char *image_id,
                          char **ret_user)
{
        rkl_container_view **v = NULL;
        size_t n = 0, users = 0;
        _cleanup_free_ char *named = NULL;

        if (rkl_cache_container_list(cache, NULL, &v, &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                const rkl_container_record *c = v[i]->rec;
                if (!rkl_images_container_uses(images, c->observed.image_ref, c->spec.image,
                                               image_id))
                        continue;
                if (++users <= IN_USE_NAMED) {
                        char *s =
                            rkl_xasprintf("%s%s%s", named ? named : "", named ? ", " : "", c->id);
                        free(named);
                        named = s;
                }
        }
        rkl_container_views_unref(v, n);
        if (users > 0 && ret_user) {
                if (users > IN_USE_NAMED)
                        *ret_user = rkl_xasprintf("containers %s and %zu more", named,
                                                  users - IN_USE_NAMED);
                else
                        *ret_user = rkl_xasprintf("container%s %s", users > 1 ? "s" : "", named);
        }
        return users > 0;
}

static bool job_in_use(void *userdata, const char *image_id, char **ret_user)
{
        image_job *j = userdata;
        return rkl_api_image_in_use(j->cache, j->images, image_id, ret_user);
}

static void remove_run(void *userdata)
{
        image_job *j = userdata;
        rkl_error err = RKL_ERROR_INIT;
        /* Whether a container uses it is judged from the image list. */
        wait_listed(j->images);
        int r = rkl_images_remove(j->images, j->ref, job_in_use, j, &err);
        if (r >= 0)
                rkl_log_info("removed image '%s'", j->ref);
        rkl_api_call_finish(j->call, r, &err);
}

int rkl_api_remove_image(rkl_api_ctx *ctx, const Runtime__V1__RemoveImageRequest *req,
                         Runtime__V1__RemoveImageResponse *resp, rkl_error *reterr)
{
        int r = images_of(ctx, reterr);
        if (r >= 0)
                r = check_ref("image.image", req->image, true, reterr);
        if (r < 0)
                return r;
        return rkl_api_defer(ctx, remove_run, job_new(ctx, req->image->image, resp));
}

static Runtime__V1__UInt64Value *u64(rkl_arena *a, uint64_t v)
{
        Runtime__V1__UInt64Value *p = rkl_arena_newa(Runtime__V1__UInt64Value, a, 1);
        runtime__v1__uint64_value__init(p);
        p->value = v;
        return p;
}

static void fs_info_run(void *userdata)
{
        image_job *j = userdata;
        Runtime__V1__ImageFsInfoResponse *resp = (Runtime__V1__ImageFsInfoResponse *)j->resp;
        rkl_images_fs_usage u = {0};
        rkl_error err = RKL_ERROR_INIT;
        rkl_arena *a = j->arena;

        int r = rkl_images_fs_info(j->images, &u, &err);
        if (r >= 0) {
                Runtime__V1__FilesystemUsage *f =
                    rkl_arena_newa(Runtime__V1__FilesystemUsage, a, 1);
                runtime__v1__filesystem_usage__init(f);
                f->timestamp = u.timestamp_ns;
                Runtime__V1__FilesystemIdentifier *id =
                    rkl_arena_newa(Runtime__V1__FilesystemIdentifier, a, 1);
                runtime__v1__filesystem_identifier__init(id);
                id->mountpoint = rkl_api_pb_text(a, u.mountpoint);
                f->fs_id = id;
                f->used_bytes = u64(a, u.used_bytes);
                f->inodes_used = u64(a, u.inodes_used);
                resp->image_filesystems = rkl_arena_newa(Runtime__V1__FilesystemUsage *, a, 1);
                resp->image_filesystems[resp->n_image_filesystems++] = f;
                rkl_images_fs_usage_done(&u);
        }
        rkl_api_call_finish(j->call, r, &err);
}

int rkl_api_image_fs_info(rkl_api_ctx *ctx, const Runtime__V1__ImageFsInfoRequest *req,
                          Runtime__V1__ImageFsInfoResponse *resp, rkl_error *reterr)
{
        int r = images_of(ctx, reterr);
        if (r < 0)
                return r;
        /* It walks rkt's store: not on a completion-queue thread. */
        return rkl_api_defer(ctx, fs_info_run, job_new(ctx, NULL, resp));
}

typedef struct image_pages {
        rkl_image **l;
        size_t n;
} image_pages;

static const rkl_blob *image_page_item(void *userdata, size_t i, rkl_arena *a, rkl_error *reterr)
{
        return rkl_api_page_pack(a, &image_pb(a, ((image_pages *)userdata)->l[i])->base);
}

static void image_pages_free(void *userdata)
{
        image_pages *p = userdata;
        rkl_image_array_free(p->l, p->n);
        free(p);
}

int rkl_api_stream_images(rkl_api_ctx *ctx, const Runtime__V1__StreamImagesRequest *req,
                          Runtime__V1__StreamImagesResponse *resp, rkl_error *reterr)
{
        rkl_image **l = NULL;
        size_t n = 0;
        int r = images_listed(ctx, req->filter, &l, &n, reterr);
        if (r < 0 || r == RKL_API_DEFERRED)
                return r;
        image_pages *p = rkl_xnew0(image_pages, 1);
        *p = (image_pages){.l = l, .n = n};
        rkl_api_page_list pages = {.field = 1 /* StreamImagesResponse.images */,
                                   .n = n,
                                   .item = image_page_item,
                                   .userdata = p,
                                   .free = image_pages_free};
        return rkl_api_page_stream(ctx, &pages);
}
