/* Fuzz target for what a request costs the daemon to take in, on the bytes any client can
 * send: its method's wire check (src/api/wire.c), then, for what the check lets through,
 * protobuf-c's unpack as the server does it, through an allocator that counts. The first
 * byte picks the method (any of both services'), the rest is the request. Corpus:
 * tests/fuzz/request-cost/, replayed by ctest.
 *
 * Checks: a request the check admits costs at most BUDGET() bytes of allocation (everything
 * allocated, freed or not: the server's arena frees nothing before the call ends), a sum
 * proportional to its size. A shape that costs more than that (protobuf-c merging a
 * repeated message field, as a 400 KB ListContainers once took the daemon past 1 GiB) is a
 * finding; libFuzzer's -timeout (scripts/fuzz) catches one that costs time instead. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.pb-c.h"
#include "api/wire.h"
#include "base/banned.h"

/* Per field (a field takes a byte at least, and its method bounds their number): the message
 * or the slot protobuf-c allocates for it, its scanning record (32 bytes, in slabs that
 * double), and the copies that up to 4 merges of a field at each level make of its slot; an
 * empty message in a repeated field, 2 bytes, costs about 150. Per byte: the strings'
 * copies. Plus the request's own message. */
#define COST_PER_FIELD 256
#define COST_PER_BYTE  4
#define COST_BASE      (64 * 1024)
#define BUDGET(len, max_fields)                                                                    \
        (COST_PER_FIELD * ((len) < (max_fields) ? (len) : (max_fields)) + COST_PER_BYTE * (len) +  \
         COST_BASE)

/* What the server's arena would hold: each allocation rounded up to 16 bytes, as the arena
 * does. */
typedef struct counter {
        size_t bytes;
} counter;

static void *count_alloc(void *data, size_t size)
{
        counter *c = data;
        c->bytes += (size + 15) & ~(size_t)15;
        return malloc(size);
}

static void count_free(void *data, void *p)
{
        (void)data;
        free(p);
}

/* Inputs that cost more per byte of request than any before are new coverage: the fuzzer
 * keeps them and mutates them further, up towards the budget, instead of wandering among
 * cheap ones. One branch per power of two of the ratio. */
static volatile unsigned sink;

static void cost_feedback(size_t bytes, size_t len)
{
        size_t ratio = bytes / (len + 1);
        unsigned bucket = 0;
        while (ratio > 1 && bucket < 15) {
                ratio >>= 1;
                bucket++;
        }
        switch (bucket) {
        case 0:
                sink = 0;
                break;
        case 1:
                sink = 1;
                break;
        case 2:
                sink = 2;
                break;
        case 3:
                sink = 3;
                break;
        case 4:
                sink = 4;
                break;
        case 5:
                sink = 5;
                break;
        case 6:
                sink = 6;
                break;
        case 7:
                sink = 7;
                break;
        case 8:
                sink = 8;
                break;
        case 9:
                sink = 9;
                break;
        case 10:
                sink = 10;
                break;
        case 11:
                sink = 11;
                break;
        case 12:
                sink = 12;
                break;
        case 13:
                sink = 13;
                break;
        case 14:
                sink = 14;
                break;
        default:
                sink = 15;
                break;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const ProtobufCServiceDescriptor *const services[] = {
            &runtime__v1__runtime_service__descriptor,
            &runtime__v1__image_service__descriptor,
        };
        if (size < 1)
                return 0;
        size_t n = services[0]->n_methods + services[1]->n_methods;
        size_t k = data[0] % n;
        const ProtobufCServiceDescriptor *svc = services[k >= services[0]->n_methods];
        const ProtobufCMethodDescriptor *m =
            &svc->methods[k >= services[0]->n_methods ? k - services[0]->n_methods : k];
        const rkl_api_wire_limits *lim = rkl_api_wire_limits_of(m->name);
        const uint8_t *buf = data + 1;
        size_t len = size - 1;

        rkl_error err = RKL_ERROR_INIT;
        int r = rkl_api_wire_check(m->input, buf, len, lim, &err);
        if (r == -EMSGSIZE || r == -EINVAL) {
                if (!err.msg[0])
                        abort(); /* a refusal always says why */
                return 0;
        }
        if (r != 0)
                abort();

        counter c = {0};
        ProtobufCAllocator alloc = {.alloc = count_alloc, .free = count_free, .allocator_data = &c};
        ProtobufCMessage *msg = protobuf_c_message_unpack(m->input, &alloc, len, buf);
        cost_feedback(c.bytes, len);
        size_t budget = BUDGET(len, lim->max_fields);
        if (c.bytes > budget) {
                fprintf(stderr, "%s: %zu bytes of request cost %zu bytes to unpack, over %zu\n",
                        m->name, len, c.bytes, budget);
                abort();
        }
        if (msg)
                protobuf_c_message_free_unpacked(msg, &alloc);
        return 0;
}
