/* Pulls: mirrors (--registry-mirror) tried before the registry itself, the client's
 * credentials handed to rkt in a private auth.d for one fetch, and one shared fetch for
 * concurrent pulls of the same reference. */
#include "images-internal.h"

#include <fcntl.h>
#include "base/json.h"
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/imageref.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "rkt/image.h"
#include "base/banned.h"

#define CRED_MAX 4096

struct rkl_images__mirror {
        char *registry; /* normalised: docker.io, registry.k8s.io */
        char *host;     /* host[:port] of the mirror */
        bool http;
};

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

/* ---- Mirrors ---- */

static int mirror_parse(const char *s, rkl_images__mirror *ret, rkl_error *reterr)
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
                *ret = (rkl_images__mirror){
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

int rkl_images__mirrors_parse(rkl_images *im, char *const *specs, rkl_error *reterr)
{
        size_t n = rkl_strv_length(specs);
        im->mirrors = rkl_xnew0(rkl_images__mirror, n + 1);
        RKL_STRV_FOREACH (m, specs) {
                int r = mirror_parse(*m, &im->mirrors[im->n_mirrors], reterr);
                if (r < 0)
                        return r;
                im->n_mirrors++;
        }
        return 0;
}

void rkl_images__mirrors_free(rkl_images *im)
{
        for (size_t i = 0; i < im->n_mirrors; i++) {
                free(im->mirrors[i].registry);
                free(im->mirrors[i].host);
        }
        free(im->mirrors);
        im->mirrors = NULL;
        im->n_mirrors = 0;
}

bool rkl_images__is_mirror_host(const rkl_images *im, const char *registry)
{
        for (size_t i = 0; i < im->n_mirrors; i++)
                if (streq(im->mirrors[i].host, registry))
                        return true;
        return false;
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

/* Removes a pull's private dir. A failure is dropped: the pull's own outcome is what its
 * caller needs, and what stays (a 0600 file in 0700 dirs under the state dir) goes at the
 * next start, when rkl_images_new() empties pulls/. */
static void pull_dir_remove(const char *dir)
{
        (void)rkl_rm_rf_at(AT_FDCWD, dir);
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
                pull_dir_remove(dir);
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
                const rkl_images__mirror *m = i < im->n_mirrors ? &im->mirrors[i] : NULL;
                if (m && !streq(m->registry, ref->registry))
                        continue;
                host = m ? m->host : ref->registry;
                _cleanup_free_ char *target = rkl_imageref_to_rkt(ref, m ? m->host : NULL);
                rkl_rkt_fetch_opts o = {
                    /* A tag may have moved; a digest cannot. */
                    .pull_policy = ref->digest ? "new" : "update",
                    .user_config = dir,
                    .insecure_http = m && m->http,
                    .timeout_usec = im->pull_timeout_usec,
                };
                rkl_error_clear(reterr);
                r = rkl_rkt_image_fetch(im->rkt, target, &o, &id, reterr);
                if (r >= 0)
                        break;
        }
        pthread_rwlock_unlock(&im->store_lock);
        if (dir)
                pull_dir_remove(dir);
        if (r < 0)
                return pull_failed(r, key, host, im->pull_timeout_usec, reterr);

        /* Record the tag and refresh in one go: a refresh that listed the store before the
         * fetch ended would otherwise drop the tag of an image it did not see. */
        RKL_GUARD(&im->op_lock);
        {
                RKL_GUARD(&im->lock);
                _cleanup_free_ char *alias_ref =
                    ref->digest ? rkl_imageref_digested(ref) : rkl_imageref_tagged(ref);
                rkl_images__tags_record(im, alias_ref, id, rkl_realtime_ns());
        }
        r = rkl_images__refresh_locked(im, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "pulled '%s' but cannot read rkt's image store",
                                        key);
        *ret_id = rkl_images__head_id(im, id);
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
                return rkl_images__no_rkt(reterr);

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

int rkl_images_import(rkl_images *im, const char *path, char **ret_id, rkl_error *reterr)
{
        if (!im->rkt)
                return rkl_images__no_rkt(reterr);
        _cleanup_free_ char *url = rkl_xasprintf("file://%s", path), *id = NULL;
        rkl_rkt_fetch_opts o = {.timeout_usec = im->pull_timeout_usec};
        pthread_rwlock_rdlock(&im->store_lock);
        int r = rkl_rkt_image_fetch(im->rkt, url, &o, &id, reterr);
        pthread_rwlock_unlock(&im->store_lock);
        if (r < 0)
                return rkl_error_prefix(reterr, "cannot import '%s'", path);
        RKL_GUARD(&im->op_lock);
        r = rkl_images__refresh_locked(im, reterr);
        if (r < 0)
                return rkl_error_prefix(reterr, "imported '%s' but cannot read rkt's image store",
                                        path);
        if (ret_id)
                *ret_id = TAKE_PTR(id);
        return 0;
}
