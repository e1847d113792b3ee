/* Fuzz target for what CNI brings from outside: a network configuration file (written by a
 * cluster network's installer, or anyone who can write the directory) and a plugin's ADD
 * result. The first byte picks which (byte % 2: '0' a configuration, '1' a result). A
 * configuration that parses must give back a list that parses to the same list (a sandbox
 * keeps it and its DEL parses it again). Corpus: tests/fuzz/cni/, replayed by ctest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/strv.h"
#include "cni/cni.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void config(const char *text, size_t len)
{
        _cleanup_(rkl_cni_config_freep) rkl_cni_config *c = NULL, *again = NULL;
        rkl_error e = RKL_ERROR_INIT;
        if (rkl_cni_config_parse(text, len, "fuzz", &c, &e) < 0)
                return;
        const char *json = rkl_cni_config_json(c);
        if (rkl_cni_config_parse(json, strlen(json), "kept", &again, &e) < 0 ||
            strcmp(rkl_cni_config_json(again), json) != 0 ||
            strcmp(rkl_cni_config_types(again), rkl_cni_config_types(c)) != 0)
                abort();
}

static void result(const char *text)
{
        _cleanup_strv_free_ char **ips = NULL;
        rkl_error e = RKL_ERROR_INIT;
        if (rkl_cni_result_ips(text, &ips, &e) < 0)
                return;
        RKL_STRV_FOREACH (ip, ips)
                if (!**ip || strchr(*ip, '/'))
                        abort(); /* an address, without its prefix length */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1 || size > (1 << 20))
                return 0;
        _cleanup_free_ char *text = rkl_xmalloc(size);
        memcpy(text, data + 1, size - 1);
        text[size - 1] = 0;
        if (data[0] % 2 == 0)
                config(text, size - 1);
        else
                result(text);
        return 0;
}
