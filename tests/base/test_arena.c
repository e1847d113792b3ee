#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/arena.h"

static void test_alloc_aligned_zeroed(void **state)
{
        _cleanup_(rkl_arena_freep) rkl_arena *a = rkl_arena_new();
        for (size_t n = 1; n < 5000; n += 37) {
                unsigned char *p = rkl_arena_alloc(a, n);
                assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
                for (size_t i = 0; i < n; i++)
                        assert_int_equal(p[i], 0);
                memset(p, 0xaa, n);
        }
}

static void test_big_allocation_keeps_chunk(void **state)
{
        _cleanup_(rkl_arena_freep) rkl_arena *a = rkl_arena_new();
        char *s = rkl_arena_strdup(a, "small");
        size_t before = rkl_arena_bytes(a);
        char *big = rkl_arena_alloc(a, 3 << 20);
        big[(3 << 20) - 1] = 1;
        assert_true(rkl_arena_bytes(a) >= before + (3 << 20));
        assert_string_equal(s, "small");
        assert_string_equal(rkl_arena_printf(a, "%s-%d", "x", 42), "x-42");
        assert_string_equal(rkl_arena_strndup(a, "abcdef", 3), "abc");
        assert_null(rkl_arena_strdup(a, NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_alloc_aligned_zeroed),
            cmocka_unit_test(test_big_allocation_keeps_chunk),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
