/* A real store and cache in a temporary directory, and a call context over them: what the
 * API's handler tests run against. */
#pragma once

#include "api/api.h"
#include "store/cache.h"
#include "store/store.h"

typedef struct api_fixture {
        char dir[64];
        rkl_cache *cache;
        rkl_store *store;
        rkl_arena *arena;
        rkl_api_ctx ctx; /* cfg, arena, cache and store set */
} api_fixture;

/* cmocka's setup and teardown: *state is an api_fixture whose context has a configuration
 * of defaults (state directory /var/lib/rktlet, version 9.9.9). Setup fails the test on an
 * error. */
int api_fixture_setup(void **state);
int api_fixture_teardown(void **state);
