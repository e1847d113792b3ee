/* The token table: what each outstanding URL stands for. Small (max entries, 256 by
 * default), so a linear scan with a constant-time compare beats anything cleverer and leaks
 * no timing about how much of a guess was right. */
#include "stream-internal.h"

#include <pthread.h>
#include <sys/random.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "base/banned.h"

typedef struct token_entry {
        char token[RKL_STREAM__TOKEN_LEN + 1];
        uint64_t expires_usec;
        rkl_stream_request *req;
} token_entry;

struct rkl_stream_tokens {
        pthread_mutex_t lock;
        size_t max, n;
        uint64_t ttl_usec;
        token_entry *e;
};

rkl_stream_request *rkl_stream__request_free(rkl_stream_request *r)
{
        if (!r)
                return NULL;
        rkl_strv_free(r->argv);
        free(r->seccomp);
        free(r->attach_dir);
        if (r->netns_fd >= 0)
                (void)close(r->netns_fd);
        free(r->ports);
        free(r);
        return NULL;
}

rkl_stream_tokens *rkl_stream__tokens_new(size_t max, uint64_t ttl_usec)
{
        rkl_stream_tokens *t = rkl_xnew0(rkl_stream_tokens, 1);
        pthread_mutex_init(&t->lock, NULL);
        t->max = max;
        t->ttl_usec = ttl_usec;
        t->e = rkl_xnew0(token_entry, max);
        return t;
}

rkl_stream_tokens *rkl_stream__tokens_free(rkl_stream_tokens *t)
{
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n; i++)
                rkl_stream__request_free(t->e[i].req);
        pthread_mutex_destroy(&t->lock);
        free(t->e);
        free(t);
        return NULL;
}

static void drop(rkl_stream_tokens *t, size_t i)
{
        t->e[i] = t->e[--t->n];
        t->e[t->n] = (token_entry){0};
}

static void expire(rkl_stream_tokens *t, uint64_t now)
{
        for (size_t i = 0; i < t->n;) {
                if (t->e[i].expires_usec > now) {
                        i++;
                        continue;
                }
                rkl_stream__request_free(t->e[i].req);
                drop(t, i);
        }
}

int rkl_stream__tokens_add(rkl_stream_tokens *t, rkl_stream_request *req, uint64_t now_usec,
                           char ret[static RKL_STREAM__TOKEN_LEN + 1])
{
        uint8_t raw[RKL_STREAM__TOKEN_LEN / 2];
        static const char hex[] = "0123456789abcdef";

        /* getrandom() of 16 bytes never returns short once the pool is up. */
        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
                return -errno ?: -EIO;
        RKL_GUARD(&t->lock);
        expire(t, now_usec);
        if (t->n >= t->max)
                return -EMFILE;
        token_entry *e = &t->e[t->n++];
        for (size_t i = 0; i < sizeof(raw); i++) {
                e->token[2 * i] = hex[raw[i] >> 4];
                e->token[2 * i + 1] = hex[raw[i] & 15];
        }
        e->token[RKL_STREAM__TOKEN_LEN] = 0;
        e->expires_usec = now_usec + t->ttl_usec;
        e->req = req;
        memcpy(ret, e->token, RKL_STREAM__TOKEN_LEN + 1);
        return 0;
}

static bool token_eq(const char *a, const char *b, size_t len)
{
        unsigned char d = 0;
        for (size_t i = 0; i < len; i++)
                d |= (unsigned char)(a[i] ^ b[i]);
        return d == 0;
}

rkl_stream_request *rkl_stream__tokens_take(rkl_stream_tokens *t, rkl_stream_kind kind,
                                            const char *token, size_t len, uint64_t now_usec)
{
        if (len != RKL_STREAM__TOKEN_LEN)
                return NULL;
        RKL_GUARD(&t->lock);
        expire(t, now_usec);
        for (size_t i = 0; i < t->n; i++) {
                if (!token_eq(t->e[i].token, token, len))
                        continue;
                rkl_stream_request *r = t->e[i].req;
                drop(t, i);
                if (r->kind != kind)
                        return rkl_stream__request_free(r);
                return r;
        }
        return NULL;
}

size_t rkl_stream__tokens_count(rkl_stream_tokens *t)
{
        RKL_GUARD(&t->lock);
        return t->n;
}
