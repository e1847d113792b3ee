/* The follower thread: one follower per container, woken by inotify on its source (and by a
 * slow tick, for what inotify cannot say), copying whole records in CRI form and committing
 * its progress after each write. This thread is a capability of the daemon, not a library:
 * it logs what goes wrong with a container's log, once per kind of trouble. */
#include "logs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"
#include "base/alloc.h"
#include "base/fileio.h"
#include "base/hashmap.h"
#include "base/latch.h"
#include "base/log.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/banned.h"

#define READ_SIZE   (256 * 1024)
#define PUNCH_EVERY (1024 * 1024) /* bytes of source consumed between hole punches */
#define PUNCH_ALIGN 4096          /* a hole starts and ends on a block */
#define TICK_MS     1000          /* a look at every follower, whatever inotify said */
/* iottymux's last lines come after the exit, later still on a loaded machine: a follower is
 * done once its source has had nothing new for this long since the exit (CI saw lines lost
 * under a fixed 2 s from the exit). */
#define EXIT_GRACE_NS (5 * (int64_t)NSEC_PER_SEC)
/* iottymux writes once per line, and inotify says so each time: after a wake by a write,
 * the thread lets writes gather this long before it reads again, so that a chatty app costs
 * a copy per batch, not a wake per line. It is also the most a line waits. */
#define BATCH_MS 50

typedef struct follower {
        char *id, *source, *progress, *log_directory, *log_path;
        int src_fd, dst_fd, wd;
        char wd_key[16]; /* by_wd's key while wd >= 0 */
        /* Committed progress: the source up to src_off is in the log, which was dst_size
         * bytes long then (the file dst_dev, dst_ino: the one rktlet made, and the only one
         * it writes into); the source is punched up to punched. */
        uint64_t src_off, dst_size, punched;
        uint64_t dst_dev, dst_ino;
        rkl_logs_conv conv;
        bool loaded, done, exited, synced, dirty;
        int64_t exited_ns;
        int64_t grew_ns;   /* when its source was last seen to grow (0: not yet) */
        uint64_t src_seen; /* its size then */
        char *trouble;     /* the last trouble logged, not logged again */
} follower;

typedef struct reopen_req {
        struct reopen_req *next;
        rkl_logs_target t;
        int result;
        rkl_error err;
        rkl_latch done;
} reopen_req;

typedef struct finish_req {
        struct finish_req *next;
        rkl_logs_target t;
} finish_req;

struct rkl_logs {
        char **forbidden; /* where no log may go: the daemon's own directories */
        pthread_t thread;
        int wake_fd, inotify_fd;
        pthread_mutex_t lock;
        rkl_logs_target *pending; /* the last sync not yet taken, with has_pending */
        size_t n_pending;
        bool has_pending, quit;
        bool overflowed; /* the thread's: inotify lost events, every follower is dirty */
        reopen_req *reopens;
        finish_req *finishes;
        rkl_hashmap *finished;    /* id -> id: followers done, for rkl_logs_finished() */
        rkl_hashmap *writer_gone; /* id -> id: said by rkl_logs_writer_gone() */
        /* The thread's own. */
        rkl_hashmap *followers; /* id -> follower */
        rkl_hashmap *by_wd;     /* "<wd>" -> follower */
        rkl_logs_buf out;
        char *buf;
};

static void target_copy(rkl_logs_target *dst, const rkl_logs_target *src)
{
        dst->container_id = rkl_xstrdup(src->container_id);
        dst->source = rkl_xstrdup(src->source);
        dst->progress = rkl_xstrdup(src->progress);
        dst->log_directory = rkl_xstrdup(src->log_directory ? src->log_directory : "");
        dst->log_path = rkl_xstrdup(src->log_path ? src->log_path : "");
        dst->exited = src->exited;
}

static void target_done(rkl_logs_target *t)
{
        free((char *)t->container_id);
        free((char *)t->source);
        free((char *)t->progress);
        free((char *)t->log_directory);
        free((char *)t->log_path);
}

