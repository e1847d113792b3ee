/* Fuzz target for the files rktlet reads that others wrote: an image's /etc/passwd and
 * /etc/group (anyone who publishes an image writes them) and a localhost seccomp profile. The
 * first byte picks the reader and the spec (byte % 4: '0' run_as_user 1000, '1' run_as_username
 * "app", '2' run_as_user 0 with run_as_group 7, '3' the seccomp profile); for the first three
 * the rest is passwd, then a NUL, then group. Corpus: tests/fuzz/image-files/. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "rkt/command.h"
#include "rkt/image-user.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        rkl_error err = RKL_ERROR_INIT;
        if (data[0] % 4 == 3) {
                char *unit = NULL;
                if (rkl_rkt_seccomp_profile_to_unit((const char *)data + 1, size - 1, &unit,
                                                    &err) >= 0) {
                        /* Unit lines only: nothing that starts a section or another key. */
                        if (strncmp(unit, "SystemCallFilter=", 17) != 0 || strchr(unit, '[') ||
                            strstr(unit, "\n\n"))
                                abort();
                        free(unit);
                }
                return 0;
        }
        char *text = rkl_xmalloc(size);
        memcpy(text, data + 1, size - 1);
        text[size - 1] = 0;
        const char *passwd = text, *group = text + strlen(text);
        if (group < text + size - 1)
                group++;
        rkl_container_spec s = {0};
        switch (data[0] % 4) {
        case 0:
                s.has_run_as_user = true, s.run_as_user = 1000;
                break;
        case 1:
                s.run_as_username = (char *)"app";
                break;
        default:
                s.has_run_as_user = true, s.has_run_as_group = true, s.run_as_group = 7;
                break;
        }
        rkl_rkt_ids ids = {0};
        if (rkl_rkt_ids_parse(passwd, group, &s, &ids, &err) >= 0) {
                if (!ids.set || ids.uid < 0 || ids.gid < 0 || ids.uid > UINT32_MAX - 1 ||
                    ids.gid > UINT32_MAX - 1 || ids.n_groups > 256 ||
                    (s.has_run_as_group && ids.gid != 7) ||
                    (s.has_run_as_user && ids.uid != s.run_as_user))
                        abort();
                rkl_rkt_ids_done(&ids);
        } else if (!s.run_as_username || err.code != -ENOENT) {
                abort(); /* only an unknown name fails */
        }
        free(text);
        return 0;
}
