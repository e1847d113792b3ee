/* The driver's reading of rkt's words: what a failed command or sandbox said, for a person. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "rkt/rkt-internal.h"
#include "rkt/rkt.h"

static void test_tail_skips_noise_and_joins_lines(void **state)
{
        (void)state;
        char buf[256];
        rkl_rkt_output_tail("add: group \"rkt\" not found, will use default gid\n"
                            "add: error: supervisor for pod X is not yet ready\n"
                            "add: error adding app to pod: exit status 254\n\n",
                            buf, sizeof(buf));
        assert_string_equal(buf, "add: error: supervisor for pod X is not yet ready; "
                                 "add: error adding app to pod: exit status 254");
}

/* What a real sandbox wrote when its systemd could not start (rkt 1.30, systemd 252). */
static void test_tail_drops_terminal_escapes(void **state)
{
        (void)state;
        char buf[256];
        rkl_rkt_output_tail("sandbox: group \"rkt\" not found, will use default gid\n"
                            "[\x1b[0;1;31m!!!!!!\x1b[0m] Failed to allocate manager object.\r\n"
                            "bell\a, tab\there, a lone escape at the end \x1b",
                            buf, sizeof(buf));
        assert_string_equal(buf, "[!!!!!!] Failed to allocate manager object.; "
                                 "bell , tab here, a lone escape at the end");
}

static void test_tail_of_one_long_line_is_its_end(void **state)
{
        (void)state;
        char buf[8];
        rkl_rkt_output_tail("0123456789abcdef", buf, sizeof(buf));
        assert_string_equal(buf, "9abcdef");
        rkl_rkt_output_tail(NULL, buf, sizeof(buf));
        assert_string_equal(buf, "");
}

static void test_classify_error(void **state)
{
        (void)state;
        assert_int_equal(rkl_rkt__classify_error("stop: cannot get pod: no matches found for "
                                                 "\"x\""),
                         -ENOENT);
        assert_int_equal(rkl_rkt__classify_error("pod \"x\" is already stopped"), -EALREADY);
        assert_int_equal(rkl_rkt__classify_error("supervisor for pod x is not yet ready"), -EAGAIN);
        assert_int_equal(rkl_rkt__classify_error("error: nonexistent app \"c1\""), -ENOENT);
        assert_int_equal(rkl_rkt__classify_error("invalid flag"), -EIO);
        assert_int_equal(rkl_rkt__classify_error(NULL), -EIO);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_tail_skips_noise_and_joins_lines),
            cmocka_unit_test(test_tail_drops_terminal_escapes),
            cmocka_unit_test(test_tail_of_one_long_line_is_its_end),
            cmocka_unit_test(test_classify_error),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
