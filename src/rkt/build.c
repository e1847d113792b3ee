/* The build record of an rkt binary (build.h): parsing it, and checking it against the
 * binary, its version and the patches rktlet wants. */
#include "build.h"

#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/banned.h"

#define PATCHES_MAX 256
#define TOKEN_MAX   255

void rkl_rkt_build_done(rkl_rkt_build *b)
{
        if (!b)
                return;
        free(b->version);
        free(b->sha256);
        free(b->stage1_name);
        free(b->stage1_id);
        free(b->stage1_path);
        rkl_strv_free(b->patch_names);
        rkl_strv_free(b->patch_sums);
        *b = (rkl_rkt_build){0};
}

static bool is_hex(const char *s, size_t min, size_t max)
{
        size_t n = strspn(s, "0123456789abcdef");
        return s[n] == 0 && n >= min && n <= max;
}

/* A word of the record: printable ASCII but the space, bounded. */
static bool is_token(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > TOKEN_MAX)
                return false;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++)
                if (*p <= ' ' || *p >= 0x7f)
                        return false;
        return true;
}

/* Splits line at spaces into at most max words; the last takes the rest of the line. */
static size_t split(char *line, char **words, size_t max)
{
        size_t n = 0;
        char *p = line;
        while (*p && n < max) {
                p += strspn(p, " \t");
                if (!*p)
                        break;
                words[n++] = p;
                if (n == max)
                        break;
                p += strcspn(p, " \t");
                if (*p)
                        *p++ = 0;
        }
        return n;
}

static int parse_line(char *line, unsigned lineno, rkl_rkt_build *b, rkl_error *reterr)
{
        char *w[4];
        size_t n = split(line, w, ELEMENTSOF(w));

        if (n == 0 || w[0][0] == '#')
                return 0;
        if (streq(w[0], "rkt")) {
                if (b->version)
                        return rkl_error_set(reterr, -EBADMSG, "line %u: a second 'rkt' line",
                                             lineno);
                if (n != 3 || !is_token(w[1]) || !is_hex(w[2], 64, 64))
                        return rkl_error_set(reterr, -EBADMSG, "line %u: not 'rkt VERSION SHA256'",
                                             lineno);
                b->version = rkl_xstrdup(w[1]);
                b->sha256 = rkl_xstrdup(w[2]);
        } else if (streq(w[0], "stage1")) {
                if (b->stage1_name)
                        return rkl_error_set(reterr, -EBADMSG, "line %u: a second 'stage1' line",
                                             lineno);
                if (n != 4 || !is_token(w[1]) || strncmp(w[2], "sha512-", 7) != 0 ||
                    !is_hex(w[2] + 7, 2, 128) || w[3][0] != '/' || strlen(w[3]) > PATH_MAX)
                        return rkl_error_set(reterr, -EBADMSG,
                                             "line %u: not 'stage1 NAME sha512-ID /PATH'", lineno);
                b->stage1_name = rkl_xstrdup(w[1]);
                b->stage1_id = rkl_xstrdup(w[2]);
                b->stage1_path = rkl_xstrdup(w[3]);
        } else if (streq(w[0], "patch")) {
                if (n != 3 || !is_hex(w[1], 64, 64) || !is_token(w[2]) || strchr(w[2], '/'))
                        return rkl_error_set(reterr, -EBADMSG, "line %u: not 'patch SHA256 NAME'",
                                             lineno);
                if (rkl_strv_length(b->patch_names) >= PATCHES_MAX)
                        return rkl_error_set(reterr, -EBADMSG, "more than %d patches", PATCHES_MAX);
                rkl_strv_push(&b->patch_sums, w[1]);
                rkl_strv_push(&b->patch_names, w[2]);
        }
        /* Any other word starts a line of a newer build-rkt: not ours to judge. */
        return 0;
}

