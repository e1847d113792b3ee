/* SPDY/3.1 frames to bytes and back; see spdy.h. The decoder buffers one frame at a time and
 * checks its length against the limits before it allocates for it; header blocks inflate into
 * a buffer that grows only up to max_header_bytes, so a zlib bomb stops there. */
#include "spdy.h"

#include <inttypes.h>
#include <limits.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/banned.h"

#define FRAME_HEADER   8u
#define MAX_LEN24      0xffffffu
#define ID_MASK        0x7fffffffu
#define CONTROL_BIT    0x80000000u
#define MAX_HEADER_CAP (256u * 1024 * 1024) /* no header block is anywhere near */

/* SPDY/3's zlib dictionary (draft-mbelshe-httpbis-spdy-00 §2.6.10.1): 1423 bytes. */
static const uint8_t dictionary[] = {
    0x00, 0x00, 0x00, 0x07, 0x6f, 0x70, 0x74, 0x69, 0x6f, 0x6e, 0x73, 0x00, 0x00, 0x00, 0x04, 0x68,
    0x65, 0x61, 0x64, 0x00, 0x00, 0x00, 0x04, 0x70, 0x6f, 0x73, 0x74, 0x00, 0x00, 0x00, 0x03, 0x70,
    0x75, 0x74, 0x00, 0x00, 0x00, 0x06, 0x64, 0x65, 0x6c, 0x65, 0x74, 0x65, 0x00, 0x00, 0x00, 0x05,
    0x74, 0x72, 0x61, 0x63, 0x65, 0x00, 0x00, 0x00, 0x06, 0x61, 0x63, 0x63, 0x65, 0x70, 0x74, 0x00,
    0x00, 0x00, 0x0e, 0x61, 0x63, 0x63, 0x65, 0x70, 0x74, 0x2d, 0x63, 0x68, 0x61, 0x72, 0x73, 0x65,
    0x74, 0x00, 0x00, 0x00, 0x0f, 0x61, 0x63, 0x63, 0x65, 0x70, 0x74, 0x2d, 0x65, 0x6e, 0x63, 0x6f,
    0x64, 0x69, 0x6e, 0x67, 0x00, 0x00, 0x00, 0x0f, 0x61, 0x63, 0x63, 0x65, 0x70, 0x74, 0x2d, 0x6c,
    0x61, 0x6e, 0x67, 0x75, 0x61, 0x67, 0x65, 0x00, 0x00, 0x00, 0x0d, 0x61, 0x63, 0x63, 0x65, 0x70,
    0x74, 0x2d, 0x72, 0x61, 0x6e, 0x67, 0x65, 0x73, 0x00, 0x00, 0x00, 0x03, 0x61, 0x67, 0x65, 0x00,
    0x00, 0x00, 0x05, 0x61, 0x6c, 0x6c, 0x6f, 0x77, 0x00, 0x00, 0x00, 0x0d, 0x61, 0x75, 0x74, 0x68,
    0x6f, 0x72, 0x69, 0x7a, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x00, 0x00, 0x00, 0x0d, 0x63, 0x61, 0x63,
    0x68, 0x65, 0x2d, 0x63, 0x6f, 0x6e, 0x74, 0x72, 0x6f, 0x6c, 0x00, 0x00, 0x00, 0x0a, 0x63, 0x6f,
    0x6e, 0x6e, 0x65, 0x63, 0x74, 0x69, 0x6f, 0x6e, 0x00, 0x00, 0x00, 0x0c, 0x63, 0x6f, 0x6e, 0x74,
    0x65, 0x6e, 0x74, 0x2d, 0x62, 0x61, 0x73, 0x65, 0x00, 0x00, 0x00, 0x10, 0x63, 0x6f, 0x6e, 0x74,
    0x65, 0x6e, 0x74, 0x2d, 0x65, 0x6e, 0x63, 0x6f, 0x64, 0x69, 0x6e, 0x67, 0x00, 0x00, 0x00, 0x10,
    0x63, 0x6f, 0x6e, 0x74, 0x65, 0x6e, 0x74, 0x2d, 0x6c, 0x61, 0x6e, 0x67, 0x75, 0x61, 0x67, 0x65,
    0x00, 0x00, 0x00, 0x0e, 0x63, 0x6f, 0x6e, 0x74, 0x65, 0x6e, 0x74, 0x2d, 0x6c, 0x65, 0x6e, 0x67,
    0x74, 0x68, 0x00, 0x00, 0x00, 0x10, 0x63, 0x6f, 0x6e, 0x74, 0x65, 0x6e, 0x74, 0x2d, 0x6c, 0x6f,
    0x63, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x00, 0x00, 0x00, 0x0b, 0x63, 0x6f, 0x6e, 0x74, 0x65, 0x6e,
    0x74, 0x2d, 0x6d, 0x64, 0x35, 0x00, 0x00, 0x00, 0x0d, 0x63, 0x6f, 0x6e, 0x74, 0x65, 0x6e, 0x74,
    0x2d, 0x72, 0x61, 0x6e, 0x67, 0x65, 0x00, 0x00, 0x00, 0x0c, 0x63, 0x6f, 0x6e, 0x74, 0x65, 0x6e,
    0x74, 0x2d, 0x74, 0x79, 0x70, 0x65, 0x00, 0x00, 0x00, 0x04, 0x64, 0x61, 0x74, 0x65, 0x00, 0x00,
    0x00, 0x04, 0x65, 0x74, 0x61, 0x67, 0x00, 0x00, 0x00, 0x06, 0x65, 0x78, 0x70, 0x65, 0x63, 0x74,
    0x00, 0x00, 0x00, 0x07, 0x65, 0x78, 0x70, 0x69, 0x72, 0x65, 0x73, 0x00, 0x00, 0x00, 0x04, 0x66,
    0x72, 0x6f, 0x6d, 0x00, 0x00, 0x00, 0x04, 0x68, 0x6f, 0x73, 0x74, 0x00, 0x00, 0x00, 0x08, 0x69,
    0x66, 0x2d, 0x6d, 0x61, 0x74, 0x63, 0x68, 0x00, 0x00, 0x00, 0x11, 0x69, 0x66, 0x2d, 0x6d, 0x6f,
    0x64, 0x69, 0x66, 0x69, 0x65, 0x64, 0x2d, 0x73, 0x69, 0x6e, 0x63, 0x65, 0x00, 0x00, 0x00, 0x0d,
    0x69, 0x66, 0x2d, 0x6e, 0x6f, 0x6e, 0x65, 0x2d, 0x6d, 0x61, 0x74, 0x63, 0x68, 0x00, 0x00, 0x00,
    0x08, 0x69, 0x66, 0x2d, 0x72, 0x61, 0x6e, 0x67, 0x65, 0x00, 0x00, 0x00, 0x13, 0x69, 0x66, 0x2d,
    0x75, 0x6e, 0x6d, 0x6f, 0x64, 0x69, 0x66, 0x69, 0x65, 0x64, 0x2d, 0x73, 0x69, 0x6e, 0x63, 0x65,
    0x00, 0x00, 0x00, 0x0d, 0x6c, 0x61, 0x73, 0x74, 0x2d, 0x6d, 0x6f, 0x64, 0x69, 0x66, 0x69, 0x65,
    0x64, 0x00, 0x00, 0x00, 0x08, 0x6c, 0x6f, 0x63, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x00, 0x00, 0x00,
    0x0c, 0x6d, 0x61, 0x78, 0x2d, 0x66, 0x6f, 0x72, 0x77, 0x61, 0x72, 0x64, 0x73, 0x00, 0x00, 0x00,
    0x06, 0x70, 0x72, 0x61, 0x67, 0x6d, 0x61, 0x00, 0x00, 0x00, 0x12, 0x70, 0x72, 0x6f, 0x78, 0x79,
    0x2d, 0x61, 0x75, 0x74, 0x68, 0x65, 0x6e, 0x74, 0x69, 0x63, 0x61, 0x74, 0x65, 0x00, 0x00, 0x00,
    0x13, 0x70, 0x72, 0x6f, 0x78, 0x79, 0x2d, 0x61, 0x75, 0x74, 0x68, 0x6f, 0x72, 0x69, 0x7a, 0x61,
    0x74, 0x69, 0x6f, 0x6e, 0x00, 0x00, 0x00, 0x05, 0x72, 0x61, 0x6e, 0x67, 0x65, 0x00, 0x00, 0x00,
    0x07, 0x72, 0x65, 0x66, 0x65, 0x72, 0x65, 0x72, 0x00, 0x00, 0x00, 0x0b, 0x72, 0x65, 0x74, 0x72,
    0x79, 0x2d, 0x61, 0x66, 0x74, 0x65, 0x72, 0x00, 0x00, 0x00, 0x06, 0x73, 0x65, 0x72, 0x76, 0x65,
    0x72, 0x00, 0x00, 0x00, 0x02, 0x74, 0x65, 0x00, 0x00, 0x00, 0x07, 0x74, 0x72, 0x61, 0x69, 0x6c,
    0x65, 0x72, 0x00, 0x00, 0x00, 0x11, 0x74, 0x72, 0x61, 0x6e, 0x73, 0x66, 0x65, 0x72, 0x2d, 0x65,
    0x6e, 0x63, 0x6f, 0x64, 0x69, 0x6e, 0x67, 0x00, 0x00, 0x00, 0x07, 0x75, 0x70, 0x67, 0x72, 0x61,
    0x64, 0x65, 0x00, 0x00, 0x00, 0x0a, 0x75, 0x73, 0x65, 0x72, 0x2d, 0x61, 0x67, 0x65, 0x6e, 0x74,
    0x00, 0x00, 0x00, 0x04, 0x76, 0x61, 0x72, 0x79, 0x00, 0x00, 0x00, 0x03, 0x76, 0x69, 0x61, 0x00,
    0x00, 0x00, 0x07, 0x77, 0x61, 0x72, 0x6e, 0x69, 0x6e, 0x67, 0x00, 0x00, 0x00, 0x10, 0x77, 0x77,
    0x77, 0x2d, 0x61, 0x75, 0x74, 0x68, 0x65, 0x6e, 0x74, 0x69, 0x63, 0x61, 0x74, 0x65, 0x00, 0x00,
    0x00, 0x06, 0x6d, 0x65, 0x74, 0x68, 0x6f, 0x64, 0x00, 0x00, 0x00, 0x03, 0x67, 0x65, 0x74, 0x00,
    0x00, 0x00, 0x06, 0x73, 0x74, 0x61, 0x74, 0x75, 0x73, 0x00, 0x00, 0x00, 0x06, 0x32, 0x30, 0x30,
    0x20, 0x4f, 0x4b, 0x00, 0x00, 0x00, 0x07, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x00, 0x00,
    0x00, 0x08, 0x48, 0x54, 0x54, 0x50, 0x2f, 0x31, 0x2e, 0x31, 0x00, 0x00, 0x00, 0x03, 0x75, 0x72,
    0x6c, 0x00, 0x00, 0x00, 0x06, 0x70, 0x75, 0x62, 0x6c, 0x69, 0x63, 0x00, 0x00, 0x00, 0x0a, 0x73,
    0x65, 0x74, 0x2d, 0x63, 0x6f, 0x6f, 0x6b, 0x69, 0x65, 0x00, 0x00, 0x00, 0x0a, 0x6b, 0x65, 0x65,
    0x70, 0x2d, 0x61, 0x6c, 0x69, 0x76, 0x65, 0x00, 0x00, 0x00, 0x06, 0x6f, 0x72, 0x69, 0x67, 0x69,
    0x6e, 0x31, 0x30, 0x30, 0x31, 0x30, 0x31, 0x32, 0x30, 0x31, 0x32, 0x30, 0x32, 0x32, 0x30, 0x35,
    0x32, 0x30, 0x36, 0x33, 0x30, 0x30, 0x33, 0x30, 0x32, 0x33, 0x30, 0x33, 0x33, 0x30, 0x34, 0x33,
    0x30, 0x35, 0x33, 0x30, 0x36, 0x33, 0x30, 0x37, 0x34, 0x30, 0x32, 0x34, 0x30, 0x35, 0x34, 0x30,
    0x36, 0x34, 0x30, 0x37, 0x34, 0x30, 0x38, 0x34, 0x30, 0x39, 0x34, 0x31, 0x30, 0x34, 0x31, 0x31,
    0x34, 0x31, 0x32, 0x34, 0x31, 0x33, 0x34, 0x31, 0x34, 0x34, 0x31, 0x35, 0x34, 0x31, 0x36, 0x34,
    0x31, 0x37, 0x35, 0x30, 0x32, 0x35, 0x30, 0x34, 0x35, 0x30, 0x35, 0x32, 0x30, 0x33, 0x20, 0x4e,
    0x6f, 0x6e, 0x2d, 0x41, 0x75, 0x74, 0x68, 0x6f, 0x72, 0x69, 0x74, 0x61, 0x74, 0x69, 0x76, 0x65,
    0x20, 0x49, 0x6e, 0x66, 0x6f, 0x72, 0x6d, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x32, 0x30, 0x34, 0x20,
    0x4e, 0x6f, 0x20, 0x43, 0x6f, 0x6e, 0x74, 0x65, 0x6e, 0x74, 0x33, 0x30, 0x31, 0x20, 0x4d, 0x6f,
    0x76, 0x65, 0x64, 0x20, 0x50, 0x65, 0x72, 0x6d, 0x61, 0x6e, 0x65, 0x6e, 0x74, 0x6c, 0x79, 0x34,
    0x30, 0x30, 0x20, 0x42, 0x61, 0x64, 0x20, 0x52, 0x65, 0x71, 0x75, 0x65, 0x73, 0x74, 0x34, 0x30,
    0x31, 0x20, 0x55, 0x6e, 0x61, 0x75, 0x74, 0x68, 0x6f, 0x72, 0x69, 0x7a, 0x65, 0x64, 0x34, 0x30,
    0x33, 0x20, 0x46, 0x6f, 0x72, 0x62, 0x69, 0x64, 0x64, 0x65, 0x6e, 0x34, 0x30, 0x34, 0x20, 0x4e,
    0x6f, 0x74, 0x20, 0x46, 0x6f, 0x75, 0x6e, 0x64, 0x35, 0x30, 0x30, 0x20, 0x49, 0x6e, 0x74, 0x65,
    0x72, 0x6e, 0x61, 0x6c, 0x20, 0x53, 0x65, 0x72, 0x76, 0x65, 0x72, 0x20, 0x45, 0x72, 0x72, 0x6f,
    0x72, 0x35, 0x30, 0x31, 0x20, 0x4e, 0x6f, 0x74, 0x20, 0x49, 0x6d, 0x70, 0x6c, 0x65, 0x6d, 0x65,
    0x6e, 0x74, 0x65, 0x64, 0x35, 0x30, 0x33, 0x20, 0x53, 0x65, 0x72, 0x76, 0x69, 0x63, 0x65, 0x20,
    0x55, 0x6e, 0x61, 0x76, 0x61, 0x69, 0x6c, 0x61, 0x62, 0x6c, 0x65, 0x4a, 0x61, 0x6e, 0x20, 0x46,
    0x65, 0x62, 0x20, 0x4d, 0x61, 0x72, 0x20, 0x41, 0x70, 0x72, 0x20, 0x4d, 0x61, 0x79, 0x20, 0x4a,
    0x75, 0x6e, 0x20, 0x4a, 0x75, 0x6c, 0x20, 0x41, 0x75, 0x67, 0x20, 0x53, 0x65, 0x70, 0x74, 0x20,
    0x4f, 0x63, 0x74, 0x20, 0x4e, 0x6f, 0x76, 0x20, 0x44, 0x65, 0x63, 0x20, 0x30, 0x30, 0x3a, 0x30,
    0x30, 0x3a, 0x30, 0x30, 0x20, 0x4d, 0x6f, 0x6e, 0x2c, 0x20, 0x54, 0x75, 0x65, 0x2c, 0x20, 0x57,
    0x65, 0x64, 0x2c, 0x20, 0x54, 0x68, 0x75, 0x2c, 0x20, 0x46, 0x72, 0x69, 0x2c, 0x20, 0x53, 0x61,
    0x74, 0x2c, 0x20, 0x53, 0x75, 0x6e, 0x2c, 0x20, 0x47, 0x4d, 0x54, 0x63, 0x68, 0x75, 0x6e, 0x6b,
    0x65, 0x64, 0x2c, 0x74, 0x65, 0x78, 0x74, 0x2f, 0x68, 0x74, 0x6d, 0x6c, 0x2c, 0x69, 0x6d, 0x61,
    0x67, 0x65, 0x2f, 0x70, 0x6e, 0x67, 0x2c, 0x69, 0x6d, 0x61, 0x67, 0x65, 0x2f, 0x6a, 0x70, 0x67,
    0x2c, 0x69, 0x6d, 0x61, 0x67, 0x65, 0x2f, 0x67, 0x69, 0x66, 0x2c, 0x61, 0x70, 0x70, 0x6c, 0x69,
    0x63, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x2f, 0x78, 0x6d, 0x6c, 0x2c, 0x61, 0x70, 0x70, 0x6c, 0x69,
    0x63, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x2f, 0x78, 0x68, 0x74, 0x6d, 0x6c, 0x2b, 0x78, 0x6d, 0x6c,
    0x2c, 0x74, 0x65, 0x78, 0x74, 0x2f, 0x70, 0x6c, 0x61, 0x69, 0x6e, 0x2c, 0x74, 0x65, 0x78, 0x74,
    0x2f, 0x6a, 0x61, 0x76, 0x61, 0x73, 0x63, 0x72, 0x69, 0x70, 0x74, 0x2c, 0x70, 0x75, 0x62, 0x6c,
    0x69, 0x63, 0x70, 0x72, 0x69, 0x76, 0x61, 0x74, 0x65, 0x6d, 0x61, 0x78, 0x2d, 0x61, 0x67, 0x65,
    0x3d, 0x67, 0x7a, 0x69, 0x70, 0x2c, 0x64, 0x65, 0x66, 0x6c, 0x61, 0x74, 0x65, 0x2c, 0x73, 0x64,
    0x63, 0x68, 0x63, 0x68, 0x61, 0x72, 0x73, 0x65, 0x74, 0x3d, 0x75, 0x74, 0x66, 0x2d, 0x38, 0x63,
    0x68, 0x61, 0x72, 0x73, 0x65, 0x74, 0x3d, 0x69, 0x73, 0x6f, 0x2d, 0x38, 0x38, 0x35, 0x39, 0x2d,
    0x31, 0x2c, 0x75, 0x74, 0x66, 0x2d, 0x2c, 0x2a, 0x2c, 0x65, 0x6e, 0x71, 0x3d, 0x30, 0x2e,
};
_Static_assert(sizeof(dictionary) == 1423, "SPDY/3 dictionary");