static void targets_free(rkl_logs_target *t, size_t n)
{
        for (size_t i = 0; i < n; i++)
                target_done(&t[i]);
        free(t);
}

/* Logs trouble with a container's log once, until it changes. */
static void trouble(follower *f, const char *fmt, ...) _printf_(2, 3);
static void trouble(follower *f, const char *fmt, ...)
{
        char m[512];
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(m, sizeof(m), fmt, ap); /* cut: fine for a log line */
        va_end(ap);
        if (streq_ptr(m, f->trouble))
                return;
        rkl_log_warning("container %.12s: log: %s", f->id, m);
        free(f->trouble);
        f->trouble = rkl_xstrdup(m);
}

static void trouble_over(follower *f)
{
        f->trouble = mfree(f->trouble);
}

/* ---- Progress ---- */

static int progress_save(follower *f)
{
        char text[220];
        int n = snprintf(
            text, sizeof(text),
            "2 %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %s %.*s\n",
            f->src_off, f->dst_dev, f->dst_ino, f->dst_size, f->punched, f->done,
            f->conv.in_record ? f->conv.stream : "-", f->conv.in_record ? (int)f->conv.time_len : 1,
            f->conv.in_record ? f->conv.time : "-");
        if (n < 0 || (size_t)n >= sizeof(text))
                return -EOVERFLOW;
        return rkl_write_file_atomic_at(AT_FDCWD, f->progress, text, (size_t)n, 0600);
}

static void progress_load(follower *f)
{
        _cleanup_free_ char *text = NULL;
        size_t n;
        if (rkl_read_file_at(AT_FDCWD, f->progress, 4096, &text, &n) < 0)
                return; /* none yet: from the start */
        int done = 0;
        char stream[8] = "", time[40] = "";
        /* Version 1 (an older rktlet's) has no device: the inode alone names the file. */
        if (sscanf(text,
                   "2 %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %d %7s %39s",
                   &f->src_off, &f->dst_dev, &f->dst_ino, &f->dst_size, &f->punched, &done, stream,
                   time) != 8 &&
            (f->dst_dev = 0,
             sscanf(text, "1 %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %d %7s %39s",
                    &f->src_off, &f->dst_ino, &f->dst_size, &f->punched, &done, stream,
                    time) != 7)) {
                trouble(f, "progress file '%s' unreadable: copying from the start", f->progress);
                f->src_off = f->dst_dev = f->dst_ino = f->dst_size = f->punched = 0;
                return;
        }
        f->done = done;
        if (streq(stream, "stdout") || streq(stream, "stderr")) {
                f->conv.in_record = true;
                f->conv.stream = streq(stream, "stdout") ? "stdout" : "stderr";
                f->conv.time_len = strlen(time);
                memcpy(f->conv.time, time, f->conv.time_len);
        }
}

/* ---- Files ---- */

/* A log file just made: recorded as rktlet's, empty, before anything is written into it. */
static int dst_made(void *userdata, const rkl_logs_file *lf, rkl_error *reterr)
{
        follower *f = userdata;
        f->dst_dev = lf->id.dev;
        f->dst_ino = lf->id.ino;
        f->dst_size = 0;
        int r = progress_save(f);
        if (r < 0)
                return rkl_error_set(reterr, r, "cannot record it in '%s': %s", f->progress,
                                     strerror(-r));
        return 0;
}

static int open_dst(rkl_logs *l, follower *f)
{
        rkl_error err = RKL_ERROR_INIT;
        rkl_logs_file lf;
        rkl_logs_file_id ours = {f->dst_dev, f->dst_ino};
        if (rkl_logs_file_open(f->log_directory, f->log_path, l->forbidden, &ours, dst_made, f, &lf,
                               &err) < 0) {
                trouble(f, "%s", err.msg);
                return err.code;
        }
        if (!lf.created && lf.size > f->dst_size) {
                /* Written after the last commit, before a crash: written again from the
                 * committed source offset, so cut here or it would be there twice. */
                if (ftruncate(lf.fd, (off_t)f->dst_size) < 0) {
                        int r = -errno;
                        close(lf.fd);
                        trouble(f, "cannot cut '%s/%s' back to its last commit: %s",
                                f->log_directory, f->log_path, strerror(-r));
                        return r;
                }
        } else if (!lf.created) {
                f->dst_size = lf.size; /* shorter than committed: cut by hand, appended to */
        }
        f->dst_fd = lf.fd;
        return 0;
}

