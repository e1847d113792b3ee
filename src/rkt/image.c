#include "image.h"

#include "rkt-internal.h"
#include "base/json.h"
#include "base/alloc.h"
#include "base/imageref.h"
#include "base/strv.h"
#include "base/banned.h"

#define NAME_MAX_LEN  1024
#define EXEC_MAX_ARGS 4096

/* Adds context and keeps r even when the caller passed no rkl_error (prefix returns -EIO). */
#define PREFIX(r, ...) ((void)rkl_error_prefix(reterr, __VA_ARGS__), (r))

static bool is_ws(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void rkl_rkt_image_done(rkl_rkt_image *i)
{
        free(i->id);
        free(i->name);
        *i = (rkl_rkt_image){0};
}

void rkl_rkt_images_free(rkl_rkt_image *l, size_t n)
{
        for (size_t i = 0; l && i < n; i++)
                rkl_rkt_image_done(&l[i]);
        free(l);
}

int rkl_rkt_image_list_parse(const char *buf, size_t len, rkl_rkt_image **ret, size_t *ret_n,
                             rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *root = NULL;
        int r;

        r = rkl_json_parse(buf, len, RKL_RKT_IMAGE_LIST_MAX, &root, reterr);
        if (r < 0)
                return PREFIX(r, "image list");
        if (!root) { /* rkt prints null for an empty store */
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        if (!json_object_is_type(root, json_type_array))
                return rkl_error_set(reterr, -EBADMSG, "image list: not an array");
        size_t n = json_object_array_length(root);
        if (n > RKL_RKT_MAX_IMAGES)
                return rkl_error_set(reterr, -EBADMSG, "image list: %zu images", n);

        rkl_rkt_image *l = rkl_xnew0(rkl_rkt_image, n ? n : 1);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(root, i);
                const char *id = NULL, *name = NULL;
                int64_t size = 0;
                if (!e || !json_object_is_type(e, json_type_object)) {
                        r = rkl_error_set(reterr, -EBADMSG, "not an object");
                        goto fail;
                }
                r = rkl_json_get_string(e, "id", 7 + RKL_IMAGE_ID_HEX_MAX, &id, reterr);
                if (r >= 0)
                        r = rkl_json_get_string(e, "name", NAME_MAX_LEN, &name, reterr);
                if (r >= 0)
                        r = rkl_json_get_int(e, "import_time", &l[i].import_time_ns, reterr);
                if (r >= 0)
                        r = rkl_json_get_int(e, "last_used_time", &l[i].last_used_ns, reterr);
                if (r >= 0)
                        r = rkl_json_get_int(e, "size", &size, reterr);
                if (r < 0)
                        goto fail;
                if (!rkl_image_id_is_valid(id)) {
                        r = rkl_error_set(reterr, -EBADMSG, "'id' is not an image ID");
                        goto fail;
                }
                if (size < 0) {
                        r = rkl_error_set(reterr, -EBADMSG, "negative size");
                        goto fail;
                }
                l[i].id = rkl_xstrdup(id);
                l[i].name = rkl_xstrdup(name ? name : "");
                l[i].size = (uint64_t)size;
                continue;
        fail:
                rkl_rkt_images_free(l, n);
                return PREFIX(r, "image list: [%zu]", i);
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

void rkl_rkt_image_manifest_done(rkl_rkt_image_manifest *m)
{
        free(m->name);
        rkl_kvs_done(&m->labels);
        rkl_kvs_done(&m->annotations);
        free(m->user);
        free(m->group);
        rkl_strv_free(m->exec);
        free(m->working_dir);
        rkl_kvs_done(&m->environment);
        rkl_strv_free(m->entrypoint);
        *m = (rkl_rkt_image_manifest){0};
}

/* appc name/value arrays ("labels", "annotations", "environment"); absent or null: empty. */
static int parse_kvs(json_object *parent, const char *key, rkl_kvs *out, rkl_error *reterr)
{
        json_object *o = NULL;
        if (!json_object_object_get_ex(parent, key, &o) || !o)
                return 0;
        if (!json_object_is_type(o, json_type_array))
                return rkl_error_set(reterr, -EBADMSG, "'%s' is not an array", key);
        size_t n = json_object_array_length(o);
        if (n > RKL_MAX_KV)
                return rkl_error_set(reterr, -EBADMSG, "'%s': more than %d entries", key,
                                     RKL_MAX_KV);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(o, i);
                const char *name = NULL, *value = NULL;
                int r;
                if (!e || !json_object_is_type(e, json_type_object))
                        return rkl_error_set(reterr, -EBADMSG, "'%s'[%zu] is not an object", key,
                                             i);
                r = rkl_json_get_string(e, "name", RKL_MAX_KEY, &name, reterr);
                if (r >= 0)
                        r = rkl_json_get_string(e, "value", RKL_MAX_VALUE, &value, reterr);
                if (r < 0)
                        return PREFIX(r, "'%s'[%zu]", key, i);
                if (isempty(name) || !value)
                        return rkl_error_set(reterr, -EBADMSG, "'%s'[%zu] lacks name or value", key,
                                             i);
                /* appc forbids duplicates; the first one wins rather than failing the image. */
                if (!rkl_kvs_get(out, name))
                        rkl_kvs_add(out, name, value);
        }
        return 0;
}

/* A JSON array of strings (docker2aci's annotations), as a strv; NULL for [] or null. */
static int parse_strv_json(const char *text, const char *what, char ***ret, rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *o = NULL;
        int r = rkl_json_parse(text, strlen(text), RKL_MAX_STRING, &o, reterr);
        if (r < 0)
                return PREFIX(r, "%s", what);
        if (!o) {
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(o, json_type_array))
                return rkl_error_set(reterr, -EBADMSG, "%s: not an array", what);
        size_t n = json_object_array_length(o);
        if (n > EXEC_MAX_ARGS)
                return rkl_error_set(reterr, -EBADMSG, "%s: %zu arguments", what, n);
        _cleanup_strv_free_ char **l = NULL;
        for (size_t i = 0; i < n; i++) {
                json_object *v = json_object_array_get_idx(o, i);
                if (!v || !json_object_is_type(v, json_type_string) ||
                    strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
                        return rkl_error_set(reterr, -EBADMSG, "%s[%zu]: not a string", what, i);
                rkl_strv_push(&l, json_object_get_string(v));
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* The image's own entrypoint (image.h): docker2aci's annotation for a Docker image (one
 * that has appc.io/docker/repository), else the first word of app.exec. */
static int entrypoint_of(rkl_rkt_image_manifest *m, rkl_error *reterr)
{
        const char *ep = rkl_kvs_get(&m->annotations, "appc.io/docker/entrypoint");
        if (ep)
                return parse_strv_json(ep, "annotation appc.io/docker/entrypoint", &m->entrypoint,
                                       reterr);
        if (rkl_kvs_get(&m->annotations, "appc.io/docker/repository"))
                return 0; /* a Docker image without an ENTRYPOINT */
        if (m->exec && m->exec[0])
                rkl_strv_push(&m->entrypoint, m->exec[0]);
        return 0;
}

static int parse_app(json_object *app, rkl_rkt_image_manifest *m, rkl_error *reterr)
{
        const char *user, *group, *wd;
        json_object *exec = NULL;
        int r;

        r = rkl_json_get_string(app, "user", RKL_MAX_NAME, &user, reterr);
        if (r >= 0)
                r = rkl_json_get_string(app, "group", RKL_MAX_NAME, &group, reterr);
        if (r >= 0)
                r = rkl_json_get_string(app, "workingDirectory", RKL_MAX_PATH, &wd, reterr);
        if (r >= 0)
                r = parse_kvs(app, "environment", &m->environment, reterr);
        if (r < 0)
                return r;
        m->user = rkl_xstrdup(user);
        m->group = rkl_xstrdup(group);
        m->working_dir = rkl_xstrdup(wd);

        if (json_object_object_get_ex(app, "exec", &exec) && exec) {
                if (!json_object_is_type(exec, json_type_array))
                        return rkl_error_set(reterr, -EBADMSG, "'exec' is not an array");
                size_t n = json_object_array_length(exec);
                if (n > EXEC_MAX_ARGS)
                        return rkl_error_set(reterr, -EBADMSG, "'exec': %zu arguments", n);
                m->exec = rkl_xnew0(char *, n + 1);
                for (size_t i = 0; i < n; i++) {
                        json_object *v = json_object_array_get_idx(exec, i);
                        if (!v || !json_object_is_type(v, json_type_string))
                                return rkl_error_set(reterr, -EBADMSG, "'exec'[%zu] not a string",
                                                     i);
                        size_t k = (size_t)json_object_get_string_len(v);
                        const char *s = json_object_get_string(v);
                        if (k > RKL_MAX_ARG || strlen(s) != k)
                                return rkl_error_set(reterr, -EBADMSG, "'exec'[%zu] too long", i);
                        m->exec[i] = rkl_xstrdup(s);
                }
        }
        return 0;
}

int rkl_rkt_image_manifest_parse(const char *buf, size_t len, rkl_rkt_image_manifest *ret,
                                 rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *root = NULL;
        _cleanup_(rkl_rkt_image_manifest_done) rkl_rkt_image_manifest m = {0};
        const char *kind, *name;
        json_object *app = NULL;
        int r;

        r = rkl_json_parse(buf, len, RKL_RKT_IMAGE_MANIFEST_MAX, &root, reterr);
        if (r < 0)
                return PREFIX(r, "image manifest");
        if (!root || !json_object_is_type(root, json_type_object))
                return rkl_error_set(reterr, -EBADMSG, "image manifest: not an object");
        r = rkl_json_get_string(root, "acKind", 64, &kind, reterr);
        if (r < 0 || !streq_ptr(kind, "ImageManifest"))
                return rkl_error_set(reterr, -EBADMSG,
                                     "image manifest: acKind is not ImageManifest");
        r = rkl_json_get_string(root, "name", NAME_MAX_LEN, &name, reterr);
        if (r >= 0 && isempty(name))
                r = rkl_error_set(reterr, -EBADMSG, "no name");
        if (r >= 0)
                r = parse_kvs(root, "labels", &m.labels, reterr);
        if (r >= 0)
                r = parse_kvs(root, "annotations", &m.annotations, reterr);
        if (r < 0)
                return PREFIX(r, "image manifest");
        m.name = rkl_xstrdup(name);

        if (json_object_object_get_ex(root, "app", &app) && app) {
                if (!json_object_is_type(app, json_type_object))
                        return rkl_error_set(reterr, -EBADMSG, "image manifest: 'app' not object");
                r = parse_app(app, &m, reterr);
                if (r < 0)
                        return PREFIX(r, "image manifest: app");
        }
        r = entrypoint_of(&m, reterr);
        if (r < 0)
                return PREFIX(r, "image manifest");
        *ret = m;
        m = (rkl_rkt_image_manifest){0};
        return 0;
}

int rkl_rkt_image_fetch_parse(const char *out, char **ret_id)
{
        if (!out)
                return -EBADMSG;
        /* rkt prints progress before the ID: the ID is the last non-empty line. */
        size_t end = strlen(out);
        while (end > 0 && is_ws(out[end - 1]))
                end--;
        size_t start = end;
        while (start > 0 && out[start - 1] != '\n')
                start--;
        _cleanup_free_ char *id = rkl_xstrndup(out + start, end - start);
        if (!rkl_image_id_is_valid(id))
                return -EBADMSG;
        *ret_id = TAKE_PTR(id);
        return 0;
}

int rkl_rkt_image_classify_error(const char *text)
{
        static const struct {
                const char *needle;
                int code;
        } table[] = {
            /* Credentials first: registries answer 404 to anonymous pulls of private
             * repositories only after a 401 challenge, and rkt reports that one. */
            {"HTTP 401", -EACCES},
            {"HTTP 403", -EACCES},
            {"unauthorized", -EACCES},
            {"authentication required", -EACCES},
            {"access denied", -EACCES},
            {"HTTP 404", -ENOENT},
            {"manifest unknown", -ENOENT},
            {"name unknown", -ENOENT},
            {"not found", -ENOENT},
            {"connection refused", -EHOSTUNREACH},
            {"no such host", -EHOSTUNREACH},
            {"network is unreachable", -EHOSTUNREACH},
            {"no route to host", -EHOSTUNREACH},
            {"i/o timeout", -EHOSTUNREACH},
            {"TLS handshake timeout", -EHOSTUNREACH},
            {"connection reset", -EHOSTUNREACH},
            {"dial tcp", -EHOSTUNREACH},
        };
        for (size_t i = 0; text && i < ELEMENTSOF(table); i++)
                if (strstr(text, table[i].needle))
                        return table[i].code;
        return -EIO;
}

char **rkl_rkt_image_fetch_args(const char *ref, const char *pull_policy)
{
        char **a = NULL;
        rkl_strv_push(&a, "image");
        rkl_strv_push(&a, "fetch");
        if (pull_policy)
                rkl_strv_consume(&a, rkl_xasprintf("--pull-policy=%s", pull_policy));
        rkl_strv_push(&a, "--full");
        /* A reference never starts with '-' (imageref checks), so it cannot read as a flag. */
        rkl_strv_push(&a, ref);
        return a;
}

/* Runs an image command; on a non-zero exit, reclassifies rkt's error for images. */
static int image_exec(rkl_rkt *d, char *const args[], const rkl_rkt__exec_opts *eo,
                      uint64_t timeout_usec, rkl_spawn_result *res, rkl_error *reterr)
{
        int r = rkl_rkt__exec(d, args, eo, timeout_usec, res, reterr);
        if (r < 0 && !res->timed_out && res->exit_code > 0) {
                int k = rkl_rkt_image_classify_error(res->err_len ? res->err : res->out);
                if (k != -EIO || r == -EIO) {
                        if (reterr)
                                reterr->code = k;
                        r = k;
                }
        }
        return r;
}

int rkl_rkt_image_fetch(rkl_rkt *d, const char *ref, const rkl_rkt_fetch_opts *o, char **ret_id,
                        rkl_error *reterr)
{
        _cleanup_strv_free_ char **args = rkl_rkt_image_fetch_args(ref, o->pull_policy);
        rkl_rkt__exec_opts eo = {
            .user_config = o->user_config,
            .extra_insecure = o->insecure_http ? "http" : NULL,
        };
        rkl_spawn_result res = {0};
        int r = image_exec(d, args, &eo, o->timeout_usec, &res, reterr);
        if (r >= 0) {
                r = rkl_rkt_image_fetch_parse(res.out, ret_id);
                if (r < 0)
                        r = rkl_error_set(reterr, r, "rkt image fetch: no image ID in its output");
        }
        rkl_spawn_result_done(&res);
        return r;
}

int rkl_rkt_image_list(rkl_rkt *d, uint64_t timeout_usec, rkl_rkt_image **ret, size_t *ret_n,
                       rkl_error *reterr)
{
        rkl_spawn_result res = {0};
        int r = image_exec(d, RKL_STRV("image", "list", "--format=json", "--full"), NULL,
                           timeout_usec, &res, reterr);
        if (r >= 0 && res.out_truncated)
                r = rkl_error_set(reterr, -EFBIG, "rkt image list: output too large");
        if (r >= 0)
                r = rkl_rkt_image_list_parse(res.out, res.out_len, ret, ret_n, reterr);
        rkl_spawn_result_done(&res);
        return r;
}

int rkl_rkt_image_cat_manifest(rkl_rkt *d, const char *id, uint64_t timeout_usec,
                               rkl_rkt_image_manifest *ret, rkl_error *reterr)
{
        rkl_spawn_result res = {0};
        int r =
            image_exec(d, RKL_STRV("image", "cat-manifest", id), NULL, timeout_usec, &res, reterr);
        if (r >= 0)
                r = rkl_rkt_image_manifest_parse(res.out, res.out_len, ret, reterr);
        rkl_spawn_result_done(&res);
        return r;
}

int rkl_rkt_image_rm(rkl_rkt *d, const char *id, uint64_t timeout_usec, rkl_error *reterr)
{
        rkl_spawn_result res = {0};
        int r = image_exec(d, RKL_STRV("image", "rm", id), NULL, timeout_usec, &res, reterr);
        rkl_spawn_result_done(&res);
        return r;
}
