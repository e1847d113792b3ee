/* The pod-directory files' parsers: pure functions over untrusted bytes, the fuzz targets
 * (tests/fuzz/fuzz_poddir.c). */
#include "poddir.h"

#include <arpa/inet.h>

#include "poddir-internal.h"
#include "base/json.h"
#include "base/alloc.h"
#include "base/parse.h"
#include "base/banned.h"

#define NETINFO_MAX_N 64

/* Adds context and keeps r even when the caller passed no rkl_error (prefix returns -EIO). */
#define PREFIX(r, ...) ((void)rkl_error_prefix(reterr, __VA_ARGS__), (r))

static bool is_ws(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void rkl_poddir__trim(const char **buf, size_t *len)
{
        while (*len > 0 && is_ws(**buf)) {
                (*buf)++;
                (*len)--;
        }
        while (*len > 0 && is_ws((*buf)[*len - 1]))
                (*len)--;
}

/* A small decimal number file: digits only once trimmed; embedded NULs count as garbage. */
static int parse_small_uint(const char *buf, size_t len, uint64_t max, uint64_t *ret)
{
        char tmp[21];
        rkl_poddir__trim(&buf, &len);
        if (len == 0)
                return -ENODATA;
        if (len >= sizeof(tmp))
                return -EBADMSG;
        for (size_t i = 0; i < len; i++)
                if (buf[i] < '0' || buf[i] > '9')
                        return -EBADMSG;
        memcpy(tmp, buf, len);
        tmp[len] = 0;
        uint64_t v;
        int r = rkl_safe_atou64(tmp, &v);
        if (r < 0)
                return r == -EINVAL ? -EBADMSG : r;
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int rkl_poddir_parse_exit(const char *buf, size_t len, int *ret_code)
{
        uint64_t v;
        int r = parse_small_uint(buf, len, 255, &v);
        if (r < 0)
                return r;
        *ret_code = (int)v;
        return 0;
}

int rkl_poddir_parse_pid(const char *buf, size_t len, uint32_t *ret_pid)
{
        uint64_t v;
        int r = parse_small_uint(buf, len, INT32_MAX, &v);
        if (r < 0)
                return r;
        if (v == 0)
                return -ERANGE;
        *ret_pid = (uint32_t)v;
        return 0;
}

static int kvs_add_checked(rkl_kvs *l, const char *key, json_object *v, rkl_error *reterr)
{
        if (!json_object_is_type(v, json_type_string))
                return rkl_error_set(reterr, -EBADMSG, "value of '%s' is not a string", key);
        size_t kn = strlen(key), vn = (size_t)json_object_get_string_len(v);
        const char *value = json_object_get_string(v);
        if (kn == 0 || kn > RKL_MAX_KEY || vn > RKL_MAX_VALUE || strlen(value) != vn)
                return rkl_error_set(reterr, -EBADMSG, "bad key or value for '%.64s'", key);
        if (l->n >= RKL_MAX_KV)
                return rkl_error_set(reterr, -EBADMSG, "more than %d entries", RKL_MAX_KV);
        /* appc rejects duplicate annotation names; so do we rather than pick one. */
        if (rkl_kvs_get(l, key))
                return rkl_error_set(reterr, -EBADMSG, "duplicate key '%.64s'", key);
        rkl_kvs_add(l, key, value);
        return 0;
}

/* Annotations are appc arrays of {"name","value"}; userAnnotations/userLabels are maps.
 * Both shapes are accepted for either; absent or null is empty. */
static int parse_kvs(json_object *parent, const char *key, rkl_kvs *out, rkl_error *reterr)
{
        json_object *o = NULL;
        int r;
        if (!json_object_object_get_ex(parent, key, &o) || !o)
                return 0;
        if (json_object_is_type(o, json_type_object)) {
                json_object_object_foreach(o, k, v)
                {
                        if (!v)
                                return rkl_error_set(reterr, -EBADMSG, "'%s': null value", key);
                        r = kvs_add_checked(out, k, v, reterr);
                        if (r < 0)
                                return PREFIX(r, "'%s'", key);
                }
                return 0;
        }
        if (!json_object_is_type(o, json_type_array))
                return rkl_error_set(reterr, -EBADMSG, "'%s' is neither object nor array", key);
        size_t n = json_object_array_length(o);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(o, i), *v = NULL;
                const char *name;
                if (!e || !json_object_is_type(e, json_type_object))
                        return rkl_error_set(reterr, -EBADMSG, "'%s'[%zu] is not an object", key,
                                             i);
                r = rkl_json_get_string(e, "name", RKL_MAX_KEY, &name, reterr);
                if (r < 0)
                        return PREFIX(r, "'%s'[%zu]", key, i);
                if (!name || !json_object_object_get_ex(e, "value", &v) || !v)
                        return rkl_error_set(reterr, -EBADMSG, "'%s'[%zu] lacks name or value", key,
                                             i);
                r = kvs_add_checked(out, name, v, reterr);
                if (r < 0)
                        return PREFIX(r, "'%s'", key);
        }
        return 0;
}

static int parse_app(json_object *e, rkl_poddir_app *a, rkl_error *reterr)
{
        const char *name, *id = NULL;
        json_object *image = NULL, *app = NULL;
        int r;

        if (!json_object_is_type(e, json_type_object))
                return rkl_error_set(reterr, -EBADMSG, "not an object");
        r = rkl_json_get_string(e, "name", RKL_PODDIR__APP_NAME_MAX, &name, reterr);
        if (r < 0)
                return r;
        if (!rkl_pod_app_name_is_valid(name))
                return rkl_error_set(reterr, -EBADMSG, "invalid app name '%.64s'",
                                     name ? name : "");
        a->name = rkl_xstrdup(name);
        a->in_manifest = true;

        if (json_object_object_get_ex(e, "image", &image) && image) {
                if (!json_object_is_type(image, json_type_object))
                        return rkl_error_set(reterr, -EBADMSG, "'image' is not an object");
                r = rkl_json_get_string(image, "id", RKL_MAX_NAME, &id, reterr);
                if (r < 0)
                        return PREFIX(r, "image");
                a->image_id = rkl_xstrdup(id);
        }
        r = parse_kvs(e, "annotations", &a->annotations, reterr);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(e, "app", &app) && app) {
                if (!json_object_is_type(app, json_type_object))
                        return rkl_error_set(reterr, -EBADMSG, "'app' is not an object");
                r = parse_kvs(app, "userAnnotations", &a->user_annotations, reterr);
                if (r < 0)
                        return r;
                r = parse_kvs(app, "userLabels", &a->user_labels, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

int rkl_poddir_parse_manifest(const char *buf, size_t len, rkl_poddir_manifest *ret,
                              rkl_error *reterr)
{
        _cleanup_(json_object_putp) json_object *root = NULL;
        _cleanup_(rkl_poddir_manifest_done) rkl_poddir_manifest m = {0};
        json_object *apps = NULL;
        const char *kind;
        int r;

        r = rkl_json_parse(buf, len, RKL_PODDIR_MANIFEST_MAX, &root, reterr);
        if (r < 0)
                return PREFIX(r, "pod manifest");
        if (!json_object_is_type(root, json_type_object))
                return rkl_error_set(reterr, -EBADMSG, "pod manifest: not an object");
        r = rkl_json_get_string(root, "acKind", 64, &kind, reterr);
        if (r < 0 || !streq_ptr(kind, "PodManifest"))
                return rkl_error_set(reterr, -EBADMSG, "pod manifest: acKind is not PodManifest");

        r = parse_kvs(root, "annotations", &m.annotations, reterr);
        if (r >= 0)
                r = parse_kvs(root, "userAnnotations", &m.user_annotations, reterr);
        if (r >= 0)
                r = parse_kvs(root, "userLabels", &m.user_labels, reterr);
        if (r < 0)
                return PREFIX(r, "pod manifest");

        /* An empty sandbox has "apps": null (a nil Go slice). */
        if (json_object_object_get_ex(root, "apps", &apps) && apps) {
                if (!json_object_is_type(apps, json_type_array))
                        return rkl_error_set(reterr, -EBADMSG, "pod manifest: 'apps' not array");
                size_t n = json_object_array_length(apps);
                if (n > RKL_PODDIR_MAX_APPS)
                        return rkl_error_set(reterr, -EBADMSG, "pod manifest: %zu apps", n);
                m.apps = rkl_xnew0(rkl_poddir_app, n ? n : 1);
                for (size_t i = 0; i < n; i++) {
                        json_object *e = json_object_array_get_idx(apps, i);
                        r = parse_app(e, &m.apps[m.n_apps], reterr);
                        m.n_apps++;
                        if (r < 0)
                                return PREFIX(r, "pod manifest: apps[%zu]", i);
                        for (size_t j = 0; j < i; j++)
                                if (streq(m.apps[j].name, m.apps[i].name))
                                        return rkl_error_set(reterr, -EBADMSG,
                                                             "pod manifest: duplicate app '%s'",
                                                             m.apps[i].name);
                }
        }
        *ret = m;
        m = (rkl_poddir_manifest){0};
        return 0;
}

static bool is_ipv4(const char *s)
{
        struct in_addr a;
        return s && inet_pton(AF_INET, s, &a) == 1;
}

int rkl_poddir_parse_netinfo(const char *buf, size_t len, char **ret_ip, char **ret_net_name,
                             rkl_error *reterr)
{
        static const char *const preferred[] = {"rkt.kubernetes.io", "default"};
        _cleanup_(json_object_putp) json_object *root = NULL;
        const char *best_ip = NULL, *best_name = NULL;
        size_t best_rank = SIZE_MAX;
        int r;

        r = rkl_json_parse(buf, len, RKL_PODDIR_FILE_MAX, &root, reterr);
        if (r < 0)
                return PREFIX(r, "net-info.json");
        if (json_object_is_type(root, json_type_array)) {
                size_t n = json_object_array_length(root);
                if (n > NETINFO_MAX_N)
                        return rkl_error_set(reterr, -EBADMSG, "net-info.json: %zu networks", n);
                for (size_t i = 0; i < n; i++) {
                        json_object *e = json_object_array_get_idx(root, i);
                        const char *name, *ip;
                        if (!e || !json_object_is_type(e, json_type_object))
                                return rkl_error_set(reterr, -EBADMSG,
                                                     "net-info.json: [%zu] not an object", i);
                        r = rkl_json_get_string(e, "netName", RKL_MAX_NAME, &name, reterr);
                        if (r >= 0)
                                r = rkl_json_get_string(e, "ip", 64, &ip, reterr);
                        if (r < 0)
                                return PREFIX(r, "net-info.json: [%zu]", i);
                        if (!is_ipv4(ip))
                                continue;
                        /* Rank: preferred names first, then position. */
                        size_t rank = ELEMENTSOF(preferred) + i;
                        for (size_t k = 0; name && k < ELEMENTSOF(preferred); k++)
                                if (streq(name, preferred[k]))
                                        rank = k;
                        if (rank < best_rank) {
                                best_rank = rank;
                                best_ip = ip;
                                best_name = name;
                        }
                }
        } else if (!json_object_is_type(root, json_type_null))
                return rkl_error_set(reterr, -EBADMSG, "net-info.json: not an array");

        *ret_ip = rkl_xstrdup(best_ip);
        if (ret_net_name)
                *ret_net_name = best_ip ? rkl_xstrdup(best_name ? best_name : "") : NULL;
        return 0;
}