static int open_src(rkl_logs *l, follower *f)
{
        /* Read and write: consumed parts are punched out. */
        int fd = open(f->source, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return -errno;
        f->src_fd = fd;
        f->wd = inotify_add_watch(l->inotify_fd, f->source, IN_MODIFY | IN_CLOSE_WRITE);
        if (f->wd >= 0) {
                (void)snprintf(f->wd_key, sizeof(f->wd_key), "%d", f->wd);
                rkl_hashmap_put(l->by_wd, f->wd_key, f);
        }
        /* Without a watch (the inotify limit), the slow tick still comes. */
        return 0;
}

static void punch(follower *f)
{
        uint64_t upto = f->src_off & ~(uint64_t)(PUNCH_ALIGN - 1);
        if (upto < f->punched + PUNCH_EVERY)
                return;
        /* Only frees blocks: offsets stay, and iottymux goes on writing at its own. A
         * filesystem without holes keeps the bytes, which is all. */
        if (fallocate(f->src_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)f->punched,
                      (off_t)(upto - f->punched)) == 0 ||
            errno == EOPNOTSUPP)
                f->punched = upto;
}

static int write_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                n -= (size_t)k;
        }
        return 0;
}

/* Copies what the source holds; with final (the app is gone), its last record too. */
static int drain(rkl_logs *l, follower *f, bool final)
{
        int r;
        if (f->done || isempty(f->log_directory) || isempty(f->log_path))
                return 0;
        if (f->src_fd < 0 && (r = open_src(l, f)) < 0)
                return r == -ENOENT ? 0 : r; /* not started yet, or never printed */
        if (f->dst_fd < 0 && (r = open_dst(l, f)) < 0)
                return r;
        /* Truncated since (rkt started the app again: iottymux opens it with O_TRUNC, the
         * same file, open here or not): from its start. */
        struct stat st;
        bool have_st = fstat(f->src_fd, &st) == 0;
        if (!have_st || (uint64_t)st.st_size < f->src_off) {
                f->src_off = f->punched = 0;
                f->conv = (rkl_logs_conv){0};
        }
        if (have_st && (uint64_t)st.st_size != f->src_seen) {
                f->src_seen = (uint64_t)st.st_size;
                f->grew_ns = rkl_realtime_ns();
        }
        for (;;) {
                ssize_t n = pread(f->src_fd, l->buf, READ_SIZE, (off_t)f->src_off);
                if (n < 0)
                        return -errno;
                bool eof = n < READ_SIZE;
                rkl_logs_conv conv = f->conv;
                l->out.len = 0;
                size_t used = rkl_logs_convert(&conv, l->buf, (size_t)n, final && eof,
                                               rkl_realtime_ns(), &l->out);
                if (used == 0 && l->out.len == 0)
                        return 0;
                r = write_all(f->dst_fd, l->out.data, l->out.len);
                if (r < 0) {
                        trouble(f, "cannot write '%s/%s': %s", f->log_directory, f->log_path,
                                strerror(-r));
                        /* What was written of it goes at the next open (cut back to the
                         * commit); until then nothing more. */
                        f->dst_fd = safe_close(f->dst_fd);
                        return r;
                }
                f->conv = conv;
                f->src_off += used;
                f->dst_size += l->out.len;
                punch(f);
                r = progress_save(f);
                if (r < 0)
                        trouble(f, "cannot save its progress in '%s': %s", f->progress,
                                strerror(-r));
                else
                        trouble_over(f);
                /* A line cut by the end of the read is read again, with its end: until the
                 * end of the source, or a final drain would leave all after it behind. */
                if (eof || used == 0)
                        return 0;
        }
}

