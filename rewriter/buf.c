/* rewriter/buf.c — growable byte buffers for the code, tables and headers
 * the rewriter appends to the output file. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void reserve(rw_buf *b, size_t n)
{
    if (b->len + n > b->cap)
        b->data = mt_xgrow(b->data, &b->cap, b->len + n, 1);
}

void rw_buf_put(rw_buf *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    reserve(b, n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void rw_buf_u8(rw_buf *b, uint8_t v) { rw_buf_put(b, &v, 1); }

void rw_buf_u32(rw_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    rw_buf_put(b, x, 4);
}

void rw_buf_u64(rw_buf *b, uint64_t v)
{
    rw_buf_u32(b, (uint32_t)v);
    rw_buf_u32(b, (uint32_t)(v >> 32));
}

void rw_buf_uleb(rw_buf *b, uint64_t v)
{
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        rw_buf_u8(b, byte | (v ? 0x80 : 0));
    } while (v);
}

void rw_buf_sleb(rw_buf *b, int64_t v)
{
    for (;;) {
        uint8_t byte = v & 0x7f;
        v >>= 7; /* arithmetic shift: implementation-defined but universal in our compilers */
        bool done = (v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40));
        rw_buf_u8(b, byte | (done ? 0 : 0x80));
        if (done)
            return;
    }
}

void rw_buf_align(rw_buf *b, size_t align, uint8_t fill)
{
    while (b->len % align)
        rw_buf_u8(b, fill);
}

void rw_buf_patch_u32(rw_buf *b, size_t at, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        b->data[at + k] = (uint8_t)(v >> (8 * k));
}

void rw_buf_free(rw_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}
