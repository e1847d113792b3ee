/* Fuzz target for rkt's build record (rkt/build.h), the file beside the rkt binary that says
 * which patches it carries: parsed, then checked against the patches rktlet wants and
 * summed up, as the daemon's probe and `rktlet check` do. Corpus: tests/fuzz/rkt-build/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/strv.h"
#include "rkt/build.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        rkl_rkt_build b = {0};
        rkl_error err = RKL_ERROR_INIT;

        if (rkl_rkt_build_parse((const char *)data, size, &b, &err) < 0) {
                /* A failure says why, and leaves nothing to free. */
                if (!err.msg[0] || b.version || b.patch_names)
                        abort();
                return 0;
        }
        if (!b.version || !b.sha256 || strlen(b.sha256) != 64)
                abort();
        if (rkl_strv_length(b.patch_names) != rkl_strv_length(b.patch_sums))
                abort();
        if (!b.stage1_name != !b.stage1_id || !b.stage1_name != !b.stage1_path)
                abort();
        int r =
            rkl_rkt_build_check_patches(&b, rkl_rkt_patches_wanted, rkl_rkt_n_patches_wanted, &err);
        if (r != 0 && r != -ENOPKG)
                abort();
        r = rkl_rkt_build_check_stage1(&b, b.stage1_name, "sha512-00", &err);
        if (r != 0 && r != -ENOPKG)
                abort();
        free(rkl_rkt_build_summary(&b));
        rkl_rkt_build_done(&b);
        return 0;
}
