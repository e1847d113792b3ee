/* Replays a fuzz corpus through LLVMFuzzerTestOneInput when libFuzzer is not linked in, so
 * every ctest run re-checks every seed and every past crasher. Arguments: corpus dirs or
 * files; without any, the dir named by RKL_FUZZ_CORPUS. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/banned.h"

#define INPUT_MAX (16u * 1024 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(int dirfd, const char *path)
{
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int r = rkl_read_file_at(dirfd, path, INPUT_MAX, &buf, &n);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
                return r;
        }
        /* An exact-size copy, so that ASan sees reads past the end of the input. */
        _cleanup_free_ uint8_t *exact = rkl_xmalloc(n ? n : 1);
        memcpy(exact, buf, n);
        (void)LLVMFuzzerTestOneInput(exact, n);
        return 0;
}

static int replay(const char *path, size_t *count)
{
        struct stat st;
        if (stat(path, &st) < 0) {
                fprintf(stderr, "%s: %m\n", path);
                return -errno;
        }
        if (!S_ISDIR(st.st_mode)) {
                (*count)++;
                return replay_file(AT_FDCWD, path);
        }
        _cleanup_closedir_ DIR *d = opendir(path);
        if (!d)
                return -errno;
        struct dirent *de;
        int ret = 0;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                (*count)++;
                int r = replay_file(dirfd(d), de->d_name);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

int main(int argc, char **argv)
{
        size_t count = 0;
        int ret = 0;
        const char *def = getenv("RKL_FUZZ_CORPUS");
        if (argc < 2 && !def) {
                fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
                return 2;
        }
        for (int i = 1; i < argc || (i == 1 && def); i++) {
                int r = replay(argc < 2 ? def : argv[i], &count);
                if (r < 0)
                        ret = 1;
                if (argc < 2)
                        break;
        }
        printf("replayed %zu inputs\n", count);
        return count == 0 ? 1 : ret;
}