static uint32_t get32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
        p[0] = v >> 24;
        p[1] = v >> 16;
        p[2] = v >> 8;
        p[3] = v;
        return p + 4;
}

static bool is_known_control(uint32_t type)
{
        switch (type) {
        case RKL_SPDY_SYN_STREAM:
        case RKL_SPDY_SYN_REPLY:
        case RKL_SPDY_RST_STREAM:
        case RKL_SPDY_SETTINGS:
        case RKL_SPDY_PING:
        case RKL_SPDY_GOAWAY:
        case RKL_SPDY_HEADERS:
        case RKL_SPDY_WINDOW_UPDATE:
                return true;
        default:
                return false;
        }
}

/* SPDY/3 defines no flags for these, and says they must be 0. */
static bool wants_no_flags(rkl_spdy_type type)
{
        return type == RKL_SPDY_RST_STREAM || type == RKL_SPDY_PING || type == RKL_SPDY_GOAWAY ||
               type == RKL_SPDY_WINDOW_UPDATE;
}

/* Why pair h may not follow the n pairs before it in a block, or NULL. SPDY/3 §2.6.10: a
 * name is not empty and lower case, names do not repeat, and a value is empty or a list of
 * non-empty values joined by single NULs. */
static const char *pair_invalid(const rkl_spdy_header *h, const rkl_spdy_header *before, size_t n)
{
        if (h->name_len == 0)
                return "an empty name";
        for (size_t i = 0; i < h->name_len; i++) {
                if (h->name[i] >= 'A' && h->name[i] <= 'Z')
                        return "an upper-case name";
                if (h->name[i] == '\0')
                        return "a NUL in a name";
        }
        if (h->value_len > 0) {
                if (h->value[0] == '\0' || h->value[h->value_len - 1] == '\0')
                        return "a value that starts or ends with NUL";
                if (memmem(h->value, h->value_len, "\0\0", 2))
                        return "an empty value in a NUL-separated list";
        }
        for (size_t i = 0; i < n; i++)
                if (before[i].name_len == h->name_len &&
                    memcmp(before[i].name, h->name, h->name_len) == 0)
                        return "a duplicate name";
        return NULL;
}