static void set_finished(rkl_logs *l, follower *f, bool finished)
{
        pthread_mutex_lock(&l->lock);
        if (finished && !rkl_hashmap_get(l->finished, f->id)) {
                char *key = rkl_xstrdup(f->id);
                rkl_hashmap_put(l->finished, key, key);
        } else if (!finished)
                free(rkl_hashmap_remove(l->finished, f->id));
        pthread_mutex_unlock(&l->lock);
}

static void follower_close(rkl_logs *l, follower *f)
{
        if (f->wd >= 0) {
                rkl_hashmap_remove(l->by_wd, f->wd_key);
                (void)inotify_rm_watch(l->inotify_fd, f->wd); /* gone with the file already */
        }
        f->wd = -1;
        f->src_fd = safe_close(f->src_fd);
        f->dst_fd = safe_close(f->dst_fd);
}

static void follower_free(rkl_logs *l, follower *f)
{
        follower_close(l, f);
        set_finished(l, f, false);
        free(f->id);
        free(f->source);
        free(f->progress);
        free(f->log_directory);
        free(f->log_path);
        free(f->trouble);
        free(f);
}

/* The app is gone and iottymux has had its time: the last record, then nothing more. */
static void finish(rkl_logs *l, follower *f)
{
        if (drain(l, f, true) < 0)
                return; /* tried again at the next tick */
        f->done = true;
        int r = progress_save(f);
        if (r < 0)
                trouble(f, "cannot save its progress in '%s': %s", f->progress, strerror(-r));
        follower_close(l, f);
        set_finished(l, f, true);
}

/* ---- Commands from other threads ---- */

static follower *follower_get(rkl_logs *l, const rkl_logs_target *t)
{
        follower *f = rkl_hashmap_get(l->followers, t->container_id);
        if (f)
                return f;
        f = rkl_xnew0(follower, 1);
        f->id = rkl_xstrdup(t->container_id);
        f->source = rkl_xstrdup(t->source);
        f->progress = rkl_xstrdup(t->progress);
        f->log_directory = rkl_xstrdup(t->log_directory);
        f->log_path = rkl_xstrdup(t->log_path);
        f->src_fd = f->dst_fd = f->wd = -1;
        progress_load(f);
        f->dirty = true;
        rkl_hashmap_put(l->followers, f->id, f);
        if (f->done)
                set_finished(l, f, true);
        return f;
}

static void set_exited(follower *f, int64_t now)
{
        if (!f->exited) {
                f->exited = true;
                f->exited_ns = now;
        }
}

/* The containers whose writer was said gone and that are no longer followed. */
static void forget_writers_gone(rkl_logs *l, const rkl_logs_target *t, size_t n)
{
        _cleanup_strv_free_ char **gone = NULL;
        size_t i = 0;
        const char *id;
        pthread_mutex_lock(&l->lock);
        while (rkl_hashmap_iterate(l->writer_gone, &i, &id, NULL)) {
                bool named = false;
                for (size_t j = 0; j < n && !named; j++)
                        named = streq(t[j].container_id, id);
                if (!named)
                        rkl_strv_push(&gone, id);
        }
        RKL_STRV_FOREACH (g, gone)
                free(rkl_hashmap_remove(l->writer_gone, *g));
        pthread_mutex_unlock(&l->lock);
}

static void apply_sync(rkl_logs *l, rkl_logs_target *t, size_t n)
{
        size_t i = 0;
        void *v;
        while (rkl_hashmap_iterate(l->followers, &i, NULL, &v))
                ((follower *)v)->synced = false;
        int64_t now = rkl_realtime_ns();
        for (size_t j = 0; j < n; j++) {
                follower *f = follower_get(l, &t[j]);
                f->synced = true;
                if (t[j].exited)
                        set_exited(f, now);
        }
        /* Forgotten: removed containers (their files go with their sandbox's). */
        forget_writers_gone(l, t, n);
        for (bool again = true; again;) {
                again = false;
                i = 0;
                while (rkl_hashmap_iterate(l->followers, &i, NULL, &v)) {
                        follower *f = v;
                        if (!f->synced) {
                                rkl_hashmap_remove(l->followers, f->id);
                                follower_free(l, f);
                                again = true;
                                break;
                        }
                }
        }
}

