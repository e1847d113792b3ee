/* Fuzz target for the pod directory parsers that take bytes rkt (or a broken disk) wrote.
 * The first byte picks the parser (byte % 4: '0' pod manifest, '1' net-info.json, '2' app
 * exit file, '3' ppid), the rest is its input. Corpus: tests/fuzz/poddir/, replayed by
 * ctest; crashers found by libFuzzer go there as crash-<sha1> regression inputs. */
#include <stdint.h>
#include <stdlib.h>

#include "rkt/poddir.h"
#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_kvs(const rkl_kvs *l)
{
        for (size_t i = 0; i < l->n; i++)
                if (!l->items[i].key[0] || strlen(l->items[i].key) > RKL_MAX_KEY ||
                    strlen(l->items[i].value) > RKL_MAX_VALUE)
                        abort();
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
                rkl_poddir_manifest m = {0};
                if (rkl_poddir_parse_manifest(buf, len, &m, &e) < 0) {
                        if (e.code >= 0)
                                abort();
                        break;
                }
                /* Whatever was accepted is safe to use as paths and within limits. */
                for (size_t i = 0; i < m.n_apps; i++)
                        if (!rkl_pod_app_name_is_valid(m.apps[i].name))
                                abort();
                check_kvs(&m.annotations);
                check_kvs(&m.user_annotations);
                check_kvs(&m.user_labels);
                rkl_poddir_manifest_done(&m);
                break;
        }
        case 1: {
                char *ip = NULL, *name = NULL;
                if (rkl_poddir_parse_netinfo(buf, len, &ip, &name, &e) >= 0) {
                        if (ip && (strlen(ip) > 15 || !name))
                                abort();
                        free(ip);
                        free(name);
                } else if (e.code >= 0)
                        abort();
                break;
        }
        case 2: {
                int code = -1;
                if (rkl_poddir_parse_exit(buf, len, &code) >= 0 && (code < 0 || code > 255))
                        abort();
                break;
        }
        case 3: {
                uint32_t pid = 0;
                if (rkl_poddir_parse_pid(buf, len, &pid) >= 0 && (pid == 0 || pid > INT32_MAX))
                        abort();
                break;
        }
        }
        return 0;
}