const rkl_spdy_header *rkl_spdy_frame_header(const rkl_spdy_frame *f, const char *name)
{
        size_t len = strlen(name);
        for (size_t i = 0; i < f->n_headers; i++)
                if (f->headers[i].name_len == len && memcmp(f->headers[i].name, name, len) == 0)
                        return &f->headers[i];
        return NULL;
}

/* Decoder */

struct rkl_spdy_decoder {
        rkl_spdy_limits limits;
        uint8_t *buf; /* the frame being read, header first */
        size_t len;   /* bytes of it in buf */
        size_t want;  /* its whole size once the header is in */
        size_t cap;
        size_t skip; /* bytes left of an unknown control frame */
        int failed;  /* the first error: the zlib stream is out of step after it */
        z_stream zin;
        uint8_t *block; /* the inflated header block */
        size_t block_cap;
        rkl_spdy_header *headers;
        size_t headers_cap;
        rkl_spdy_setting *settings;
        size_t settings_cap;
};

int rkl_spdy_decoder_new(const rkl_spdy_limits *limits, rkl_spdy_decoder **ret)
{
        rkl_spdy_decoder *d = rkl_xnew0(rkl_spdy_decoder, 1);
        if (limits)
                d->limits = *limits;
        /* The wire cannot say more than 24 bits; the other caps keep sizes within zlib's
         * unsigned counters. */
        if (d->limits.max_frame == 0 || d->limits.max_frame > MAX_LEN24)
                d->limits.max_frame = MAX_LEN24;
        if (d->limits.max_header_bytes == 0)
                d->limits.max_header_bytes = 64 * 1024;
        if (d->limits.max_header_bytes > MAX_HEADER_CAP)
                d->limits.max_header_bytes = MAX_HEADER_CAP;
        if (d->limits.max_headers == 0)
                d->limits.max_headers = 128;
        if (d->limits.max_headers > d->limits.max_header_bytes / 8)
                d->limits.max_headers = d->limits.max_header_bytes / 8;
        if (inflateInit(&d->zin) != Z_OK) {
                free(d);
                return -ENOMEM;
        }
        d->cap = 4096;
        d->buf = rkl_xmalloc(d->cap);
        *ret = d;
        return 0;
}

