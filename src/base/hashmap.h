/* A string-keyed hash map (open addressing, linear probing, backward-shift deletion).
 * Keys are borrowed: they must live as long as their entry (e.g. inside the value). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct rkl_hashmap rkl_hashmap;

rkl_hashmap *rkl_hashmap_new(void);
rkl_hashmap *rkl_hashmap_free(rkl_hashmap *m); /* does not free values */
/* Frees every value with free_value, then the map. */
rkl_hashmap *rkl_hashmap_free_values(rkl_hashmap *m, void (*free_value)(void *v));
void *rkl_hashmap_get(const rkl_hashmap *m, const char *key);
/* Inserts or replaces; returns the value replaced, or NULL. */
void *rkl_hashmap_put(rkl_hashmap *m, const char *key, void *value);
/* Removes and returns the value, or NULL. */
void *rkl_hashmap_remove(rkl_hashmap *m, const char *key);
/* Removes every entry for which drop(value, userdata) is true, and frees its value with
 * free_value once it is out of the map (its key may live inside it). */
void rkl_hashmap_remove_if(rkl_hashmap *m, bool (*drop)(const void *value, void *userdata),
                           void *userdata, void (*free_value)(void *v));
size_t rkl_hashmap_size(const rkl_hashmap *m);
/* Iteration: *i starts at 0; returns false at the end. Not across modifications. */
bool rkl_hashmap_iterate(const rkl_hashmap *m, size_t *i, const char **ret_key, void **ret_value);
