#!/usr/bin/env python3
"""Checks pass-2 timer records (dump_timers output) against an independent
oracle: callgrind run on the ORIGINAL binary with --dump-instr=yes
--collect-jumps=yes --compress-pos=no --compress-strings=no.

For every timed object, the instances it was entered (entries + recursive
entries) must equal what callgrind saw:
  procedure  executions of its entry instruction minus the executions of
             the back edges to its entry block (when that block heads a loop);
  loop       executions of its entry edges (plus the procedure's entries when
             its header is the entry block);
  region     executions of the edges into its first block (a cut point: no
             edge comes from inside the region), plus the procedure's entries
             when that is the entry block.
An edge's executions: a taken jump's count from `jump=`/`jcnd=` lines (also
per target of an indirect jump); a
conditional fall-through: the branch's executions minus its taken count;
a call's return, when nothing else leads to its block: that block's
executions (a call may throw); anything else: the executions of the
source block's last instruction.
Also: no object is left open at exit, exclusive <= inclusive, outside <=
inclusive, and a timed object nested in another timed one (a loop in a timed
procedure, loop or region; a region in a timed procedure or region) has
inclusive time <= the enclosing one's.

usage: check_timers.py check ANALYSIS_JSON DUMP_TSV CALLGRIND_OUT...
       check_timers.py objects ANALYSIS_JSON INSTRUMENT_LOG [SOURCE]
The first prints ok / not ok lines (exit status 0 unless the inputs are
unusable); the second prints every m-object worth timing as `mtool
instrument --time` arguments: each procedure the rewriter instruments
(INSTRUMENT_LOG is `mtool instrument -v` output) that is not a PLT stub, a
split part, noreturn, _init or _fini, each of its reducible loops, and when
it has region cut points, its finest regions (NAME#K: from each cut point
to the next), the region of all of it (NAME#0-) and, with four cut points
or more, a region nested between the others (NAME#1-3); with
SOURCE, only procedures with code from a file whose name ends so (static
binaries: libc's start-up takes other paths under valgrind)."""
import json
import os
import sys
from collections import defaultdict


def read_callgrind(paths, binary):
    ir = defaultdict(int)        # address -> executions
    taken = defaultdict(int)     # (src, dst) -> taken jumps
    called = defaultdict(int)    # (src, dst) -> calls (or jumps into another function)
    for path in paths:
        mine, skip_next, jump = False, False, None
        with open(path) as f:
            for line in f:
                line = line.rstrip('\n')
                if line.startswith('ob='):
                    ob = line[3:].strip()
                    mine = os.path.exists(ob) and os.path.samefile(ob, binary)
                elif line.startswith('calls='):
                    # A jump into another function (foo.cold) is shown as a
                    # call: counted as a taken jump from the next line's address.
                    count_s, target = line.split('=', 1)[1].split()[:2]
                    skip_next = (int(count_s), int(target, 16))
                elif line.startswith('jump=') or line.startswith('jcnd='):
                    count_s, target = line.split('=', 1)[1].split()[:2]
                    jump = (int(count_s.split('/')[0]), int(target, 16))
                elif line[:2] == '0x':
                    fields = line.split()
                    addr = int(fields[0], 16)
                    if jump:
                        if mine:
                            taken[(addr, jump[1])] += jump[0]
                        jump = None
                    elif skip_next:
                        if mine:
                            called[(addr, skip_next[1])] += skip_next[0]
                        skip_next = False
                    elif mine and len(fields) >= 3:
                        ir[addr] += int(fields[2])
    for k, v in called.items():
        calls_or_jumps[k] += v
    return ir, taken


calls_or_jumps = defaultdict(int)


def last_insn(block, ir):
    """Address of the block's last instruction that callgrind executed."""
    start, end = int(block['start'], 16), int(block['end'], 16)
    addrs = [a for a in ir if start <= a < end]
    return max(addrs) if addrs else None


def edge_count(proc, e, ir, taken):
    src = proc['blocks'][e['src']]
    last = last_insn(src, ir)
    if last is None:
        return 0
    target = int(e['target'], 16) if e['target'] else None
    if e['kind'] in ('cond_taken', 'jump', 'tail_call', 'indirect') and target is not None and \
            (last, target) in taken:
        return taken[(last, target)]
    if e['kind'] == 'cond_taken' and e['dst'] is None and target is not None:
        return calls_or_jumps.get((last, target), 0)  # into another function (foo.cold)
    if e['kind'] in ('cond_taken', 'indirect'):
        return 0
    if e['kind'] == 'call_return' and e['dst'] is not None and \
            sum(1 for x in proc['edges'] if x['dst'] == e['dst']) == 1:
        # A call that throws or longjmps does not return: the executions
        # of the block it returns to, when nothing else leads there.
        return ir[int(proc['blocks'][e['dst']]['start'], 16)]
    if e['kind'] == 'cond_fallthrough':
        other = [x for x in proc['edges'] if x['src'] == e['src'] and x['kind'] == 'cond_taken']
        t = sum(taken.get((last, int(x['target'], 16)), 0) +
                (calls_or_jumps.get((last, int(x['target'], 16)), 0) if x['dst'] is None else 0)
                for x in other if x['target'])
        return ir[last] - t
    return ir[last]