rkl_spdy_decoder *rkl_spdy_decoder_free(rkl_spdy_decoder *d)
{
        if (!d)
                return NULL;
        inflateEnd(&d->zin);
        free(d->buf);
        free(d->block);
        free(d->headers);
        free(d->settings);
        return mfree(d);
}

/* Moves bytes from buf[*taken, len) into the frame until it holds upto. */
static void fill(rkl_spdy_decoder *d, const uint8_t *buf, size_t len, size_t *taken, size_t upto)
{
        size_t n = upto - d->len < len - *taken ? upto - d->len : len - *taken;
        if (n == 0) /* buf may be NULL: no arithmetic on it */
                return;
        memcpy(d->buf + d->len, buf + *taken, n);
        d->len += n;
        *taken += n;
}

/* The 8 bytes of a frame header are in: checks them against the type and the limits.
 * Returns 1 with d->want set, 0 for an unknown control frame to skip (d->skip set). */
static int begin_frame(rkl_spdy_decoder *d, rkl_error *err)
{
        uint32_t w0 = get32(d->buf), w1 = get32(d->buf + 4);
        size_t len = w1 & MAX_LEN24;
        uint8_t flags = w1 >> 24;

        if (w0 & CONTROL_BIT) {
                uint32_t version = (w0 >> 16) & 0x7fff, type = w0 & 0xffff;
                if (version != RKL_SPDY_VERSION)
                        return rkl_error_set(err, -EPROTO, "SPDY version %" PRIu32 ", not 3",
                                             version);
                if (!is_known_control(type)) {
                        /* Skipped without buffering, so no limit applies. */
                        d->skip = len;
                        return 0;
                }
                if (len > d->limits.max_frame)
                        return rkl_error_set(err, -E2BIG,
                                             "control frame %" PRIu32 " of %zu bytes, over %zu",
                                             type, len, d->limits.max_frame);
                bool ok;
                switch (type) {
                case RKL_SPDY_SYN_STREAM:
                        ok = len >= 10;
                        break;
                case RKL_SPDY_SYN_REPLY:
                case RKL_SPDY_HEADERS:
                        ok = len >= 4;
                        break;
                case RKL_SPDY_SETTINGS:
                        ok = len >= 4 && (len - 4) % 8 == 0;
                        break;
                case RKL_SPDY_PING:
                        ok = len == 4;
                        break;
                default: /* RST_STREAM, GOAWAY, WINDOW_UPDATE */
                        ok = len == 8;
                        break;
                }
                if (!ok)
                        return rkl_error_set(err, -EPROTO,
                                             "control frame %" PRIu32 " with a length of %zu", type,
                                             len);
                if (flags != 0 && wants_no_flags(type))
                        return rkl_error_set(err, -EPROTO,
                                             "control frame %" PRIu32 " with flags 0x%02x", type,
                                             flags);
        } else {
                if (len > d->limits.max_frame)
                        return rkl_error_set(err, -E2BIG, "data frame of %zu bytes, over %zu", len,
                                             d->limits.max_frame);
                if ((w0 & ID_MASK) == 0)
                        return rkl_error_set(err, -EPROTO, "data frame on stream 0");
        }
        d->want = FRAME_HEADER + len;
        if (d->want > d->cap) {
                d->cap = d->want;
                d->buf = rkl_xrealloc(d->buf, d->cap);
        }
        return 1;
}

