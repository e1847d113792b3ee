/* Fuzz target for the parser of the kernel's OOM kill records (src/stats/oom.c): kmsg lines
 * whose task names and cgroup paths any app can choose. Corpus: tests/fuzz/kmsg-oom/,
 * replayed by ctest.
 *
 * Checks (abort on violation): the result is 1, 0 or -EBADMSG; on 1 the path lies inside the
 * record's first line, is not empty, starts with '/', follows "task_memcg=" and is followed by
 * ",task=". */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/oom.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
        do {                                                                                       \
                if (!(x)) {                                                                        \
                        fprintf(stderr, "fuzz_kmsg_oom: %s:%d: %s\n", __FILE__, __LINE__, #x);     \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* A copy of exactly size bytes, so that ASan sees any read past the end. */
        char *rec = malloc(size ? size : 1);
        const char *memcg = NULL;
        size_t n = 0;

        CHECK(rec);
        memcpy(rec, data, size);
        int r = rkl_oom_parse_record(rec, size, &memcg, &n);
        CHECK(r == 1 || r == 0 || r == -EBADMSG);
        if (r == 1) {
                const char *nl = memchr(rec, '\n', size);
                const char *end = nl ? nl : rec + size;
                CHECK(memcg > rec && n > 0 && memcg + n <= end);
                CHECK(memcg[0] == '/');
                CHECK((size_t)(memcg - rec) >= strlen("task_memcg="));
                CHECK(!memcmp(memcg - strlen("task_memcg="), "task_memcg=", strlen("task_memcg=")));
                CHECK((size_t)(end - (memcg + n)) >= strlen(",task="));
                CHECK(!memcmp(memcg + n, ",task=", strlen(",task=")));
        }
        free(rec);
        return 0;
}