int rkl_rkt_build_parse(const char *text, size_t len, rkl_rkt_build *ret, rkl_error *reterr)
{
        rkl_rkt_build b = {0};
        unsigned lineno = 0;
        int r = 0;

        if (len > RKL_RKT_BUILD_MAX)
                return rkl_error_set(reterr, -EBADMSG, "larger than %u bytes", RKL_RKT_BUILD_MAX);
        if (memchr(text, 0, len))
                return rkl_error_set(reterr, -EBADMSG, "not text (a NUL byte)");
        _cleanup_free_ char *copy = rkl_xstrndup(text, len);
        for (char *line = copy, *next; line && r >= 0; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                lineno++;
                size_t l = strlen(line);
                if (l > 0 && line[l - 1] == '\r')
                        line[l - 1] = 0;
                r = parse_line(line, lineno, &b, reterr);
        }
        if (r >= 0 && !b.version)
                r = rkl_error_set(reterr, -EBADMSG, "no 'rkt VERSION SHA256' line");
        if (r < 0) {
                rkl_rkt_build_done(&b);
                return r;
        }
        *ret = b;
        return 0;
}

char *rkl_rkt_build_path(const char *rkt_path)
{
        _cleanup_free_ char *real = realpath(rkt_path, NULL);
        return rkl_xasprintf("%s%s", real ? real : rkt_path, RKL_RKT_BUILD_SUFFIX);
}

static const char *short_name(const char *name, char *buf, size_t n)
{
        size_t l = strlen(name);
        if (l > 6 && streq(name + l - 6, ".patch"))
                l -= 6;
        snprintf(buf, n, "%.*s", (int)l, name);
        return buf;
}

int rkl_rkt_build_check_patches(const rkl_rkt_build *b, const rkl_rkt_patch *want, size_t n,
                                rkl_error *reterr)
{
        _cleanup_strv_free_ char **missing = NULL, **changed = NULL;
        char buf[TOKEN_MAX + 1];

        for (size_t i = 0; i < n; i++) {
                size_t j = 0;
                for (; b->patch_names && b->patch_names[j]; j++)
                        if (streq(b->patch_names[j], want[i].name))
                                break;
                if (!b->patch_names || !b->patch_names[j])
                        rkl_strv_push(&missing, short_name(want[i].name, buf, sizeof(buf)));
                else if (!streq(b->patch_sums[j], want[i].sha256))
                        rkl_strv_push(&changed, short_name(want[i].name, buf, sizeof(buf)));
        }
        if (!missing && !changed)
                return 0;
        _cleanup_free_ char *m = rkl_strv_join(missing, ", ");
        _cleanup_free_ char *c = rkl_strv_join(changed, ", ");
        return rkl_error_set(reterr, -ENOPKG, "%s%s%s%s%s", missing ? "without " : "", m,
                             missing && changed ? "; " : "", changed ? "an older version of " : "",
                             c);
}

char *rkl_rkt_build_summary(const rkl_rkt_build *b)
{
        _cleanup_strv_free_ char **names = NULL;
        char buf[TOKEN_MAX + 1];
        RKL_STRV_FOREACH (p, b->patch_names)
                rkl_strv_push(&names, short_name(*p, buf, sizeof(buf)));
        _cleanup_free_ char *list = rkl_strv_join(names, ", ");
        size_t n = rkl_strv_length(names);
        return rkl_xasprintf("%zu patch%s%s%s%s", n, n == 1 ? "" : "es", n ? " (" : "", list,
                             n ? ")" : "");
}

/* The sha256 of the file at path, in hex; from memo when the file is the one memo saw. */
static int file_sha256(const char *path, rkl_rkt_build_memo *memo, char ret[static 65])
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (memo && memo->sha256[0] && memo->dev == st.st_dev && memo->ino == st.st_ino &&
            memo->size == st.st_size && memo->mtime.tv_sec == st.st_mtim.tv_sec &&
            memo->mtime.tv_nsec == st.st_mtim.tv_nsec) {
                memcpy(ret, memo->sha256, 65);
                return 0;
        }

        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned md_len = 0;
        int r = 0;
        if (!ctx)
                rkl_oom();
        if (!EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
                r = -EIO;
        _cleanup_free_ char *buf = rkl_xmalloc(1 << 16);
        while (r == 0) {
                ssize_t k = read(fd, buf, 1 << 16);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        r = -errno;
                else if (k == 0)
                        break;
                else if (!EVP_DigestUpdate(ctx, buf, (size_t)k))
                        r = -EIO;
        }
        if (r == 0 && (!EVP_DigestFinal_ex(ctx, md, &md_len) || md_len != 32))
                r = -EIO;
        EVP_MD_CTX_free(ctx);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < md_len; i++)
                snprintf(ret + 2 * i, 3, "%02x", md[i]);
        if (memo) {
                *memo = (rkl_rkt_build_memo){
                    .dev = st.st_dev,
                    .ino = st.st_ino,
                    .size = st.st_size,
                    .mtime = st.st_mtim,
                };
                memcpy(memo->sha256, ret, 65);
        }
        return 0;
}