/* Inflates n bytes of a header block into d->block, never past max_header_bytes. */
static int inflate_block(rkl_spdy_decoder *d, const uint8_t *in, size_t n, size_t *ret_len,
                         rkl_error *err)
{
        size_t max = d->limits.max_header_bytes, used = 0;

        d->zin.next_in = (Bytef *)in;
        d->zin.avail_in = (uInt)n;
        for (;;) {
                if (used == d->block_cap) {
                        /* One byte more than the limit tells a full block from a bigger one. */
                        if (d->block_cap > max)
                                return rkl_error_set(err, -E2BIG,
                                                     "header block inflates past %zu bytes", max);
                        size_t cap = d->block_cap ? d->block_cap * 2 : 1024;
                        d->block_cap = cap > max + 1 ? max + 1 : cap;
                        d->block = rkl_xrealloc(d->block, d->block_cap);
                }
                d->zin.next_out = d->block + used;
                d->zin.avail_out = (uInt)(d->block_cap - used);
                int zr = inflate(&d->zin, Z_SYNC_FLUSH);
                used = d->block_cap - d->zin.avail_out;
                if (zr == Z_NEED_DICT) {
                        if (inflateSetDictionary(&d->zin, dictionary, sizeof(dictionary)) != Z_OK)
                                return rkl_error_set(err, -EPROTO,
                                                     "header block wants another dictionary");
                        continue;
                }
                if (zr == Z_MEM_ERROR)
                        return rkl_error_set(err, -ENOMEM, "inflating a header block: %s",
                                             strerror(ENOMEM));
                if (zr == Z_STREAM_END)
                        return rkl_error_set(err, -EPROTO, "header block ends the zlib stream");
                if (zr != Z_OK && zr != Z_BUF_ERROR)
                        return rkl_error_set(err, -EPROTO, "header block does not inflate: %s",
                                             d->zin.msg ? d->zin.msg : "zlib error");
                /* Room left after all input: everything it holds is out. */
                if (d->zin.avail_out > 0) {
                        if (d->zin.avail_in > 0)
                                return rkl_error_set(err, -EPROTO, "header block does not inflate");
                        break;
                }
        }
        *ret_len = used;
        return 0;
}