static void do_reopen(rkl_logs *l, reopen_req *q)
{
        follower *f = rkl_hashmap_get(l->followers, q->t.container_id);
        if (!f)
                f = follower_get(l, &q->t);
        if (f->done) {
                q->result = rkl_error_set(&q->err, -ESRCH, "the container has exited");
                return;
        }
        (void)drain(l, f, false); /* trouble is logged; what is left goes to the new file */
        f->dst_fd = safe_close(f->dst_fd);
        /* kubelet renamed the file: a new one is made. Not renamed, it is the same one,
         * appended to; anything else there is refused (rkl_logs_file_open()). */
        rkl_logs_file lf;
        rkl_logs_file_id ours = {f->dst_dev, f->dst_ino};
        int r = rkl_logs_file_open(f->log_directory, f->log_path, l->forbidden, &ours, dst_made, f,
                                   &lf, &q->err);
        if (r < 0) {
                q->result = r;
                return;
        }
        f->dst_fd = lf.fd;
        if (!lf.created)
                f->dst_size = lf.size;
        r = progress_save(f);
        if (r < 0)
                q->result =
                    rkl_error_set(&q->err, r, "cannot save the log's progress: %s", strerror(-r));
        f->dirty = true;
}

/* ---- The thread ---- */

/* Marks the followers whose files changed; true when there was anything to read. */
static bool take_inotify(rkl_logs *l)
{
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool any = false;
        for (;;) {
                ssize_t n = read(l->inotify_fd, buf, sizeof(buf));
                if (n <= 0)
                        return any;
                any = true;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *e = (const struct inotify_event *)p;
                        char key[16];
                        (void)snprintf(key, sizeof(key), "%d", e->wd);
                        follower *f = rkl_hashmap_get(l->by_wd, key);
                        if (f)
                                f->dirty = true;
                        else if (e->mask & IN_Q_OVERFLOW)
                                l->overflowed = true; /* events lost: look at everyone */
                        p += sizeof(*e) + e->len;
                }
        }
}

static void *logs_main(void *userdata)
{
        rkl_logs *l = userdata;
        int64_t next_tick = 0;

        for (;;) {
                struct pollfd pfd[2] = {{.fd = l->wake_fd, .events = POLLIN},
                                        {.fd = l->inotify_fd, .events = POLLIN}};
                if (poll(pfd, 2, TICK_MS / 4) < 0 && errno != EINTR)
                        break;
                uint64_t x;
                if (pfd[0].revents && read(l->wake_fd, &x, sizeof(x)) < 0 && errno != EAGAIN)
                        break;
                bool written = pfd[1].revents && take_inotify(l);

                pthread_mutex_lock(&l->lock);
                bool quit = l->quit;
                rkl_logs_target *t = NULL;
                size_t n = 0;
                bool sync = l->has_pending;
                if (sync) {
                        t = TAKE_PTR(l->pending);
                        n = l->n_pending;
                        l->has_pending = false;
                }
                reopen_req *reopens = TAKE_PTR(l->reopens);
                finish_req *finishes = TAKE_PTR(l->finishes);
                pthread_mutex_unlock(&l->lock);

                if (sync) {
                        apply_sync(l, t, n);
                        targets_free(t, n);
                }
                for (reopen_req *q = reopens, *next; q; q = next) {
                        next = q->next;
                        do_reopen(l, q);
                        rkl_latch_open(&q->done); /* q belongs to its waiter from here */
                }
                for (finish_req *q = finishes, *next; q; q = next) {
                        next = q->next;
                        follower *f = follower_get(l, &q->t);
                        set_exited(f, rkl_realtime_ns());
                        if (!f->done)
                                finish(l, f); /* trouble is logged; the grace tries again */
                        target_done(&q->t);
                        free(q);
                }

                int64_t now = rkl_realtime_ns();
                bool tick = now >= next_tick || l->overflowed;
                l->overflowed = false;
                if (tick)
                        next_tick = now + TICK_MS * (int64_t)NSEC_PER_MSEC;
                size_t i = 0;
                void *v;
                while (rkl_hashmap_iterate(l->followers, &i, NULL, &v)) {
                        follower *f = v;
                        if (f->done)
                                continue;
                        int64_t quiet = f->grew_ns > f->exited_ns ? f->grew_ns : f->exited_ns;
                        if (f->exited && now - quiet >= EXIT_GRACE_NS) {
                                finish(l, f);
                                continue;
                        }
                        if (f->dirty || tick) {
                                f->dirty = false;
                                (void)drain(l, f, false); /* trouble is logged and retried */
                        }
                }
                if (quit)
                        break;
                if (written) {
                        /* Let the writes gather; commands still come in at once. */
                        struct pollfd w = {.fd = l->wake_fd, .events = POLLIN};
                        (void)poll(&w, 1, BATCH_MS); /* EINTR: a shorter batch */
                }
        }
        return NULL;
}

