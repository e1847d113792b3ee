/* The options' defaults: rkl_config_init() gives every one (the strings the struct's own),
 * and rkl_config_fill_defaults() gives the same numbers to a configuration made by hand,
 * leaving what it holds and its strings alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/config.h"
#include "base/macro.h"

static void assert_default_numbers(const rkl_config *c)
{
        assert_int_equal(c->api_threads, RKL_CONFIG_DEFAULT_API_THREADS);
        assert_int_equal(c->max_actions, RKL_CONFIG_DEFAULT_MAX_ACTIONS);
        assert_int_equal(c->cni_timeout_usec, RKL_CONFIG_DEFAULT_CNI_TIMEOUT_USEC);
        assert_int_equal(c->probe_interval_usec, RKL_CONFIG_DEFAULT_PROBE_INTERVAL_USEC);
        assert_int_equal(c->stats_interval_usec, RKL_CONFIG_DEFAULT_STATS_INTERVAL_USEC);
        assert_int_equal(c->sandbox_ready_timeout_usec,
                         RKL_CONFIG_DEFAULT_SANDBOX_READY_TIMEOUT_USEC);
        assert_int_equal(c->rkt_timeout_usec, RKL_CONFIG_DEFAULT_RKT_TIMEOUT_USEC);
}

static void test_init(void **state)
{
        (void)state;
        rkl_config c;
        rkl_config_init(&c);
        assert_string_equal(c.listen_path, RKL_CONFIG_DEFAULT_LISTEN_PATH);
        assert_string_equal(c.state_dir, RKL_CONFIG_DEFAULT_STATE_DIR);
        assert_string_equal(c.rkt_data_dir, RKL_CONFIG_DEFAULT_RKT_DATA_DIR);
        assert_string_equal(c.cni_conf_dir, RKL_CONFIG_DEFAULT_CNI_CONF_DIR);
        assert_string_equal(c.stream_address, RKL_CONFIG_DEFAULT_STREAM_ADDRESS);
        assert_int_equal(c.socket_gid, (gid_t)-1);
        /* What has no default stays unset: the flags or the file may add to it. */
        assert_null(c.cni_bin_dirs);
        assert_null(c.rkt_path);
        assert_null(c.net);
        assert_null(c.metrics_address);
        assert_false(c.wait);
        assert_default_numbers(&c);
        rkl_config_done(&c);
        assert_null(c.listen_path);
        assert_int_equal(c.api_threads, 0);
}

static void test_fill_defaults(void **state)
{
        (void)state;
        char dir[] = "/somewhere";
        rkl_config c = {.state_dir = dir, .max_actions = 7, .rkt_timeout_usec = 3 * USEC_PER_SEC};
        rkl_config_fill_defaults(&c);
        /* Given ones stay; the strings are the caller's and are not filled. */
        assert_int_equal(c.max_actions, 7);
        assert_int_equal(c.rkt_timeout_usec, 3 * USEC_PER_SEC);
        assert_ptr_equal(c.state_dir, dir);
        assert_null(c.listen_path);
        c.max_actions = 0;
        c.rkt_timeout_usec = 0;
        rkl_config_fill_defaults(&c);
        assert_default_numbers(&c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_init),
            cmocka_unit_test(test_fill_defaults),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