/* Parses the name/value pairs of the n inflated bytes at p into d->headers. */
static int parse_block(rkl_spdy_decoder *d, const uint8_t *p, size_t n, rkl_spdy_frame *f,
                       rkl_error *err)
{
        if (n < 4)
                return rkl_error_set(err, -EPROTO, "header block of %zu bytes", n);
        uint32_t count = get32(p);
        p += 4;
        n -= 4;
        if (count > d->limits.max_headers)
                return rkl_error_set(err, -E2BIG, "header block of %" PRIu32 " pairs, over %zu",
                                     count, d->limits.max_headers);
        if (count > n / 8)
                return rkl_error_set(err, -EPROTO, "header block of %" PRIu32 " pairs in %zu bytes",
                                     count, n);
        if (count > d->headers_cap) {
                d->headers_cap = count;
                d->headers = rkl_xrealloc(d->headers, count * sizeof(*d->headers));
        }
        for (uint32_t i = 0; i < count; i++) {
                rkl_spdy_header *h = &d->headers[i];
                uint32_t l;

                if (n < 4 || (l = get32(p)) > n - 4)
                        return rkl_error_set(err, -EPROTO,
                                             "header name %" PRIu32 " runs past the block", i);
                h->name = (const char *)p + 4;
                h->name_len = l;
                p += 4 + l;
                n -= 4 + l;
                if (n < 4 || (l = get32(p)) > n - 4)
                        return rkl_error_set(err, -EPROTO,
                                             "header value %" PRIu32 " runs past the block", i);
                h->value = (const char *)p + 4;
                h->value_len = l;
                p += 4 + l;
                n -= 4 + l;
                const char *why = pair_invalid(h, d->headers, i);
                if (why)
                        return rkl_error_set(err, -EPROTO, "header block with %s", why);
        }
        if (n > 0)
                return rkl_error_set(err, -EPROTO, "%zu bytes after the header block's pairs", n);
        f->headers = d->headers;
        f->n_headers = count;
        return 0;
}

static int decode_headers(rkl_spdy_decoder *d, const uint8_t *in, size_t n, rkl_spdy_frame *f,
                          rkl_error *err)
{
        size_t len;
        int r = inflate_block(d, in, n, &len, err);
        if (r < 0)
                return r;
        return parse_block(d, d->block, len, f, err);
}

static int decode_settings(rkl_spdy_decoder *d, const uint8_t *p, size_t n, rkl_spdy_frame *f,
                           rkl_error *err)
{
        uint32_t count = get32(p);
        if (count != (n - 4) / 8)
                return rkl_error_set(err, -EPROTO, "SETTINGS of %" PRIu32 " entries in %zu bytes",
                                     count, n);
        if (count > d->settings_cap) {
                d->settings_cap = count;
                d->settings = rkl_xrealloc(d->settings, count * sizeof(*d->settings));
        }
        for (uint32_t i = 0; i < count; i++) {
                const uint8_t *e = p + 4 + 8 * (size_t)i;
                d->settings[i] = (rkl_spdy_setting){
                    .flags = e[0],
                    .id = get32(e) & MAX_LEN24,
                    .value = get32(e + 4),
                };
        }
        f->settings = d->settings;
        f->n_settings = count;
        return 0;
}

/* The whole frame is in d->buf. */
static int decode_frame(rkl_spdy_decoder *d, rkl_spdy_frame *f, rkl_error *err)
{
        uint32_t w0 = get32(d->buf);
        const uint8_t *p = d->buf + FRAME_HEADER;
        size_t n = d->want - FRAME_HEADER;

        *f = (rkl_spdy_frame){.flags = d->buf[4]};
        if (!(w0 & CONTROL_BIT)) {
                f->type = RKL_SPDY_DATA;
                f->stream_id = w0 & ID_MASK;
                f->data = p;
                f->len = n;
                return 0;
        }
        f->type = (rkl_spdy_type)(w0 & 0xffff);
        switch (f->type) {
        case RKL_SPDY_SYN_STREAM:
                f->stream_id = get32(p) & ID_MASK;
                f->assoc_stream_id = get32(p + 4) & ID_MASK;
                f->priority = p[8] >> 5; /* p[9] is 3.0's credential slot, unused in 3.1 */
                if (f->stream_id == 0)
                        return rkl_error_set(err, -EPROTO, "SYN_STREAM on stream 0");
                return decode_headers(d, p + 10, n - 10, f, err);
        case RKL_SPDY_SYN_REPLY:
        case RKL_SPDY_HEADERS:
                f->stream_id = get32(p) & ID_MASK;
                if (f->stream_id == 0)
                        return rkl_error_set(err, -EPROTO, "%s on stream 0",
                                             f->type == RKL_SPDY_HEADERS ? "HEADERS" : "SYN_REPLY");
                return decode_headers(d, p + 4, n - 4, f, err);
        case RKL_SPDY_RST_STREAM:
                f->stream_id = get32(p) & ID_MASK;
                f->status = get32(p + 4);
                if (f->stream_id == 0)
                        return rkl_error_set(err, -EPROTO, "RST_STREAM on stream 0");
                if (f->status == 0)
                        return rkl_error_set(err, -EPROTO, "RST_STREAM with status 0");
                return 0;
        case RKL_SPDY_SETTINGS:
                return decode_settings(d, p, n, f, err);
        case RKL_SPDY_PING:
                f->ping_id = get32(p);
                return 0;
        case RKL_SPDY_GOAWAY:
                f->stream_id = get32(p) & ID_MASK;
                f->status = get32(p + 4);
                return 0;
        case RKL_SPDY_WINDOW_UPDATE:
                f->stream_id = get32(p) & ID_MASK;
                f->delta = get32(p + 4) & ID_MASK;
                if (f->delta == 0)
                        return rkl_error_set(err, -EPROTO, "WINDOW_UPDATE with a delta of 0");
                return 0;
        default: /* begin_frame() skips every other type */
                assert(!"unknown control type");
                return rkl_error_set(err, -EPROTO, "control frame %u", (unsigned)f->type);
        }
}

