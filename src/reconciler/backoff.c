/* Retries and their backoff (backoff.h). */
#include "backoff.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/time-util.h"
#include "base/banned.h"

#define BACKOFF_BASE_NS (500 * (int64_t)NSEC_PER_MSEC)
#define BACKOFF_MAX_NS  (60 * (int64_t)NSEC_PER_SEC)

struct rkl_backoff {
        rkl_hashmap *entries; /* key -> rkl_backoff_entry*, which holds the key */
};

int64_t rkl_backoff_ns(uint32_t attempts)
{
        int64_t d = BACKOFF_BASE_NS;
        for (uint32_t i = 0; i < attempts && d < BACKOFF_MAX_NS; i++)
                d *= 2;
        return d < BACKOFF_MAX_NS ? d : BACKOFF_MAX_NS;
}

rkl_backoff *rkl_backoff_new(void)
{
        rkl_backoff *b = rkl_xnew0(rkl_backoff, 1);
        b->entries = rkl_hashmap_new();
        return b;
}

rkl_backoff *rkl_backoff_free(rkl_backoff *b)
{
        if (!b)
                return NULL;
        rkl_hashmap_free_values(b->entries, free);
        free(b);
        return NULL;
}

const rkl_backoff_entry *rkl_backoff_failed(rkl_backoff *b, const char *key, int64_t now)
{
        rkl_backoff_entry *t = rkl_hashmap_get(b->entries, key);
        if (!t) {
                t = rkl_xnew0(rkl_backoff_entry, 1);
                (void)snprintf(t->key, sizeof(t->key), "%s", key);
                rkl_hashmap_put(b->entries, t->key, t);
        }
        t->attempts++;
        t->next_ns = now + rkl_backoff_ns(t->attempts);
        return t;
}

bool rkl_backoff_waits(const rkl_backoff *b, const char *key, int64_t now, int64_t *ret_next_ns)
{
        const rkl_backoff_entry *t = rkl_hashmap_get(b->entries, key);
        if (!t || t->next_ns <= now)
                return false;
        *ret_next_ns = t->next_ns;
        return true;
}

uint32_t rkl_backoff_attempts(const rkl_backoff *b, const char *key)
{
        const rkl_backoff_entry *t = rkl_hashmap_get(b->entries, key);
        return t ? t->attempts : 0;
}

void rkl_backoff_forget(rkl_backoff *b, const char *key)
{
        free(rkl_hashmap_remove(b->entries, key));
}

typedef struct stale_args {
        int64_t now, older_ns;
} stale_args;

static bool stale(const void *value, void *userdata)
{
        const rkl_backoff_entry *t = value;
        const stale_args *s = userdata;
        return s->now - t->next_ns > s->older_ns;
}

void rkl_backoff_drop_stale(rkl_backoff *b, int64_t now, int64_t older_ns)
{
        stale_args s = {.now = now, .older_ns = older_ns};
        rkl_hashmap_remove_if(b->entries, stale, &s, free);
}