int rkl_rkt_build_verify(const char *rkt_path, const char *version, const rkl_rkt_patch *want,
                         size_t n_want, rkl_rkt_build_memo *memo, rkl_rkt_build *ret,
                         rkl_error *reterr)
{
        static const char fix[] = "install the rktlet-rkt package that goes with this rktlet, or "
                                  "build rkt with rktlet's scripts/build-rkt";
        _cleanup_free_ char *path = rkl_rkt_build_path(rkt_path);
        _cleanup_free_ char *text = NULL;
        rkl_error e = RKL_ERROR_INIT;
        rkl_rkt_build b = {0};
        char sum[65];
        size_t len = 0;
        int r;

        r = rkl_read_file_at(AT_FDCWD, path, RKL_RKT_BUILD_MAX, &text, &len);
        if (r == -ENOENT)
                return rkl_error_set(
                    reterr, -ENOENT,
                    "rkt '%s' has no build record '%s': not built by rktlet's "
                    "scripts/build-rkt, it may lack the fixes rktlet relies on; %s",
                    rkt_path, path, fix);
        if (r < 0)
                return rkl_error_set(reterr, r == -EFBIG ? -EBADMSG : r,
                                     "cannot read rkt's build record '%s': %s", path, strerror(-r));
        r = rkl_rkt_build_parse(text, len, &b, &e);
        if (r < 0)
                return rkl_error_set(reterr, r, "rkt's build record '%s': %s", path, e.msg);

        if (version && !streq(version, b.version)) {
                r = rkl_error_set(reterr, -ESTALE,
                                  "rkt '%s' is version %s but its build record '%s' is of %s; %s",
                                  rkt_path, version, path, b.version, fix);
                goto fail;
        }
        r = file_sha256(rkt_path, memo, sum);
        if (r < 0) {
                r = rkl_error_set(reterr, r, "cannot read rkt '%s': %s", rkt_path, strerror(-r));
                goto fail;
        }
        if (!streq(sum, b.sha256)) {
                r = rkl_error_set(reterr, -ESTALE,
                                  "rkt '%s' is not the binary its build record '%s' describes "
                                  "(replaced since?); %s",
                                  rkt_path, path, fix);
                goto fail;
        }
        r = rkl_rkt_build_check_patches(&b, want, n_want, &e);
        if (r < 0) {
                r = rkl_error_set(reterr, r,
                                  "rkt '%s' lacks fixes rktlet relies on: built %s (its record "
                                  "'%s'); %s",
                                  rkt_path, e.msg, path, fix);
                goto fail;
        }
        if (ret)
                *ret = b;
        else
                rkl_rkt_build_done(&b);
        return 0;
fail:
        rkl_rkt_build_done(&b);
        return r;
}

int rkl_rkt_build_check_stage1(const rkl_rkt_build *b, const char *name, const char *id,
                               rkl_error *reterr)
{
        if (!b->stage1_name || !name || !id || !streq(name, b->stage1_name))
                return 0;
        /* rkt shortens its IDs at will: the common part decides. */
        size_t n = strlen(id) < strlen(b->stage1_id) ? strlen(id) : strlen(b->stage1_id);
        if (n > strlen("sha512-") && strncmp(id, b->stage1_id, n) == 0)
                return 0;
        return rkl_error_set(reterr, -ENOPKG,
                             "rkt's image store holds stage1 '%s' as %s, not the one built with "
                             "rkt's patches (%s from '%s'), and pods would run it: remove it "
                             "(rkt image rm %s, with rktlet's rkt-data-dir as --dir) once no pod "
                             "runs, and rkt imports the patched one",
                             name, id, b->stage1_id, b->stage1_path, id);
}