int rkl_spdy_decode(rkl_spdy_decoder *d, const uint8_t *buf, size_t len, size_t *consumed,
                    rkl_spdy_frame *frame, rkl_error *err)
{
        size_t taken = 0;
        int r;

        *consumed = 0;
        if (d->failed)
                return rkl_error_set(err, d->failed, "SPDY connection failed before");
        for (;;) {
                if (d->skip > 0) {
                        size_t n = d->skip < len - taken ? d->skip : len - taken;
                        d->skip -= n;
                        taken += n;
                        if (d->skip > 0)
                                break;
                }
                if (d->len < FRAME_HEADER) {
                        fill(d, buf, len, &taken, FRAME_HEADER);
                        if (d->len < FRAME_HEADER)
                                break;
                        r = begin_frame(d, err);
                        if (r < 0)
                                goto fail;
                        if (r == 0) {
                                d->len = 0;
                                continue;
                        }
                }
                fill(d, buf, len, &taken, d->want);
                if (d->len < d->want)
                        break;
                /* The next call starts a new frame; this one's bytes stay until then. */
                d->len = 0;
                *consumed = taken;
                r = decode_frame(d, frame, err);
                if (r < 0)
                        goto fail;
                return 1;
        }
        *consumed = taken;
        return 0;
fail:
        *consumed = taken;
        d->failed = r;
        return r;
}

/* Encoder */

struct rkl_spdy_encoder {
        z_stream zout;
        uint8_t *plain; /* the header block before compression */
        size_t plain_cap;
        bool failed;
};

int rkl_spdy_encoder_new(rkl_spdy_encoder **ret)
{
        rkl_spdy_encoder *e = rkl_xnew0(rkl_spdy_encoder, 1);
        if (deflateInit(&e->zout, Z_DEFAULT_COMPRESSION) != Z_OK) {
                free(e);
                return -ENOMEM;
        }
        if (deflateSetDictionary(&e->zout, dictionary, sizeof(dictionary)) != Z_OK) {
                deflateEnd(&e->zout);
                free(e);
                return -ENOMEM;
        }
        *ret = e;
        return 0;
}

rkl_spdy_encoder *rkl_spdy_encoder_free(rkl_spdy_encoder *e)
{
        if (!e)
                return NULL;
        deflateEnd(&e->zout);
        free(e->plain);
        return mfree(e);
}

static int reserve(uint8_t **buf, size_t len, size_t *cap, size_t more)
{
        if (more > SIZE_MAX - len)
                return -ENOMEM;
        if (len + more <= *cap)
                return 0;
        size_t ncap = *cap > 64 ? *cap : 64;
        while (ncap < len + more)
                ncap = ncap > SIZE_MAX / 2 ? len + more : ncap * 2;
        uint8_t *p = realloc(*buf, ncap);
        if (!p)
                return -ENOMEM;
        *buf = p;
        *cap = ncap;
        return 0;
}

static void put_control(uint8_t *p, rkl_spdy_type type, uint8_t flags, size_t len)
{
        put32(p, CONTROL_BIT | (uint32_t)RKL_SPDY_VERSION << 16 | type);
        put32(p + 4, (uint32_t)flags << 24 | (uint32_t)len);
}

/* Whether the decoder would take f: the encoder sends nothing a peer must refuse. */
static bool frame_is_valid(const rkl_spdy_frame *f)
{
        if (f->stream_id > ID_MASK || f->assoc_stream_id > ID_MASK || f->priority > 7)
                return false;
        if (wants_no_flags(f->type) && f->flags != 0)
                return false;
        switch (f->type) {
        case RKL_SPDY_DATA:
                return f->stream_id != 0 && f->len <= MAX_LEN24 && (f->data || f->len == 0);
        case RKL_SPDY_SYN_STREAM:
        case RKL_SPDY_SYN_REPLY:
        case RKL_SPDY_HEADERS:
                if (f->stream_id == 0 || (f->n_headers > 0 && !f->headers))
                        return false;
                for (size_t i = 0; i < f->n_headers; i++)
                        if (pair_invalid(&f->headers[i], f->headers, i))
                                return false;
                return true;
        case RKL_SPDY_RST_STREAM:
                return f->stream_id != 0 && f->status != 0;
        case RKL_SPDY_SETTINGS:
                if (f->n_settings > (MAX_LEN24 - 4) / 8 || (f->n_settings > 0 && !f->settings))
                        return false;
                for (size_t i = 0; i < f->n_settings; i++)
                        if (f->settings[i].id > MAX_LEN24)
                                return false;
                return true;
        case RKL_SPDY_PING:
        case RKL_SPDY_GOAWAY:
                return true;
        case RKL_SPDY_WINDOW_UPDATE:
                return f->delta != 0 && f->delta <= ID_MASK;
        default:
                return false;
        }
}