def objects(analysis, log, source=None):
    prog = json.load(open(analysis))
    files = prog['files']
    skipped = set()
    for line in open(log):
        if line.startswith('  not instrumented: '):
            skipped.add(line[len('  not instrumented: '):].split(': ')[0])
    names = [p['name'] for p in prog['procedures']]
    for p in prog['procedures']:
        # _init and _fini run from .init/.fini, where callgrind counts nothing.
        if p['plt'] or p['noreturn'] or p['parent'] is not None or not p['resolved'] or \
                p['name'] in ('_init', '_fini') or \
                p['name'] in skipped or names.count(p['name']) > 1 or not p['nblocks']:
            continue
        if source and not any(b['file'] and files[b['file']].endswith(source) for b in p['blocks']):
            continue
        print('--time\n%s' % p['name'])
        for k, l in enumerate(p['loops']):
            if not l['irreducible']:
                print('--time\n%s:%d' % (p['name'], k))
        cuts = p.get('region_cuts', [])
        if len(cuts) >= 2:
            for k in range(len(cuts)):
                print('--time\n%s#%d' % (p['name'], k))
            print('--time\n%s#0-' % p['name'])
        if len(cuts) >= 4:
            print('--time\n%s#1-3' % p['name'])


REGION = 1 << 63


def region_blocks(p, first, end):
    """Blocks dominated by `first` and not by `end` (None: to the returns)."""
    blocks = set()
    for b in range(len(p['blocks'])):
        v = b
        while v is not None and v != first and v != end:
            v = p['blocks'][v]['idom']
        if v == first:
            blocks.add(b)
    return blocks


def block_at(p, addr):
    return [i for i, b in enumerate(p['blocks']) if int(b['start'], 16) == addr][0]


def check(analysis, dump, cg):
    prog = json.load(open(analysis))
    binary = prog['program']['path']
    ir, taken = read_callgrind(cg, binary)
    by_entry = {int(p['entry'], 16): p for p in prog['procedures']}
    rows = []
    for line in open(dump):
        f = line.split('\t')
        rows.append({'i': int(f[0]), 'proc': int(f[1], 16), 'loop': int(f[2], 16),
                     'entries': int(f[3]), 'recursive': int(f[4]), 'incl': int(f[5]),
                     'excl': int(f[6]), 'outside': int(f[7]), 'nonlocal': int(f[8]),
                     'open': int(f[9])})
    if not rows:
        print('not ok - no timer records')
        return
    for r in rows:
        p = by_entry[r['proc']]
        name = p['name'] + (' loop@0x%x' % r['loop'] if r['loop'] else '')
        back_to_entry = 0
        entry_loops = [l for l in p['loops'] if l['header'] == 0 and not l['irreducible']]
        if entry_loops:
            back_to_entry = sum(edge_count(p, p['edges'][k], ir, taken)
                                for k in entry_loops[0]['back_edges'])
        calls = ir[r['proc']] - back_to_entry
        if r['loop'] & REGION:
            first = block_at(p, r['proc'] + (r['loop'] & 0xffffffff))
            end_off = (r['loop'] >> 32) & 0x7fffffff
            end = block_at(p, r['proc'] + end_off) if end_off else None
            name = '%s region@0x%x-%s' % (p['name'], r['proc'] + (r['loop'] & 0xffffffff),
                                          '0x%x' % (r['proc'] + end_off) if end else 'end')
            r['depth'] = 0.5
            r['blocks'] = region_blocks(p, first, end)
            want = sum(edge_count(p, e, ir, taken) for e in p['edges']
                       if e['dst'] == first and e['kind'] != 'exception')
            if first == 0:
                want += calls
        elif r['loop']:
            l = [l for l in p['loops'] if int(p['blocks'][l['header']]['start'], 16) == r['loop']][0]
            r['depth'] = l['depth']
            r['blocks'] = set(l['blocks'])
            want = sum(edge_count(p, p['edges'][k], ir, taken) for k in l['entry_edges']
                       if p['edges'][k]['kind'] != 'exception')
            if l['header'] == 0:
                want += calls
        else:
            r['depth'] = 0
            r['blocks'] = set(range(len(p['blocks'])))
            want = calls
        got = r['entries'] + r['recursive']
        r['name'] = name
        ok = got == want
        print('%s - %s: %d entries (%d outermost), callgrind %d' %
              ('ok' if ok else 'not ok', name, got, r['entries'], want))
        sane = r['open'] == 0 and r['excl'] <= r['incl'] and r['outside'] <= r['incl']
        print('%s - %s: open %d, exclusive %d <= inclusive %d, outside %d <= inclusive' %
              ('ok' if sane else 'not ok', name, r['open'], r['excl'], r['incl'], r['outside']))
    for inner in rows:
        for outer in rows:
            if inner is outer or inner['proc'] != outer['proc']:
                continue
            if not (inner['depth'] > outer['depth'] and inner['blocks'] <= outer['blocks']) and \
                    not (inner['depth'] == outer['depth'] == 0.5 and inner['blocks'] < outer['blocks']):
                continue
            ok = inner['incl'] <= outer['incl']
            print('%s - %s nested in %s: inclusive %d <= %d' %
                  ('ok' if ok else 'not ok', inner['name'], outer['name'], inner['incl'],
                   outer['incl']))


if __name__ == '__main__':
    if sys.argv[1] == 'objects':
        objects(*sys.argv[2:5])
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4:])
