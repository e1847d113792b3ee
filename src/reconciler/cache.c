#include "cache.h"

#include "base/alloc.h"
#include "base/banned.h"

struct rkl_cache {
        pthread_mutex_t lock;
        rkl_health health;
};

void rkl_health_done(rkl_health *h)
{
        free(h->rkt_version);
        free(h->rkt_detail);
        free(h->systemd_version);
        free(h->systemd_detail);
        *h = (rkl_health){0};
}

void rkl_health_copy(rkl_health *dst, const rkl_health *src)
{
        *dst = *src;
        dst->rkt_version = rkl_xstrdup(src->rkt_version);
        dst->rkt_detail = rkl_xstrdup(src->rkt_detail);
        dst->systemd_version = rkl_xstrdup(src->systemd_version);
        dst->systemd_detail = rkl_xstrdup(src->systemd_detail);
}

rkl_cache *rkl_cache_new(void)
{
        rkl_cache *c = rkl_xnew0(rkl_cache, 1);
        pthread_mutex_init(&c->lock, NULL);
        return c;
}

rkl_cache *rkl_cache_free(rkl_cache *c)
{
        if (!c)
                return NULL;
        rkl_health_done(&c->health);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}

void rkl_cache_set_health(rkl_cache *c, const rkl_health *h)
{
        rkl_health copy;
        rkl_health_copy(&copy, h);
        {
                RKL_GUARD(&c->lock);
                rkl_health old = c->health;
                c->health = copy;
                copy = old;
        }
        /* The old strings are freed outside the lock. */
        rkl_health_done(&copy);
}

void rkl_cache_get_health(rkl_cache *c, rkl_health *ret)
{
        RKL_GUARD(&c->lock);
        rkl_health_copy(ret, &c->health);
}
