#include "store-fixture.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/config.h"
#include "base/fileio.h"
#include "store/db.h"

static char state_dir[] = "/var/lib/rktlet";
static const rkl_config options = {.state_dir = state_dir};
static const rkl_api_config cfg = {.config = &options, .version = "9.9.9"};

int api_fixture_setup(void **state)
{
        api_fixture *f = rkl_xnew0(api_fixture, 1);
        rkl_error err = RKL_ERROR_INIT;
        rkl_db *db = NULL;
        (void)snprintf(f->dir, sizeof(f->dir), "/tmp/rkl-test-api-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        _cleanup_free_ char *p = rkl_xasprintf("%s/rktlet.db", f->dir);
        assert_int_equal(rkl_db_open(p, NULL, &db, &err), 0);
        f->cache = rkl_cache_new();
        f->store = rkl_store_new(db, f->cache);
        f->arena = rkl_arena_new();
        f->ctx =
            (rkl_api_ctx){.cfg = &cfg, .arena = f->arena, .cache = f->cache, .store = f->store};
        *state = f;
        return 0;
}

int api_fixture_teardown(void **state)
{
        api_fixture *f = *state;
        rkl_store_free(f->store);
        rkl_cache_free(f->cache);
        assert_int_equal(rkl_rm_rf_at(AT_FDCWD, f->dir), 0);
        rkl_arena_free(f->arena);
        free(f);
        return 0;
}
