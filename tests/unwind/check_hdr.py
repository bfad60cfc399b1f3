#!/usr/bin/env python3
"""tests/unwind/check_hdr.py PROG.inst — checks the .eh_frame_hdr that
PT_GNU_EH_FRAME points at: version and encodings, a sorted table whose every
entry is an FDE starting at the entry's address, whose CIE pointer reaches a
CIE, whose CFA program decodes to its end, and whose LSDA (if any) has a
well-formed header and call-site table inside the FDE's range.  Prints a
summary; exits 1 on the first problem."""
import struct, sys

data = open(sys.argv[1], 'rb').read()
phoff, = struct.unpack_from('<Q', data, 0x20)
phnum, = struct.unpack_from('<H', data, 0x38)
phdrs = [struct.unpack_from('<IIQQQQQQ', data, phoff + 56 * i) for i in range(phnum)]
loads = [(p[3], p[2], p[5]) for p in phdrs if p[0] == 1]  # vaddr, offset, filesz

def at(vaddr, n):
    for v, off, size in loads:
        if v <= vaddr and vaddr + n <= v + size:
            return data[off + vaddr - v: off + vaddr - v + n]
    sys.exit('unmapped read at 0x%x' % vaddr)

def u(vaddr, n, signed=False):
    return int.from_bytes(at(vaddr, n), 'little', signed=signed)

def uleb(vaddr):
    v = shift = 0
    while True:
        b = u(vaddr, 1); vaddr += 1
        v |= (b & 0x7f) << shift; shift += 7
        if not b & 0x80:
            return v, vaddr

def sleb(vaddr):
    v, end = uleb(vaddr)
    bits = 7 * (end - vaddr)
    return (v - (1 << bits) if v >> (bits - 1) & 1 else v), end

def pointer(vaddr, enc):
    size = {0: 8, 2: 2, 3: 4, 4: 8, 0xa: 2, 0xb: 4, 0xc: 8}[enc & 0xf]
    v = u(vaddr, size, signed=bool(enc & 8))
    if enc & 0x70 == 0x10 and v:
        v += vaddr
    return v & (2 ** 64 - 1), vaddr + size

def fail(msg):
    sys.exit('FAIL: ' + msg)

def cie(addr):
    length = u(addr, 4)
    if u(addr + 4, 4) != 0:
        fail('CIE pointer of an FDE does not reach a CIE (0x%x)' % addr)
    p = addr + 9
    aug = b''
    while u(p, 1):
        aug += at(p, 1); p += 1
    p += 1
    caf, p = uleb(p); _, p = sleb(p); _, p = uleb(p)
    fde_enc, lsda_enc = 0, None
    if aug.startswith(b'z'):
        _, p = uleb(p)
        for c in aug[1:]:
            if c == ord('R'): fde_enc = u(p, 1); p += 1
            elif c == ord('L'): lsda_enc = u(p, 1); p += 1
            elif c == ord('P'): penc = u(p, 1); _, p = pointer(p + 1, penc)
    return fde_enc, lsda_enc, caf

OPERANDS = {0x05: 'uu', 0x09: 'uu', 0x0c: 'uu', 0x14: 'uu', 0x2f: 'uu', 0x11: 'us', 0x12: 'us',
            0x15: 'us', 0x06: 'u', 0x07: 'u', 0x08: 'u', 0x0d: 'u', 0x0e: 'u', 0x2e: 'u',
            0x13: 's', 0x00: '', 0x0a: '', 0x0b: '', 0x02: '1', 0x03: '2', 0x04: '4'}

def program(p, end, begin, rng):
    loc = begin
    while p < end:
        op = u(p, 1); p += 1
        if op >> 6 == 1: loc += op & 0x3f
        elif op >> 6 == 2: _, p = uleb(p)
        elif op >> 6 == 3: pass
        elif op in (0x0f, 0x10, 0x16):
            if op != 0x0f: _, p = uleb(p)
            n, p = uleb(p); p += n
        elif op in OPERANDS:
            for kind in OPERANDS[op]:
                if kind in '124':
                    loc += u(p, int(kind)); p += int(kind)
                else:
                    _, p = (uleb if kind == 'u' else sleb)(p)
        else:
            fail('unknown CFA opcode 0x%x' % op)
        if loc > begin + rng:
            fail('CFA program advances past the FDE range (0x%x > 0x%x)' % (loc, begin + rng))
    if p != end:
        fail('CFA program overruns its FDE')

def lsda(addr, begin, rng):
    p = addr
    lp_enc = u(p, 1); p += 1
    if lp_enc != 0xff: _, p = pointer(p, lp_enc)
    tt_enc = u(p, 1); p += 1
    if tt_enc != 0xff: _, p = uleb(p)
    cs_enc = u(p, 1); p += 1
    n, p = uleb(p)
    end, last = p + n, 0
    while p < end:
        vals = []
        for _ in range(3):
            if cs_enc == 1: v, p = uleb(p)
            else: v = u(p, 4); p += 4
            vals.append(v)
        _, p = uleb(p)
        if vals[0] < last or vals[0] + vals[1] > rng:
            fail('LSDA 0x%x: call site [0x%x,+0x%x) unsorted or outside the FDE' % (addr, vals[0], vals[1]))
        last = vals[0] + vals[1]
    if p != end:
        fail('LSDA 0x%x: call-site table overruns' % addr)

hdr = [p for p in phdrs if p[0] == 0x6474e550][0][3]
version, ptr_enc, cnt_enc, tab_enc = at(hdr, 4)
if (version, ptr_enc, cnt_enc, tab_enc) != (1, 0x1b, 0x03, 0x3b):
    fail('header fields %r' % ((version, ptr_enc, cnt_enc, tab_enc),))
eh_frame, _ = pointer(hdr + 4, 0x1b)
count = u(hdr + 8, 4)
prev, nlsda = -1, 0
for i in range(count):
    loc = hdr + u(hdr + 12 + 8 * i, 4, True)
    fde = hdr + u(hdr + 16 + 8 * i, 4, True)
    if loc <= prev:
        fail('table not sorted at entry %d' % i)
    prev = loc
    length = u(fde, 4)
    cie_addr = fde + 4 - u(fde + 4, 4)
    fde_enc, lsda_enc, caf = cie(cie_addr)
    begin, p = pointer(fde + 8, fde_enc)
    rng, p = pointer(p, fde_enc & 0xf)
    if begin != loc:
        fail('entry %d: table says 0x%x, FDE 0x%x begins at 0x%x' % (i, loc, fde, begin))
    if lsda_enc is not None or u(cie_addr + 9, 1) == ord('z'):
        alen, p2 = uleb(p)
        if lsda_enc is not None and alen:
            l, _ = pointer(p2, lsda_enc)
            if l:
                lsda(l, begin, rng); nlsda += 1
        p = p2 + alen
    program(p, fde + 4 + length, begin, rng)
print('ok: %d FDEs (eh_frame at 0x%x), %d LSDAs checked' % (count, eh_frame, nlsda))
