/* Fuzz target for image references and rkt's image outputs. The first byte picks the parser
 * (byte % 4: '0' image reference, '1' `rkt image list --format=json`, '2' image manifest,
 * '3' `rkt image fetch` output), the rest is its input. Corpus: tests/fuzz/imageref/,
 * replayed by ctest; crashers found by libFuzzer go there as crash-<sha1> inputs. */
#include <stdint.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/imageref.h"
#include "rkt/image.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool safe_for_argv(const char *s)
{
        /* What becomes an rkt argument never reads as a flag and holds no separators. */
        return s[0] != '-' && !strpbrk(s, " \t\n\r");
}

/* No path component is "." or ".." (rkt-sim and registries map names to paths); ".." inside
 * a tag ("1..2") is a valid tag. */
static bool no_dot_components(const char *s)
{
        for (const char *p = s; *p;) {
                size_t n = strcspn(p, "/:@");
                if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                p += n;
                if (*p)
                        p++;
        }
        return true;
}

static void check_ref(const char *in)
{
        rkl_imageref r = {0};
        rkl_error e = RKL_ERROR_INIT;
        if (rkl_imageref_parse(in, &r, &e) < 0) {
                if (e.code >= 0 || isempty(e.msg))
                        abort();
                return;
        }
        char *s = rkl_imageref_to_string(&r);
        char *k = rkl_imageref_to_rkt(&r, NULL);
        if (!safe_for_argv(s) || !safe_for_argv(k) || !no_dot_components(s))
                abort();
        if (!r.id && ((!r.tag && !r.digest) || !r.registry || !r.repository))
                abort();
        /* Normalising is idempotent. */
        rkl_imageref r2 = {0};
        if (rkl_imageref_parse(s, &r2, NULL) < 0)
                abort();
        char *s2 = rkl_imageref_to_string(&r2);
        if (!streq(s, s2))
                abort();
        free(s);
        free(s2);
        free(k);
        rkl_imageref_done(&r2);
        rkl_imageref_done(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        const char *buf = (const char *)data + 1;
        size_t len = size - 1;
        rkl_error e = RKL_ERROR_INIT;

        switch (data[0] % 4) {
        case 0: {
                char *s = rkl_xstrndup(buf, len);
                check_ref(s);
                free(s);
                break;
        }
        case 1: {
                rkl_rkt_image *l = NULL;
                size_t n = 0;
                if (rkl_rkt_image_list_parse(buf, len, &l, &n, &e) < 0) {
                        if (e.code >= 0)
                                abort();
                        break;
                }
                for (size_t i = 0; i < n; i++)
                        if (!rkl_image_id_is_valid(l[i].id) || !l[i].name)
                                abort();
                rkl_rkt_images_free(l, n);
                break;
        }
        case 2: {
                rkl_rkt_image_manifest m = {0};
                if (rkl_rkt_image_manifest_parse(buf, len, &m, &e) < 0) {
                        if (e.code >= 0)
                                abort();
                        break;
                }
                if (isempty(m.name))
                        abort();
                rkl_rkt_image_manifest_done(&m);
                break;
        }
        case 3: {
                char *s = rkl_xstrndup(buf, len), *id = NULL;
                if (rkl_rkt_image_fetch_parse(s, &id) >= 0) {
                        if (!rkl_image_id_is_valid(id))
                                abort();
                        free(id);
                }
                free(s);
                break;
        }
        }
        return 0;
}
