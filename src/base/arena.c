#include "arena.h"

#include <stdarg.h>
#include <stdalign.h>

#include "alloc.h"
#include "banned.h"

typedef struct chunk {
        struct chunk *next;
        size_t size, used;
        alignas(max_align_t) unsigned char data[];
} chunk;

struct rkl_arena {
        chunk *head;
        size_t bytes;
        /* The first chunk lives inside the arena so a small call costs one malloc. */
};

#define CHUNK_MIN 4096

rkl_arena *rkl_arena_new(void)
{
        return rkl_xnew0(rkl_arena, 1);
}

rkl_arena *rkl_arena_free(rkl_arena *a)
{
        if (!a)
                return NULL;
        for (chunk *c = a->head, *n; c; c = n) {
                n = c->next;
                free(c);
        }
        free(a);
        return NULL;
}

void *rkl_arena_alloc(rkl_arena *a, size_t n)
{
        const size_t align = alignof(max_align_t);
        n = (n + align - 1) & ~(align - 1);
        if (n == 0)
                n = align;
        chunk *c = a->head;
        if (!c || c->size - c->used < n) {
                size_t size = n > CHUNK_MIN ? n : (a->head ? 2 * a->head->size : CHUNK_MIN);
                if (size > 1 << 20 && n <= 1 << 20)
                        size = 1 << 20;
                c = rkl_xmalloc(sizeof(chunk) + size);
                c->size = size;
                c->used = 0;
                a->bytes += sizeof(chunk) + size;
                /* A big one-off allocation goes behind the current chunk, which keeps
                 * serving small ones. */
                if (a->head && n > CHUNK_MIN && a->head->size - a->head->used >= CHUNK_MIN) {
                        c->next = a->head->next;
                        a->head->next = c;
                } else {
                        c->next = a->head;
                        a->head = c;
                }
        }
        void *p = c->data + c->used;
        c->used += n;
        memset(p, 0, n);
        return p;
}

char *rkl_arena_strndup(rkl_arena *a, const char *s, size_t n)
{
        if (!s)
                return NULL;
        size_t len = strnlen(s, n);
        char *p = rkl_arena_alloc(a, len + 1);
        memcpy(p, s, len);
        return p;
}

char *rkl_arena_strdup(rkl_arena *a, const char *s)
{
        return s ? rkl_arena_strndup(a, s, strlen(s)) : NULL;
}

char *rkl_arena_printf(rkl_arena *a, const char *fmt, ...)
{
        va_list ap, ap2;
        va_start(ap, fmt);
        va_copy(ap2, ap);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0)
                rkl_oom();
        char *p = rkl_arena_alloc(a, (size_t)n + 1);
        (void)vsnprintf(p, (size_t)n + 1, fmt, ap2);
        va_end(ap2);
        return p;
}

size_t rkl_arena_bytes(const rkl_arena *a)
{
        return a->bytes;
}
