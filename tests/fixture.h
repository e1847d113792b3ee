/* Fixture files of the cmocka tests, under tests/fixtures/ of the source tree (ctest sets
 * RKL_SOURCE_DIR; run by hand from build/tests/<dir>, "../.." is the tree's build dir
 * parent). Include after cmocka.h. */
#pragma once

#include <fcntl.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/fileio.h"

/* tests/fixtures/<rel>, malloc'd. */
static inline char *rkl_test_fixture_path(const char *rel)
{
        const char *src = getenv("RKL_SOURCE_DIR");
        return rkl_xasprintf("%s/tests/fixtures/%s", src ? src : "../..", rel);
}

/* The whole file (at most 1 MiB), NUL-terminated, malloc'd; ret_n may be NULL. */
static inline char *rkl_test_fixture_read(const char *rel, size_t *ret_n)
{
        char *path = rkl_test_fixture_path(rel);
        char *text = NULL;
        assert_int_equal(rkl_read_file_at(AT_FDCWD, path, 1 << 20, &text, ret_n), 0);
        free(path);
        return text;
}