int rkl_logs_new(char *const *forbidden, rkl_logs **ret, rkl_error *reterr)
{
        rkl_logs *l = rkl_xnew0(rkl_logs, 1);
        l->forbidden = rkl_strv_copy(forbidden);
        pthread_mutex_init(&l->lock, NULL);
        l->followers = rkl_hashmap_new();
        l->by_wd = rkl_hashmap_new();
        l->finished = rkl_hashmap_new();
        l->writer_gone = rkl_hashmap_new();
        l->buf = rkl_xmalloc(READ_SIZE);
        l->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        l->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (l->wake_fd < 0 || l->inotify_fd < 0) {
                int r = rkl_error_set(reterr, -errno, "cannot set up the log follower: %m");
                rkl_logs_free(l);
                return r;
        }
        int k = pthread_create(&l->thread, NULL, logs_main, l);
        if (k != 0) {
                rkl_logs_free(l);
                return rkl_error_set(reterr, -k, "cannot start the log follower: %s", strerror(k));
        }
        (void)pthread_setname_np(l->thread, "logs"); /* a name is only a help */
        *ret = l;
        return 0;
}

static void wake(rkl_logs *l)
{
        uint64_t one = 1;
        (void)!write(l->wake_fd, &one, sizeof(one)); /* a full counter wakes it as well */
}

rkl_logs *rkl_logs_free(rkl_logs *l)
{
        if (!l)
                return NULL;
        if (l->thread) {
                pthread_mutex_lock(&l->lock);
                l->quit = true;
                pthread_mutex_unlock(&l->lock);
                wake(l);
                pthread_join(l->thread, NULL);
        }
        size_t i = 0;
        void *v;
        while (rkl_hashmap_iterate(l->followers, &i, NULL, &v))
                follower_free(l, v);
        rkl_hashmap_free(l->followers);
        rkl_hashmap_free(l->by_wd);
        for (finish_req *q = l->finishes, *next; q; q = next) {
                next = q->next;
                target_done(&q->t);
                free(q);
        }
        rkl_hashmap_free_values(l->finished, free);
        rkl_hashmap_free_values(l->writer_gone, free);
        if (l->has_pending)
                targets_free(l->pending, l->n_pending);
        safe_close(l->wake_fd);
        safe_close(l->inotify_fd);
        rkl_logs_buf_done(&l->out);
        free(l->buf);
        rkl_strv_free(l->forbidden);
        pthread_mutex_destroy(&l->lock);
        free(l);
        return NULL;
}

