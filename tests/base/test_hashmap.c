#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/hashmap.h"

/* Against a trivially correct model, through growth and many deletions. */
static int freed;

static void count_free(void *v)
{
        freed++;
        free(v);
}

static void test_free_values(void **state)
{
        rkl_hashmap *m = rkl_hashmap_new();
        static const char *const keys[] = {"a", "b", "c"};
        for (size_t i = 0; i < 3; i++)
                rkl_hashmap_put(m, keys[i], rkl_xstrdup(keys[i]));
        assert_null(rkl_hashmap_free_values(m, count_free));
        assert_int_equal(freed, 3);
        assert_null(rkl_hashmap_free_values(NULL, count_free));
}

/* Values whose key lives inside them, as the reconciler keeps them: the odd ones go. */
static bool odd(const void *v, void *userdata)
{
        (*(int *)userdata)++;
        return (((const char *)v)[0] - '0') % 2 == 1;
}

static void test_remove_if(void **state)
{
        rkl_hashmap *m = rkl_hashmap_new();
        for (int i = 0; i < 100; i++) {
                char *v = rkl_xasprintf("%d-%d", i % 10, i);
                rkl_hashmap_put(m, v, v);
        }
        int asked = 0;
        freed = 0;
        rkl_hashmap_remove_if(m, odd, &asked, count_free);
        assert_int_equal(asked, 100);
        assert_int_equal(freed, 50);
        assert_int_equal(rkl_hashmap_size(m), 50);
        assert_null(rkl_hashmap_get(m, "3-13"));
        assert_non_null(rkl_hashmap_get(m, "4-14"));
        rkl_hashmap_free_values(m, free);
}

static void test_against_model(void **state)
{
        enum { N = 3000 };
        char *keys[N];
        bool present[N] = {0};
        rkl_hashmap *m = rkl_hashmap_new();
        unsigned seed = 42;

        for (int i = 0; i < N; i++)
                keys[i] = rkl_xasprintf("%064x", i * 2654435761u);
        for (int round = 0; round < 20000; round++) {
                int k = (int)(rand_r(&seed) % N);
                if (rand_r(&seed) % 3) {
                        void *old = rkl_hashmap_put(m, keys[k], keys[k]);
                        assert_ptr_equal(old, present[k] ? keys[k] : NULL);
                        present[k] = true;
                } else {
                        void *old = rkl_hashmap_remove(m, keys[k]);
                        assert_ptr_equal(old, present[k] ? keys[k] : NULL);
                        present[k] = false;
                }
        }
        size_t n = 0;
        for (int i = 0; i < N; i++) {
                assert_ptr_equal(rkl_hashmap_get(m, keys[i]), present[i] ? keys[i] : NULL);
                n += present[i];
        }
        assert_int_equal(rkl_hashmap_size(m), n);
        size_t it = 0, seen = 0;
        const char *k;
        void *v;
        while (rkl_hashmap_iterate(m, &it, &k, &v)) {
                assert_ptr_equal(k, v);
                seen++;
        }
        assert_int_equal(seen, n);
        rkl_hashmap_free(m);
        for (int i = 0; i < N; i++)
                free(keys[i]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_against_model),
                                           cmocka_unit_test(test_free_values),
                                           cmocka_unit_test(test_remove_if)};
        return cmocka_run_group_tests(tests, NULL, NULL);
}
