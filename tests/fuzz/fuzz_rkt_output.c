/* Fuzz target for what rktlet reads of rkt's output besides pods and images (those have
 * their own targets): the first byte picks the reader (byte % 4: '0' `rkt version`, '1' the
 * error classes of a command's stderr, '2' of an image command's stderr, '3' the tail of
 * stderr shown to a person), the rest is rkt's output. Corpus: tests/fuzz/rkt-output/. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "rkt/image.h"
#include "rkt/rkt-internal.h"
#include "rkt/rkt.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool known_class(int r, const int *allowed, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (r == allowed[i])
                        return true;
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        char *text = rkl_xstrndup((const char *)data + 1, size - 1);

        switch (data[0] % 4) {
        case 0: {
                rkl_rkt_version v = {0};
                if (rkl_rkt_version_parse(text, &v) >= 0) {
                        /* A version is one token: it lands in Status and in logs. */
                        if (!v.version || !*v.version || strpbrk(v.version, " \t\r\n"))
                                abort();
                        rkl_rkt_version_done(&v);
                }
                break;
        }
        case 1: {
                static const int allowed[] = {-ENOENT, -EALREADY, -EAGAIN, -EIO};
                if (!known_class(rkl_rkt__classify_error(text), allowed, ELEMENTSOF(allowed)))
                        abort();
                break;
        }
        case 2: {
                int r = rkl_rkt_image_classify_error(text);
                if (r >= 0)
                        abort();
                break;
        }
        case 3: {
                char buf[64];
                rkl_rkt_output_tail(text, buf, sizeof(buf));
                /* Bounded, terminated, and printable but for UTF-8 bytes. */
                if (strlen(buf) >= sizeof(buf))
                        abort();
                for (const unsigned char *p = (const unsigned char *)buf; *p; p++)
                        if (*p < 0x20 || *p == 0x7f)
                                abort();
                break;
        }
        }
        free(text);
        return 0;
}
