/* Small helpers of the simulator: files, times in Go's formats, hashes, JSON as Go prints it. */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <json-c/json.h>
#include <openssl/evp.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/time-util.h"
#include "sim.h"
#include "base/banned.h"

extern char **environ;

void sim_err(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        fflush(stderr);
}

void sim_out(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stdout, fmt, ap);
        va_end(ap);
        fputc('\n', stdout);
        fflush(stdout);
}

char *sim_path(const sim_ctx *c, const char *fmt, ...)
{
        va_list ap;
        char *tail = NULL;
        va_start(ap, fmt);
        int r = vasprintf(&tail, fmt, ap);
        va_end(ap);
        if (r < 0)
                rkl_oom();
        char *p = rkl_xasprintf("%s/%s", c->dir, tail);
        free(tail);
        return p;
}

int sim_write_file(const char *path, const char *content, mode_t mode)
{
        _cleanup_close_ int fd =
            open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        size_t n = strlen(content);
        while (n > 0) {
                ssize_t k = write(fd, content, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                content += k;
                n -= (size_t)k;
        }
        return 0;
}

int sim_write_file_atomic(const char *path, const char *content)
{
        return rkl_write_file_atomic_at(AT_FDCWD, path, content, strlen(content), 0644);
}

int sim_touch_new(const char *path)
{
        return sim_write_file(path, "", 0644);
}

int sim_read_file(const char *path, char **ret)
{
        return rkl_read_file_at(AT_FDCWD, path, 16 * 1024 * 1024, ret, NULL);
}

int64_t sim_mtime_ns(const char *path)
{
        struct stat st;
        if (lstat(path, &st) < 0)
                return -errno;
        return rkl_timespec_ns(&st.st_mtim);
}

int64_t sim_ctime_ns(const char *path)
{
        struct stat st;
        if (lstat(path, &st) < 0)
                return -errno;
        return rkl_timespec_ns(&st.st_ctim);
}

bool sim_exists(const char *path)
{
        struct stat st;
        return lstat(path, &st) == 0;
}

void sim_random_hex(char *buf, size_t nbytes)
{
        uint8_t raw[64];
        assert(nbytes <= sizeof(raw));
        if (getrandom(raw, nbytes, 0) != (ssize_t)nbytes)
                abort();
        for (size_t i = 0; i < nbytes; i++)
                snprintf(buf + 2 * i, 3, "%02x", raw[i]);
}

char *sim_uuid_new(void)
{
        uint8_t b[16];
        if (getrandom(b, sizeof(b), 0) != sizeof(b))
                abort();
        b[6] = (b[6] & 0x0f) | 0x40; /* version 4, as rkt's uuid.NewRandom */
        b[8] = (b[8] & 0x3f) | 0x80;
        return rkl_xasprintf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
                             b[11], b[12], b[13], b[14], b[15]);
}

char *sim_sha512_file(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        if (!md || EVP_DigestInit_ex(md, EVP_sha512(), NULL) != 1)
                rkl_oom();
        char buf[65536];
        for (;;) {
                ssize_t k = read(fd, buf, sizeof(buf));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        EVP_MD_CTX_free(md);
                        return NULL;
                }
                if (k == 0)
                        break;
                EVP_DigestUpdate(md, buf, (size_t)k);
        }
        unsigned char d[64];
        unsigned len = 0;
        EVP_DigestFinal_ex(md, d, &len);
        EVP_MD_CTX_free(md);
        /* rkt's store keys an image by the first 256 bits of its sha512 (docs/rkt.md,
         * 'Output formats'). */
        char hex[65];
        for (unsigned i = 0; i < len && i < 32; i++)
                snprintf(hex + 2 * i, 3, "%02x", d[i]);
        return rkl_xasprintf("sha512-%s", hex);
}

static void split_time(int64_t ns, struct tm *tm, long *frac)
{
        time_t s = (time_t)(ns / (int64_t)NSEC_PER_SEC);
        *frac = (long)(ns % (int64_t)NSEC_PER_SEC);
        (void)gmtime_r(&s, tm);
}

/* Go's ".999..." layouts: fractional digits with trailing zeros (and a bare dot) removed. */
static void go_frac(char *buf, size_t n, long frac, int digits)
{
        long div = 1;
        for (int i = digits; i < 9; i++)
                div *= 10;
        long v = frac / div;
        if (v == 0) {
                buf[0] = 0;
                return;
        }
        snprintf(buf, n, ".%0*ld", digits, v);
        for (size_t l = strlen(buf); l > 1 && buf[l - 1] == '0'; l--)
                buf[l - 1] = 0;
}