void rkl_logs_sync(rkl_logs *l, const rkl_logs_target *targets, size_t n)
{
        rkl_logs_target *copy = rkl_xnew0(rkl_logs_target, n ? n : 1);
        for (size_t i = 0; i < n; i++)
                target_copy(&copy[i], &targets[i]);
        pthread_mutex_lock(&l->lock);
        if (l->has_pending)
                targets_free(l->pending, l->n_pending);
        l->pending = copy;
        l->n_pending = n;
        l->has_pending = true;
        pthread_mutex_unlock(&l->lock);
        wake(l);
}

void rkl_logs_finish(rkl_logs *l, const rkl_logs_target *t)
{
        /* The reconciler asks again at each look until it is done: one request is enough. */
        pthread_mutex_lock(&l->lock);
        for (finish_req *q = l->finishes; q; q = q->next)
                if (streq(q->t.container_id, t->container_id)) {
                        pthread_mutex_unlock(&l->lock);
                        return;
                }
        finish_req *q = rkl_xnew0(finish_req, 1);
        target_copy(&q->t, t);
        q->next = l->finishes;
        l->finishes = q;
        pthread_mutex_unlock(&l->lock);
        wake(l);
}

bool rkl_logs_finished(rkl_logs *l, const char *container_id)
{
        pthread_mutex_lock(&l->lock);
        bool done = rkl_hashmap_get(l->finished, container_id) != NULL;
        pthread_mutex_unlock(&l->lock);
        return done;
}

bool rkl_logs_writer_gone(rkl_logs *l, const char *container_id)
{
        pthread_mutex_lock(&l->lock);
        bool news = !rkl_hashmap_get(l->writer_gone, container_id);
        if (news) {
                char *key = rkl_xstrdup(container_id);
                rkl_hashmap_put(l->writer_gone, key, key);
        }
        pthread_mutex_unlock(&l->lock);
        if (news)
                rkl_log_warning("container %.12s: log: rkt's iottymux, the writer of its output, "
                                "is gone while it runs (rkt does not start it again): what it "
                                "prints from now on reaches no log",
                                container_id);
        return news;
}

int rkl_logs_reopen(rkl_logs *l, const rkl_logs_target *t, rkl_error *reterr)
{
        reopen_req *q = rkl_xnew0(reopen_req, 1);
        target_copy(&q->t, t);
        q->err = (rkl_error)RKL_ERROR_INIT;
        rkl_latch_init(&q->done);
        pthread_mutex_lock(&l->lock);
        q->next = l->reopens;
        l->reopens = q;
        pthread_mutex_unlock(&l->lock);
        wake(l);
        while (!rkl_latch_wait(&q->done, 3600 * USEC_PER_SEC))
                ; /* the thread answers every request it took */
        int r = q->result;
        if (r < 0)
                rkl_error_set(reterr, r, "%s", q->err.msg);
        rkl_latch_destroy(&q->done);
        target_done(&q->t);
        free(q);
        return r;
}

int rkl_logs_file_make(const rkl_logs_target *t, char *const *forbidden, rkl_error *reterr)
{
        /* The follower's record, as a follower would read it: nobody follows a container
         * that has not started. */
        follower f = {
            .id = (char *)t->container_id,
            .progress = (char *)t->progress,
            .src_fd = -EBADF,
            .dst_fd = -EBADF,
            .wd = -1,
        };
        progress_load(&f);
        free(f.trouble);
        _cleanup_free_ char *dir = rkl_xstrdup(t->progress);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = 0;
                int r = rkl_mkdir_p(dir, 0700);
                if (r < 0)
                        return rkl_error_set(reterr, r, "cannot create '%s': %s", dir,
                                             strerror(-r));
        }
        rkl_logs_file lf;
        rkl_logs_file_id ours = {f.dst_dev, f.dst_ino};
        int r = rkl_logs_file_open(t->log_directory, t->log_path, forbidden, &ours, dst_made, &f,
                                   &lf, reterr);
        if (r < 0)
                return r;
        close(lf.fd);
        return 0;
}