/* Lays the pairs out as SPDY/3 does, in e->plain; -EINVAL if they cannot fit a frame. */
static int plain_block(rkl_spdy_encoder *e, const rkl_spdy_frame *f, size_t *ret_len)
{
        size_t len = 4;
        for (size_t i = 0; i < f->n_headers; i++) {
                const rkl_spdy_header *h = &f->headers[i];
                if (h->name_len > MAX_LEN24 || h->value_len > MAX_LEN24)
                        return -EINVAL;
                len += 8 + h->name_len + h->value_len;
                if (len > MAX_LEN24)
                        return -EINVAL;
        }
        if (len > e->plain_cap) {
                e->plain_cap = len;
                e->plain = rkl_xrealloc(e->plain, len);
        }
        uint8_t *p = put32(e->plain, (uint32_t)f->n_headers);
        for (size_t i = 0; i < f->n_headers; i++) {
                const rkl_spdy_header *h = &f->headers[i];
                p = put32(p, (uint32_t)h->name_len);
                memcpy(p, h->name, h->name_len);
                p += h->name_len;
                p = put32(p, (uint32_t)h->value_len);
                if (h->value_len > 0)
                        memcpy(p, h->value, h->value_len);
                p += h->value_len;
        }
        *ret_len = len;
        return 0;
}

/* Compresses the header block of f after the fixed part of its payload (fixed bytes at
 * body), and writes the frame at *buf + *len. */
static int encode_headers(rkl_spdy_encoder *e, const rkl_spdy_frame *f, const uint8_t *body,
                          size_t fixed, uint8_t **buf, size_t *len, size_t *cap)
{
        size_t plain_len;
        int r = plain_block(e, f, &plain_len);
        if (r < 0)
                return r;
        /* The bound plus a sync flush's few bytes: checked before deflate() moves the
         * stream, so that a refusal leaves it in step with the peer. */
        size_t bound = deflateBound(&e->zout, plain_len) + 64;
        if (fixed + bound > MAX_LEN24)
                return -EINVAL;
        r = reserve(buf, *len, cap, FRAME_HEADER + fixed + bound);
        if (r < 0)
                return r;

        size_t start = *len, out = start + FRAME_HEADER + fixed;
        memcpy(*buf + start + FRAME_HEADER, body, fixed);
        e->zout.next_in = e->plain;
        e->zout.avail_in = (uInt)plain_len;
        do {
                if (*cap - out < 64) {
                        r = reserve(buf, out, cap, 64);
                        if (r < 0)
                                goto broken;
                }
                size_t room = *cap - out < UINT_MAX ? *cap - out : UINT_MAX;
                e->zout.next_out = *buf + out;
                e->zout.avail_out = (uInt)room;
                int zr = deflate(&e->zout, Z_SYNC_FLUSH);
                out += room - e->zout.avail_out;
                if (zr != Z_OK && zr != Z_BUF_ERROR) {
                        r = -ENOMEM;
                        goto broken;
                }
        } while (e->zout.avail_out == 0);

        size_t payload = out - start - FRAME_HEADER;
        if (payload > MAX_LEN24) {
                r = -EINVAL;
                goto broken;
        }
        put_control(*buf + start, f->type, f->flags, payload);
        *len = out;
        return 0;
broken:
        /* Compressed bytes the peer will never see: later blocks would not inflate. */
        e->failed = true;
        return r;
}

int rkl_spdy_encode(rkl_spdy_encoder *e, const rkl_spdy_frame *f, uint8_t **buf, size_t *len,
                    size_t *cap)
{
        uint8_t body[10] = {0};
        uint8_t *p;
        int r;

        if (e->failed)
                return -EIO;
        if (!frame_is_valid(f))
                return -EINVAL;
        switch (f->type) {
        case RKL_SPDY_DATA:
                r = reserve(buf, *len, cap, FRAME_HEADER + f->len);
                if (r < 0)
                        return r;
                p = put32(*buf + *len, f->stream_id);
                put32(p, (uint32_t)f->flags << 24 | (uint32_t)f->len);
                if (f->len > 0)
                        memcpy(*buf + *len + FRAME_HEADER, f->data, f->len);
                *len += FRAME_HEADER + f->len;
                return 0;
        case RKL_SPDY_SYN_STREAM:
                put32(body, f->stream_id);
                put32(body + 4, f->assoc_stream_id);
                body[8] = f->priority << 5;
                return encode_headers(e, f, body, 10, buf, len, cap);
        case RKL_SPDY_SYN_REPLY:
        case RKL_SPDY_HEADERS:
                put32(body, f->stream_id);
                return encode_headers(e, f, body, 4, buf, len, cap);
        case RKL_SPDY_SETTINGS: {
                size_t n = 4 + 8 * f->n_settings;
                r = reserve(buf, *len, cap, FRAME_HEADER + n);
                if (r < 0)
                        return r;
                put_control(*buf + *len, f->type, f->flags, n);
                p = put32(*buf + *len + FRAME_HEADER, (uint32_t)f->n_settings);
                for (size_t i = 0; i < f->n_settings; i++) {
                        p = put32(p, (uint32_t)f->settings[i].flags << 24 | f->settings[i].id);
                        p = put32(p, f->settings[i].value);
                }
                *len += FRAME_HEADER + n;
                return 0;
        }
        case RKL_SPDY_PING:
                r = reserve(buf, *len, cap, FRAME_HEADER + 4);
                if (r < 0)
                        return r;
                put_control(*buf + *len, f->type, 0, 4);
                put32(*buf + *len + FRAME_HEADER, f->ping_id);
                *len += FRAME_HEADER + 4;
                return 0;
        default: /* RST_STREAM, GOAWAY, WINDOW_UPDATE: two words */
                r = reserve(buf, *len, cap, FRAME_HEADER + 8);
                if (r < 0)
                        return r;
                put_control(*buf + *len, f->type, 0, 8);
                p = put32(*buf + *len + FRAME_HEADER, f->stream_id);
                put32(p, f->type == RKL_SPDY_WINDOW_UPDATE ? f->delta : f->status);
                *len += FRAME_HEADER + 8;
                return 0;
        }
}
