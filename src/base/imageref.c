#include "imageref.h"

#include <arpa/inet.h>

#include "alloc.h"
#include "parse.h"
#include "banned.h"

#define TAG_MAX 128

static bool is_lower_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
        return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool is_lower_hex(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

void rkl_imageref_done(rkl_imageref *r)
{
        free(r->id);
        free(r->registry);
        free(r->repository);
        free(r->tag);
        free(r->digest);
        *r = (rkl_imageref){0};
}

bool rkl_image_id_is_valid(const char *s)
{
        if (!s || strncmp(s, RKL_IMAGE_ID_PREFIX, strlen(RKL_IMAGE_ID_PREFIX)) != 0)
                return false;
        s += strlen(RKL_IMAGE_ID_PREFIX);
        size_t n = strlen(s);
        return n >= RKL_IMAGE_ID_HEX_MIN && n <= RKL_IMAGE_ID_HEX_MAX && is_lower_hex(s, n);
}

/* host[:port] where host is a DNS name, an IPv4 address or a bracketed IPv6 address. */
static bool registry_is_valid(const char *s, size_t n)
{
        size_t i = 0;
        if (n == 0)
                return false;
        if (s[0] == '[') {
                const char *end = memchr(s, ']', n);
                char addr[INET6_ADDRSTRLEN];
                struct in6_addr a6;
                if (!end || (size_t)(end - s - 1) >= sizeof(addr))
                        return false;
                memcpy(addr, s + 1, (size_t)(end - s - 1));
                addr[end - s - 1] = 0;
                if (inet_pton(AF_INET6, addr, &a6) != 1)
                        return false;
                i = (size_t)(end - s) + 1;
        } else {
                /* Labels of [A-Za-z0-9-], not starting or ending with '-', '.'-separated. */
                size_t start = 0;
                for (; i < n && s[i] != ':'; i++) {
                        if (s[i] == '.') {
                                if (i == start || s[i - 1] == '-')
                                        return false;
                                start = i + 1;
                        } else if (s[i] == '-') {
                                if (i == start)
                                        return false;
                        } else if (!is_alnum(s[i]))
                                return false;
                }
                if (i == start || s[i - 1] == '-')
                        return false;
        }
        if (i == n)
                return true;
        if (s[i] != ':' || n - i - 1 < 1 || n - i - 1 > 5)
                return false;
        unsigned port = 0;
        for (size_t k = i + 1; k < n; k++) {
                if (s[k] < '0' || s[k] > '9')
                        return false;
                port = port * 10 + (unsigned)(s[k] - '0');
        }
        return port >= 1 && port <= RKL_MAX_PORT;
}

bool rkl_imageref_registry_is_valid(const char *host)
{
        return host && registry_is_valid(host, strlen(host));
}

char *rkl_imageref_registry_normalize(const char *host)
{
        /* Docker Hub answers under several names; containerd reports docker.io. */
        if (streq(host, "index.docker.io") || streq(host, "registry-1.docker.io"))
                return rkl_xstrdup("docker.io");
        return rkl_xstrdup(host);
}

/* One path component: [a-z0-9]+ joined by '.', '_', '__' or runs of '-' (docker's rule). */
static bool component_is_valid(const char *s, size_t n)
{
        size_t i = 0;
        if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
                return false;
        while (i < n) {
                if (is_lower_alnum(s[i])) {
                        i++;
                        continue;
                }
                size_t sep = i;
                if (s[i] == '.')
                        i++;
                else if (s[i] == '_')
                        i += (i + 1 < n && s[i + 1] == '_') ? 2 : 1;
                else if (s[i] == '-')
                        while (i < n && s[i] == '-')
                                i++;
                else
                        return false;
                if (i == sep || i >= n || !is_lower_alnum(s[i]))
                        return false;
        }
        return true;
}

static int repository_check(const char *s, rkl_error *reterr)
{
        const char *p = s;
        for (;;) {
                size_t n = strcspn(p, "/");
                if (!component_is_valid(p, n)) {
                        for (size_t i = 0; i < n; i++)
                                if (p[i] >= 'A' && p[i] <= 'Z')
                                        return rkl_error_set(reterr, -EINVAL,
                                                             "repository name must be lowercase");
                        return rkl_error_set(reterr, -EINVAL, "invalid path component '%.*s'",
                                             (int)(n > 64 ? 64 : n), p);
                }
                if (!p[n])
                        return 0;
                p += n + 1;
        }
}

static bool tag_is_valid(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > TAG_MAX || !(is_alnum(s[0]) || s[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!(is_alnum(s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
                        return false;
        return true;
}

static bool digest_is_valid(const char *s)
{
        if (strncmp(s, "sha256:", 7) == 0)
                return strlen(s + 7) == 64 && is_lower_hex(s + 7, 64);
        if (strncmp(s, "sha512:", 7) == 0)
                return strlen(s + 7) == 128 && is_lower_hex(s + 7, 128);
        return false;
}

int rkl_imageref_parse(const char *s, rkl_imageref *ret, rkl_error *reterr)
{
        _cleanup_(rkl_imageref_done) rkl_imageref r = {0};
        int k;

        if (isempty(s))
                return rkl_error_set(reterr, -EINVAL, "empty image reference");
        size_t len = strnlen(s, RKL_IMAGEREF_MAX + 1);
        if (len > RKL_IMAGEREF_MAX)
                return rkl_error_set(reterr, -ENAMETOOLONG, "image reference longer than %d bytes",
                                     RKL_IMAGEREF_MAX);
        if (strncmp(s, "docker://", 9) == 0)
                s += 9;
        else if (strstr(s, "://"))
                return rkl_error_set(reterr, -EINVAL,
                                     "image reference '%.64s': only docker images are supported",
                                     s);
        if (rkl_image_id_is_valid(s)) {
                r.id = rkl_xstrdup(s);
                *ret = r;
                r = (rkl_imageref){0};
                return 0;
        }

        _cleanup_free_ char *buf = rkl_xstrdup(s);
        char *name = buf;
        char *at = strchr(name, '@');
        if (at) {
                *at = 0;
                if (!digest_is_valid(at + 1))
                        return rkl_error_set(reterr, -EINVAL,
                                             "invalid digest '%.140s': want sha256:<64 hex digits>",
                                             at + 1);
                r.digest = rkl_xstrdup(at + 1);
        }
        /* A tag is after a ':' that follows the last '/' (before it, ':' is a port). */
        char *slash = strrchr(name, '/');
        char *colon = strrchr(slash ? slash : name, ':');
        if (colon) {
                *colon = 0;
                if (!tag_is_valid(colon + 1))
                        return rkl_error_set(reterr, -EINVAL, "invalid tag '%.140s'", colon + 1);
                r.tag = rkl_xstrdup(colon + 1);
        }
        if (isempty(name))
                return rkl_error_set(reterr, -EINVAL, "image reference '%.64s' has no name", s);

        /* The first component names a registry when it looks like a host (docker's rule). */
        char *first = strchr(name, '/');
        if (first) {
                size_t n = (size_t)(first - name);
                bool upper = false;
                for (size_t i = 0; i < n; i++)
                        upper |= name[i] >= 'A' && name[i] <= 'Z';
                if (memchr(name, '.', n) || memchr(name, ':', n) ||
                    (n == 9 && strncmp(name, "localhost", 9) == 0) || upper) {
                        if (!registry_is_valid(name, n))
                                return rkl_error_set(reterr, -EINVAL, "invalid registry '%.*s'",
                                                     (int)(n > 64 ? 64 : n), name);
                        _cleanup_free_ char *host = rkl_xstrndup(name, n);
                        r.registry = rkl_imageref_registry_normalize(host);
                        name = first + 1;
                }
        }
        if (!r.registry)
                r.registry = rkl_xstrdup("docker.io");
        k = repository_check(name, reterr);
        if (k < 0)
                return rkl_error_prefix(reterr, "image reference '%.64s'", s);
        if (streq(r.registry, "docker.io") && !strchr(name, '/'))
                r.repository = rkl_xasprintf("library/%s", name);
        else
                r.repository = rkl_xstrdup(name);
        if (strlen(r.registry) + 1 + strlen(r.repository) > RKL_IMAGEREF_NAME_MAX)
                return rkl_error_set(reterr, -EINVAL, "image name longer than %d bytes",
                                     RKL_IMAGEREF_NAME_MAX);
        if (!r.tag && !r.digest)
                r.tag = rkl_xstrdup("latest");

        *ret = r;
        r = (rkl_imageref){0};
        return 0;
}

char *rkl_imageref_name(const rkl_imageref *r)
{
        assert(!r->id);
        return rkl_xasprintf("%s/%s", r->registry, r->repository);
}

char *rkl_imageref_to_string(const rkl_imageref *r)
{
        if (r->id)
                return rkl_xstrdup(r->id);
        return rkl_xasprintf("%s/%s%s%s%s%s", r->registry, r->repository, r->tag ? ":" : "",
                             r->tag ? r->tag : "", r->digest ? "@" : "",
                             r->digest ? r->digest : "");
}

char *rkl_imageref_tagged(const rkl_imageref *r)
{
        if (r->id || !r->tag)
                return NULL;
        return rkl_xasprintf("%s/%s:%s", r->registry, r->repository, r->tag);
}

char *rkl_imageref_digested(const rkl_imageref *r)
{
        if (r->id || !r->digest)
                return NULL;
        return rkl_xasprintf("%s/%s@%s", r->registry, r->repository, r->digest);
}

char *rkl_imageref_to_rkt(const rkl_imageref *r, const char *registry)
{
        if (r->id)
                return rkl_xstrdup(r->id);
        /* docker2aci reads "name:tag@digest" as a tag: give it the digest alone. */
        return rkl_xasprintf("docker://%s/%s%s%s", registry ? registry : r->registry, r->repository,
                             r->digest ? "@" : ":", r->digest ? r->digest : r->tag);
}
