#include "hashmap.h"

#include <stdint.h>

#include "alloc.h"
#include "banned.h"

typedef struct slot {
        const char *key; /* NULL: empty */
        void *value;
        uint64_t hash;
} slot;

struct rkl_hashmap {
        slot *slots;
        size_t cap; /* a power of two */
        size_t n;
};

/* FNV-1a, then a final mix: IDs are random hex, but other keys may not be. */
static uint64_t hash_string(const char *s)
{
        uint64_t h = UINT64_C(14695981039346656037);
        for (; *s; s++) {
                h ^= (unsigned char)*s;
                h *= UINT64_C(1099511628211);
        }
        h ^= h >> 33;
        h *= UINT64_C(0xff51afd7ed558ccd);
        h ^= h >> 33;
        return h;
}

rkl_hashmap *rkl_hashmap_new(void)
{
        rkl_hashmap *m = rkl_xnew0(rkl_hashmap, 1);
        m->cap = 16;
        m->slots = rkl_xnew0(slot, m->cap);
        return m;
}

rkl_hashmap *rkl_hashmap_free(rkl_hashmap *m)
{
        if (!m)
                return NULL;
        free(m->slots);
        free(m);
        return NULL;
}

static size_t find(const rkl_hashmap *m, const char *key, uint64_t h)
{
        size_t i = h & (m->cap - 1);
        while (m->slots[i].key && (m->slots[i].hash != h || !streq(m->slots[i].key, key)))
                i = (i + 1) & (m->cap - 1);
        return i;
}

void *rkl_hashmap_get(const rkl_hashmap *m, const char *key)
{
        size_t i = find(m, key, hash_string(key));
        return m->slots[i].key ? m->slots[i].value : NULL;
}

static void grow(rkl_hashmap *m)
{
        slot *old = m->slots;
        size_t old_cap = m->cap;
        m->cap *= 2;
        m->slots = rkl_xnew0(slot, m->cap);
        for (size_t i = 0; i < old_cap; i++)
                if (old[i].key)
                        m->slots[find(m, old[i].key, old[i].hash)] = old[i];
        free(old);
}

void *rkl_hashmap_put(rkl_hashmap *m, const char *key, void *value)
{
        uint64_t h = hash_string(key);
        size_t i = find(m, key, h);
        if (m->slots[i].key) {
                void *old = m->slots[i].value;
                m->slots[i] = (slot){key, value, h};
                return old;
        }
        if ((m->n + 1) * 4 > m->cap * 3) {
                grow(m);
                i = find(m, key, h);
        }
        m->slots[i] = (slot){key, value, h};
        m->n++;
        return NULL;
}

void *rkl_hashmap_remove(rkl_hashmap *m, const char *key)
{
        size_t i = find(m, key, hash_string(key));
        if (!m->slots[i].key)
                return NULL;
        void *value = m->slots[i].value;
        m->slots[i] = (slot){0};
        m->n--;
        /* Backward shift: move later entries of the run into the hole when their home
         * slot is at or before it, so lookups never stop early. */
        for (size_t j = (i + 1) & (m->cap - 1); m->slots[j].key; j = (j + 1) & (m->cap - 1)) {
                size_t home = m->slots[j].hash & (m->cap - 1);
                bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
                if (movable) {
                        m->slots[i] = m->slots[j];
                        m->slots[j] = (slot){0};
                        i = j;
                }
        }
        return value;
}

size_t rkl_hashmap_size(const rkl_hashmap *m)
{
        return m->n;
}

bool rkl_hashmap_iterate(const rkl_hashmap *m, size_t *i, const char **ret_key, void **ret_value)
{
        for (; *i < m->cap; (*i)++)
                if (m->slots[*i].key) {
                        if (ret_key)
                                *ret_key = m->slots[*i].key;
                        if (ret_value)
                                *ret_value = m->slots[*i].value;
                        (*i)++;
                        return true;
                }
        return false;
}

void rkl_hashmap_remove_if(rkl_hashmap *m, bool (*drop)(const void *value, void *userdata),
                           void *userdata, void (*free_value)(void *v))
{
        /* The keys first, copied: a removal moves entries, so none can happen while the
         * map is walked, and a key may live in the value freed. */
        size_t i = 0, n = 0;
        const char *key;
        void *v;
        char **keys = rkl_xnew0(char *, rkl_hashmap_size(m) + 1);
        while (rkl_hashmap_iterate(m, &i, &key, &v))
                if (drop(v, userdata))
                        keys[n++] = rkl_xstrdup(key);
        for (size_t k = 0; k < n; k++) {
                free_value(rkl_hashmap_remove(m, keys[k]));
                free(keys[k]);
        }
        free(keys);
}

rkl_hashmap *rkl_hashmap_free_values(rkl_hashmap *m, void (*free_value)(void *v))
{
        size_t i = 0;
        void *v;
        while (m && rkl_hashmap_iterate(m, &i, NULL, &v))
                free_value(v);
        return rkl_hashmap_free(m);
}