char *sim_format_time_ms(int64_t ns)
{
        struct tm tm;
        long frac;
        char f[16], d[32];
        split_time(ns, &tm, &frac);
        go_frac(f, sizeof(f), frac, 3);
        strftime(d, sizeof(d), "%Y-%m-%d %H:%M:%S", &tm);
        return rkl_xasprintf("%s%s +0000 UTC", d, f);
}

char *sim_format_time_go(int64_t ns)
{
        struct tm tm;
        long frac;
        char f[16], d[32];
        split_time(ns, &tm, &frac);
        go_frac(f, sizeof(f), frac, 9);
        strftime(d, sizeof(d), "%Y-%m-%d %H:%M:%S", &tm);
        return rkl_xasprintf("%s%s +0000 UTC", d, f);
}

char *sim_format_rfc3339nano(int64_t ns)
{
        struct tm tm;
        long frac;
        char f[16], d[32];
        split_time(ns, &tm, &frac);
        go_frac(f, sizeof(f), frac, 9);
        strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%S", &tm);
        return rkl_xasprintf("%s%sZ", d, f);
}

void sim_sleep_ms(uint64_t ms)
{
        struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
                              .tv_nsec = (long)(ms % 1000) * 1000000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

void sim_profile_pad(const sim_ctx *c, uint64_t ms)
{
        if (!c->profile_real)
                return;
        uint64_t spent = (rkl_now_usec(CLOCK_MONOTONIC) - c->start_usec) / USEC_PER_MSEC;
        if (spent < ms)
                sim_sleep_ms(ms - spent);
}

bool sim_lock_held(const char *dir_path)
{
        _cleanup_close_ int fd = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return false;
        if (flock(fd, LOCK_SH | LOCK_NB) < 0)
                return errno == EWOULDBLOCK;
        return false; /* closing the fd drops our shared lock */
}

const char *sim_json_str(struct json_object *o, const char *key)
{
        struct json_object *v;
        if (!o || !json_object_object_get_ex(o, key, &v) ||
            !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

char *sim_json_go(struct json_object *o, bool pretty)
{
        if (!o)
                return rkl_xstrdup("null");
        int flags = JSON_C_TO_STRING_NOSLASHESCAPE;
        /* Go's json.MarshalIndent(v, "", "\t") puts a space after each colon. */
        flags |=
            pretty
                ? (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_PRETTY_TAB | JSON_C_TO_STRING_SPACED)
                : JSON_C_TO_STRING_PLAIN;
        return rkl_xstrdup(json_object_to_json_string_ext(o, flags));
}

struct json_object *sim_json_read(const char *path)
{
        _cleanup_free_ char *buf = NULL;
        if (sim_read_file(path, &buf) < 0)
                return NULL;
        return json_tokener_parse(buf);
}

int sim_json_write_atomic(const char *path, struct json_object *o)
{
        _cleanup_free_ char *s = sim_json_go(o, false);
        return sim_write_file_atomic(path, s);
}

int sim_run(char *const argv[])
{
        pid_t pid;
        int r = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
        if (r != 0)
                return -r;
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + WTERMSIG(status);
}

int sim_copy_tree(const char *src, const char *dst)
{
        _cleanup_free_ char *from = rkl_xasprintf("%s/.", src);
        int r = rkl_mkdir_p(dst, 0755);
        if (r < 0)
                return r;
        r = sim_run(RKL_STRV("/bin/cp", "-a", from, (char *)dst));
        return r == 0 ? 0 : -EIO;
}

struct json_object *sim_json_kv(const char *name, const char *value)
{
        struct json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(name));
        json_object_object_add(o, "value", json_object_new_string(value));
        return o;
}

const char *sim_json_kv_get(struct json_object *arr, const char *name)
{
        if (!arr || !json_object_is_type(arr, json_type_array))
                return NULL;
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
                struct json_object *e = json_object_array_get_idx(arr, i);
                if (streq_ptr(sim_json_str(e, "name"), name))
                        return sim_json_str(e, "value");
        }
        return NULL;
}

void sim_spawnattr_clean_signals(posix_spawnattr_t *attr, short extra)
{
        sigset_t empty, def;
        sigemptyset(&empty);
        sigfillset(&def);
        sigdelset(&def, SIGKILL);
        sigdelset(&def, SIGSTOP);
        posix_spawnattr_setsigmask(attr, &empty);
        posix_spawnattr_setsigdefault(attr, &def);
        posix_spawnattr_setflags(attr,
                                 (short)(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | extra));
}
