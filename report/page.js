/* report/page.js — the HTML report's script (built into mtool, report/assets.c).
 * It reads the run's figures from the JSON element #mtool-data and builds the
 * page.  Everything that comes from the program (symbols, file names, source
 * text) is set with textContent, never parsed as markup. */
'use strict';
(function () {
  const data = JSON.parse(document.getElementById('mtool-data').textContent);
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const objects = data.objects;

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svgEl(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function num(v) {
    if (v === null || v === undefined || !isFinite(v)) return '\u2013';
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(2) + ' G';
    if (a >= 1e6) return (v / 1e6).toFixed(2) + ' M';
    if (a >= 1e4) return (v / 1e3).toFixed(1) + ' k';
    return String(Math.round(v * 100) / 100);
  }
  /* A figure the run does not have is null (a page built from the history
   * alone: report/stored.c). */
  const known = v => v !== null && v !== undefined && isFinite(v);
  function pct(a, b) {
    return known(a) && b ? (a / b * 100).toFixed(1) + '%' : '\u2013';
  }
  function signedPct(a, b) {
    return known(a) && b ? (a >= 0 ? '+' : '') + (a / b * 100).toFixed(0) + '%' : '\u2013';
  }
  function fixed(v, digits) {
    return known(v) ? v.toFixed(digits) : '\u2013';
  }

  /* ---- overview: MTOOL's figure 2 ---- */
  function barChart(rows, width) {
    const labelW = 90, h = 22;
    const max = Math.max(1, ...rows.map(r => r.parts.reduce((s, p) => s + Math.max(p.v, 0), 0)));
    const scale = (width - labelW - 120) / max;
    const svg = svgEl('svg', {width: width, height: rows.length * h + 4, role: 'img'});
    rows.forEach((r, i) => {
      const y = i * h + 2;
      svg.appendChild(svgEl('text', {x: 0, y: y + 14}, r.label));
      let x = labelW;
      for (const p of r.parts) {
        const w = Math.max(p.v, 0) * scale;
        svg.appendChild(svgEl('rect', {x: x, y: y, width: w, height: h - 6, class: p.cls}));
        x += w;
      }
      svg.appendChild(svgEl('text', {x: x + 4, y: y + 14}, num(r.total) + ' cycles'));
    });
    return svg;
  }

  function renderOverview() {
    document.getElementById('binary').textContent =
      data.argv.join(' ') + '  (mtool ' + data.version + ')';
    if (data.stored) {
      const note = document.getElementById('stored-note');
      note.textContent = 'Run ' + data.stored.run + ' (mtool ' + data.stored.tool + ') from the ' +
        'history: ' + data.stored.missing + '.';
      note.hidden = false;
    }
    const p = data.program;
    const box = document.getElementById('overview');
    box.appendChild(barChart([
      {label: 'predicted', total: p.predicted, parts: [{v: p.predicted, cls: 'pred'}]},
      {label: 'measured', total: p.measured, parts: [{v: p.measured, cls: 'meas'}]},
      {label: 'overhead', total: p.overhead, parts: [{v: p.overhead, cls: 'over'}]},
    ], 900));
    const dl = el('dl', {class: 'figures'});
    function row(k, v, cls) {
      dl.appendChild(el('dt', {}, k));
      dl.appendChild(el('dd', cls ? {class: cls} : {}, v));
    }
    row('predicted (every access an L1 hit)', num(p.predicted) + ' cycles');
    row('measured', num(p.measured) + ' cycles');
    row('overhead', num(p.overhead) + ' cycles (' + signedPct(p.overhead, p.predicted) +
        ' of predicted)');
    row('memory operations in timed objects', pct(p.memops_in_objects, p.memops) + ' of ' +
        num(p.memops));
    row('overhead in timed objects', num(p.objects_overhead) + ' cycles');
    row('unexplained overhead', num(p.unexplained) + ' cycles (' +
        pct(p.unexplained, p.overhead) + ' of the overhead)');
    const c = data.check;
    if (c.kernels) {
      const bad = c.median > 10 || Math.abs(c.worst) > 10;
      row('cost model\u2019s checked error', 'median ' + c.median.toFixed(1) + '%, worst ' +
          (c.worst >= 0 ? '+' : '') + c.worst.toFixed(1) + '% (' + c.worst_kernel + ') over ' +
          c.kernels + ' kernels', bad ? 'warn' : '');
    } else {
      row('cost model\u2019s checked error', 'not checked (' + c.profile + ')', 'warn');
    }
    if (c.fallbacks > 0)
      row('calibration figures that fell back', c.fallbacks + ' of ' + c.figures +
          ' (no quiet samples confirmed them: report.txt names them)', 'warn');
    box.appendChild(dl);
  }

  /* ---- m-objects: histogram and table ---- */
  /* Without cycles (a counted or simulated run from the history) a bar is
   * the object's memory operations or last-level misses. */
  const timed = objects.some(o => known(o.measured));
  const untimedFigure = objects.some(o => known(o.ll_misses)) ? 'll_misses' : 'memops';
  const untimedName = untimedFigure === 'll_misses' ? 'last-level misses (simulated)'
                                                    : 'memory operations';
  function bar(o) {
    if (!timed) {
      const v = known(o[untimedFigure]) ? o[untimedFigure] : 0;
      return {first: v, over: 0, length: v, key: v, title: num(v) + ' ' + untimedName, text: num(v)};
    }
    const over = Math.max(o.overhead, 0);
    return {first: o.predicted, over: over, length: Math.max(o.measured, o.predicted), key: o.measured,
            title: num(o.overhead) + ' cycles overhead', text: signedPct(o.overhead, o.predicted)};
  }

  function renderHistogram() {
    if (!timed)
      document.querySelector('.legend').textContent = 'bars: ' + untimedName +
        ' (this run has no cycles)';
    const order = objects.map((o, i) => i)
      .sort((a, b) => bar(objects[b]).key - bar(objects[a]).key).slice(0, 40);
    const labelW = 300, h = 20, width = 1000;
    const max = Math.max(1, ...order.map(i => bar(objects[i]).length));
    const scale = (width - labelW - 90) / max;
    const svg = document.getElementById('histogram');
    svg.setAttribute('width', width);
    svg.setAttribute('height', order.length * h + 4);
    order.forEach((i, k) => {
      const o = objects[i], y = k * h + 2, b = bar(o);
      const g = svgEl('g', {class: 'bar', 'data-index': i});
      const label = o.spec.length > 44 ? o.spec.slice(0, 43) + '\u2026' : o.spec;
      g.appendChild(svgEl('title', {}, o.spec + ': ' + b.title));
      g.appendChild(svgEl('text', {x: 0, y: y + 13}, label));
      const wp = b.first * scale, wo = b.over * scale;
      g.appendChild(svgEl('rect', {x: labelW, y: y, width: wp, height: h - 5,
                                   class: timed ? 'pred' : 'meas'}));
      g.appendChild(svgEl('rect', {x: labelW + wp, y: y, width: wo, height: h - 5, class: 'over'}));
      g.appendChild(svgEl('text', {x: labelW + wp + wo + 4, y: y + 13}, b.text));
      g.addEventListener('click', () => openObject(i));
      svg.appendChild(g);
    });
  }

  /* A column's text is what the table shows; its csv, what the CSV export
   * has: the figure itself (core cycles, counts, percentages unrounded). */
  const columns = [
    {key: 'spec', label: 'object', text: o => o.spec},
    {key: 'kind', label: 'kind', text: o => o.kind},
    {key: 'predicted', label: 'predicted', text: o => num(o.predicted)},
    {key: 'measured', label: 'measured', text: o => num(o.measured)},
    {key: 'overhead', label: 'overhead', text: o => num(o.overhead)},
    {key: 'overhead_pct', label: 'overhead %', text: o => signedPct(o.overhead, o.predicted),
     value: o => o.predicted ? o.overhead / o.predicted : 0,
     csv: o => o.predicted ? o.overhead / o.predicted * 100 : ''},
    {key: 'memops', label: 'memory ops', text: o => num(o.memops)},
    {key: 'extra', label: 'extra cycles / mem op', text: o => fixed(o.extra, 2)},
    {key: 'share', label: 'share of overhead', text: o => pct(o.overhead, data.program.overhead),
     value: o => o.overhead,
     csv: o => known(o.overhead) && data.program.overhead ? o.overhead / data.program.overhead * 100
                                                          : ''},
    {key: 'll_misses', label: 'LL misses', text: o => num(o.ll_misses),
     shown: () => objects.some(o => known(o.ll_misses))},
    {key: 'page_walks', label: 'page walks', text: o => num(o.page_walks),
     shown: () => objects.some(o => known(o.page_walks))},
    {key: 'itlb_misses', label: 'ITLB misses', text: o => num(o.itlb_misses),
     shown: () => objects.some(o => known(o.itlb_misses))},
  ].filter(c => !c.shown || c.shown());
  let sortKey = 'overhead', sortDescending = true, tableOrder = [];

  /* ---- CSV export: made here, saved through a Blob (works from file://) ---- */
  /* One field as `mtool history export --csv` writes it (store/export.c):
   * control characters as \xHH (a CSV shown on a terminal must not drive
   * it), a text a spreadsheet would take for a formula (=, +, -, @ first,
   * not a number) after a ', quoted per RFC 4180 when it holds a comma or a
   * quote, quotes doubled. */
  function csvField(v) {
    if (v === null || v === undefined || (typeof v === 'number' && !isFinite(v))) return '';
    let t = String(v).replace(/[\x00-\x1f\x7f]/g,
      c => '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0'));
    if (/^[=+\-@]/.test(t) && (typeof v !== 'number' && isNaN(Number(t)))) t = "'" + t;
    return /[,"]/.test(t) ? '"' + t.replace(/"/g, '""') + '"' : t;
  }
  function csvText(header, rows) {
    return [header, ...rows].map(r => r.map(csvField).join(',') + '\n').join('');
  }
  function download(name, text) {
    const a = el('a', {download: name});
    a.href = URL.createObjectURL(new Blob([text], {type: 'text/csv'}));
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }
  function objectsCsv() {
    return csvText(columns.map(c => c.key),
                   tableOrder.map(i => columns.map(c => (c.csv || (o => o[c.key]))(objects[i]))));
  }

  /* Texts by locale, numbers by value, a figure the run lacks (null) below every number. */
  function compareValues(x, y) {
    if (typeof x === 'string' || typeof y === 'string') return String(x).localeCompare(String(y));
    const kx = known(x), ky = known(y);
    return kx && ky ? x - y : kx ? 1 : ky ? -1 : 0;
  }

  function renderTable() {
    const table = document.getElementById('objects-table');
    const headRow = el('tr');
    for (const c of columns) {
      const th = el('th', {'data-key': c.key, scope: 'col'}, c.label);
      th.addEventListener('click', () => {
        sortDescending = sortKey === c.key ? !sortDescending : c.key !== 'spec' && c.key !== 'kind';
        sortKey = c.key;
        fillTable();
      });
      headRow.appendChild(th);
    }
    table.appendChild(el('thead')).appendChild(headRow);
    table.appendChild(el('tbody'));
    fillTable();
    document.getElementById('objects-csv').addEventListener('click',
      () => download('mtool-objects.csv', objectsCsv()));
  }

  /* The header a table is sorted by shows its direction (page.css's arrows). */
  function markSorted(table, key, descending) {
    for (const th of table.querySelectorAll('th')) {
      if (th.dataset.key === key)
        th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
      else
        th.removeAttribute('aria-sort');
    }
  }

  function fillTable() {
    const table = document.getElementById('objects-table');
    const col = columns.find(c => c.key === sortKey);
    const value = col.value || (o => o[col.key]);
    const order = objects.map((o, i) => i).sort((a, b) => {
      const cmp = compareValues(value(objects[a]), value(objects[b]));
      return sortDescending ? -cmp : cmp;
    });
    markSorted(table, sortKey, sortDescending);
    const tbody = table.querySelector('tbody');
    tbody.textContent = '';
    tableOrder = order;
    for (const i of order) {
      const tr = el('tr', {'data-index': i});
      for (const c of columns) tr.appendChild(el('td', {}, c.text(objects[i])));
      tr.addEventListener('click', () => openObject(i));
      tbody.appendChild(tr);
    }
  }

  /* ---- source view ---- */
  const perFile = data.files.map(() => new Map());
  for (const [file, line, executions, memops, predicted, overhead, object] of data.lines) {
    const m = perFile[file];
    const agg = m.get(line) || {executions: 0, memops: 0, predicted: 0, overhead: 0, object: -1};
    agg.executions = Math.max(agg.executions, executions);
    agg.memops += memops;
    agg.predicted += predicted;
    agg.overhead += overhead;
    if (agg.object < 0) agg.object = object;
    m.set(line, agg);
  }
  /* The bottleneck lines (and instructions, below), largest overhead first
   * (executed memory operations break ties, and rank them when no object
   * has overhead). */
  const bottlenecks = [];
  perFile.forEach((m, file) => m.forEach((a, line) => {
    if (a.overhead > 0 || a.memops > 0) bottlenecks.push({file, line, a});
  }));
  let shownFile = -1, position = -1;

  function figureCell(v, max, cls) {
    const span = el('span', {class: 'fig'}, v ? num(v) : '');
    if (v > 0 && max > 0)
      span.style.background = 'rgba(' + cls + ',' + (0.15 + 0.6 * v / max).toFixed(3) + ')';
    return span;
  }

  function showFile(f) {
    if (f === shownFile) return;
    shownFile = f;
    shownDisasm = -1;
    const file = data.files[f], m = perFile[f];
    document.getElementById('file-select').value = String(f);
    const code = document.getElementById('code');
    code.textContent = '';
    const head = el('div', {class: 'line head'});
    for (const t of ['line', 'executed', 'memory ops', 'overhead', ''])
      head.appendChild(el('span', {class: 'fig'}, t));
    code.appendChild(head);
    let maxOver = 0, maxMem = 0;
    m.forEach(a => { maxOver = Math.max(maxOver, a.overhead); maxMem = Math.max(maxMem, a.memops); });
    let text = file.text;
    if (!text) {
      code.appendChild(el('div', {class: 'note'}, 'source not embedded: ' + file.missing +
                          '; the figures of its lines alone'));
      text = [];
      m.forEach((a, line) => { text[line - 1] = ''; });
    }
    for (let n = 1; n <= text.length; n++) {
      if (text[n - 1] === undefined) continue;
      const a = m.get(n);
      const row = el('div', {class: 'line', 'data-line': n, 'data-overhead': a ? a.overhead : 0,
                             id: 'L' + f + '-' + n});
      row.appendChild(el('span', {class: 'num'}, String(n)));
      row.appendChild(figureCell(a ? a.executions : 0, 0, ''));
      row.appendChild(figureCell(a ? a.memops : 0, maxMem, '74,123,208'));
      row.appendChild(figureCell(a ? a.overhead : 0, maxOver, '217,83,79'));
      const src = el('span', {class: 'src'}, text[n - 1]);
      if (a && a.overhead > 0 && maxOver > 0)
        src.style.background = 'rgba(217,83,79,' + (0.35 * a.overhead / maxOver).toFixed(3) + ')';
      row.appendChild(src);
      if (a && a.object >= 0) row.addEventListener('click', () => showInfo(a.object));
      code.appendChild(row);
    }
  }

  function highlight(f, line) {
    showFile(f);
    const code = document.getElementById('code');
    for (const h of code.querySelectorAll('.line.hot')) h.classList.remove('hot');
    const row = document.getElementById('L' + f + '-' + line);
    if (row) {
      row.classList.add('hot');
      row.scrollIntoView({block: 'center'});
    }
  }

  /* A procedure without source lines: its instructions, each with its
   * block's executions, its memory operations (marked R, W) and their
   * overhead, shaded as source lines are. */
  const disasm = data.disasm.map(d => d.insns.map(
    ([address, text, executions, reads, writes, memops, overhead, object]) =>
      ({address, text, executions, reads, writes, memops, overhead, object})));
  for (const [k, rows] of disasm.entries())
    rows.forEach((a, index) => {
      if (a.overhead > 0 || a.memops > 0) bottlenecks.push({disasm: k, index, a});
    });
  bottlenecks.sort((x, y) => y.a.overhead - x.a.overhead || y.a.memops - x.a.memops);
  let shownDisasm = -1;

  function showDisasm(k) {
    if (k === shownDisasm) return;
    shownDisasm = k;
    shownFile = -1;
    document.getElementById('file-select').value = 'd' + k;
    const code = document.getElementById('code'), rows = disasm[k];
    code.textContent = '';
    const head = el('div', {class: 'line insn head'});
    for (const t of ['address', 'executed', 'memory ops', 'overhead'])
      head.appendChild(el('span', {class: 'fig'}, t));
    head.appendChild(el('span', {class: 'src'}, 'instruction'));
    code.appendChild(head);
    code.appendChild(el('div', {class: 'note'}, 'no source lines for ' + data.disasm[k].procedure +
                        ' (no DWARF): its disassembly'));
    const maxOver = Math.max(0, ...rows.map(a => a.overhead));
    const maxMem = Math.max(0, ...rows.map(a => a.memops));
    rows.forEach((a, j) => {
      const row = el('div', {class: 'line insn', id: 'D' + k + '-' + j, 'data-address': a.address,
                             'data-executions': a.executions, 'data-reads': a.reads,
                             'data-writes': a.writes, 'data-overhead': a.overhead});
      row.appendChild(el('span', {class: 'num'}, a.address));
      row.appendChild(figureCell(a.executions, 0, ''));
      row.appendChild(figureCell(a.memops, maxMem, '74,123,208'));
      row.appendChild(figureCell(a.overhead, maxOver, '217,83,79'));
      const mark = (a.reads ? 'R' : ' ') + (a.writes ? 'W' : ' ');
      const src = el('span', {class: 'src'});
      src.appendChild(el('b', {class: 'mark'}, mark + ' '));
      src.appendChild(el('span', {class: 'text'}, a.text));
      if (a.overhead > 0 && maxOver > 0)
        src.style.background = 'rgba(217,83,79,' + (0.35 * a.overhead / maxOver).toFixed(3) + ')';
      row.appendChild(src);
      if (a.object >= 0) row.addEventListener('click', () => showInfo(a.object));
      code.appendChild(row);
    });
  }

  function highlightInsn(k, j) {
    showDisasm(k);
    const code = document.getElementById('code');
    for (const h of code.querySelectorAll('.line.hot')) h.classList.remove('hot');
    const row = document.getElementById('D' + k + '-' + j);
    row.classList.add('hot');
    row.scrollIntoView({block: 'center'});
  }

  /* Whether object j is i or nested in it (the tree of measured time). */
  function within(j, i) {
    for (let n = j; n >= 0; n = objects[n].parent) if (n === i) return true;
    return false;
  }

  /* Object i's instruction with the most overhead (its nested objects' too). */
  function hotInsn(i) {
    let best = -1;
    disasm[objects[i].disasm].forEach((a, j) => {
      if (a.object >= 0 && within(a.object, i) &&
          (best < 0 || a.overhead > disasm[objects[i].disasm][best].overhead)) best = j;
    });
    return best;
  }

  function showInfo(i) {
    const o = objects[i], info = document.getElementById('info');
    info.textContent = '';
    info.appendChild(el('h3', {}, o.spec));
    const dl = el('dl');
    function row(k, v) {
      dl.appendChild(el('dt', {}, k));
      dl.appendChild(el('dd', {}, v));
    }
    row('kind', o.kind + ' of ' + o.procedure);
    row('at', o.address + (o.file >= 0 ? ', lines ' + o.first + '\u2013' + o.last : ''));
    row('predicted', num(o.predicted) + ' cycles');
    row('measured', num(o.measured) + ' cycles');
    row('overhead', num(o.overhead) + ' (' + signedPct(o.overhead, o.predicted) + ')');
    row('memory ops', num(o.memops));
    if (known(o.memops_own)) {
      row('\u2003in its loops', num(o.memops_in_loops) + ' (' + o.loops + ' loops)');
      row('\u2003outside loops', num(o.memops_own - o.memops_in_loops));
      row('\u2003in its calls', num(o.memops - o.memops_own) + ' (' + o.calls + ' call sites ran)');
    }
    if (known(o.ll_misses)) row('last-level misses (simulated)', num(o.ll_misses));
    if (known(o.page_walks))
      row('data TLB misses (simulated)', ['tlb1_misses', 'tlb2_misses'].filter(k => known(o[k]))
        .map((k, i) => 'TLB' + (i + 1) + ' ' + num(o[k])).join(', ') + '; page walks ' +
        num(o.page_walks) + (known(o.walk_cycles) ? ' (' + num(o.walk_cycles) + ' cycles)' : ''));
    if (known(o.itlb_misses)) row('ITLB misses (simulated)', num(o.itlb_misses));
    row('extra cycles / mem op', fixed(o.extra, 2));
    info.appendChild(dl);
    if (o.library)
      info.appendChild(el('p', {}, 'In the shared library ' + o.library + ': the page shows ' +
                          'no source or disassembly of libraries, only the executable\u2019s.'));
    info.appendChild(el('p', {}, 'Estimable: pass 2 times only objects whose callees\u2019 work ' +
                        'is predicted on their behalf (report.json has the notes of each).'));
    if (!o.outermost)
      info.appendChild(el('p', {}, 'Nested in another timed object: its time is part of that ' +
                          'object\u2019s too.'));
    if (o.overhead < -0.1 * o.predicted)
      info.appendChild(el('p', {class: 'warn'}, 'Measured more than 10% below its prediction: ' +
                          'the cost model\u2019s error, not memory\u2019s; its lines get no overhead.'));
  }

  function openObject(i) {
    const o = objects[i];
    showInfo(i);
    if (o.file >= 0 && o.hot) highlight(o.file, o.hot);
    else if (o.disasm >= 0 && hotInsn(i) >= 0) highlightInsn(o.disasm, hotInsn(i));
    else if (o.disasm >= 0) showDisasm(o.disasm);
    document.getElementById('source').scrollIntoView();
  }

  function step(delta) {
    if (!bottlenecks.length) return;
    position = Math.min(Math.max(position + delta, 0), bottlenecks.length - 1);
    const b = bottlenecks[position];
    if (b.disasm !== undefined) highlightInsn(b.disasm, b.index);
    else highlight(b.file, b.line);
    if (b.a.object >= 0) showInfo(b.a.object);
    const where = b.disasm !== undefined
      ? data.disasm[b.disasm].procedure + ' at ' + b.a.address
      : data.files[b.file].name + ':' + b.line;
    document.getElementById('position').textContent = 'bottleneck ' + (position + 1) + ' of ' +
      bottlenecks.length + ': ' + where + ', ' + num(b.a.overhead) + ' cycles overhead, ' +
      num(b.a.memops) + ' memory ops';
  }

  function renderSource() {
    const select = document.getElementById('file-select');
    data.files.forEach((f, i) => select.appendChild(el('option', {value: i}, f.name)));
    data.disasm.forEach((d, k) => select.appendChild(el('option', {value: 'd' + k},
                                                        d.procedure + ' (disassembly)')));
    select.addEventListener('change', () => select.value[0] === 'd'
      ? showDisasm(Number(select.value.slice(1))) : showFile(Number(select.value)));
    document.getElementById('prev').addEventListener('click', () => step(-1));
    document.getElementById('next').addEventListener('click', () => step(1));
    if (objects.length) {
      showInfo(0);
      if (objects[0].file >= 0) showFile(objects[0].file);
      else if (objects[0].disasm >= 0) showDisasm(objects[0].disasm);
    } else if (data.files.length) {
      showFile(0);
    }
  }


  /* ---- the call tree of measured time (flame graph) ---- */
  /* The program at the root, each timed object under its parent (report/data.c:
   * the object holding it most tightly); a frame's width is its measured
   * time, its children share it (drawn narrower when they measured more than
   * it: a callee also called from elsewhere), its colour its overhead. */
  function flameTree() {
    const p = data.program;
    const root = {index: -1, name: 'program', kind: 'program', measured: p.measured,
                  predicted: p.predicted, overhead: p.overhead, children: []};
    const nodes = objects.map((o, i) => ({index: i, name: o.spec, kind: o.kind,
      measured: o.measured, predicted: o.predicted, overhead: o.overhead, children: []}));
    nodes.forEach((n, i) => (objects[i].parent >= 0 ? nodes[objects[i].parent] : root)
      .children.push(n));
    return root;
  }

  function overheadColour(n) {
    const share = n.measured > 0 ? n.overhead / n.measured : 0;
    if (share < -0.1) return 'hsl(210,30%,78%)'; /* over-predicted: the model's error */
    const s = Math.min(Math.max(share, 0), 1);
    return 'hsl(' + (48 - 48 * s).toFixed(0) + ',85%,' + (72 - 20 * s).toFixed(0) + '%)';
  }

  function renderFlame() {
    const root = flameTree(), svg = document.getElementById('flame');
    if (data.stored) { /* the history keeps no nesting of objects */
      svg.hidden = true;
      document.getElementById('flame-info').textContent = 'No call tree: the objects\u2019 ' +
        'nesting is in the run directory, not in the history.';
      return;
    }
    const width = 1000, h = 18, frames = [];
    (function place(n, x, w, depth, drawnShare) {
      frames.push({n, x, w, depth, drawnShare});
      const total = n.children.reduce((s, c) => s + Math.max(c.measured, 0), 0);
      const scale = w / Math.max(n.measured, total, 1);
      let cx = x;
      for (const c of n.children.slice().sort((a, b) => b.measured - a.measured)) {
        const cw = Math.max(c.measured, 0) * scale;
        place(c, cx, cw, depth + 1, c.measured > 0 ? cw / (c.measured * width / root.measured) : 1);
        cx += cw;
      }
    })(root, 0, width, 0, 1);
    const depth = Math.max(...frames.map(f => f.depth));
    svg.setAttribute('width', width);
    svg.setAttribute('height', (depth + 1) * h + 2);
    for (const f of frames) {
      if (f.w < 0.5) continue;
      const y = (depth - f.depth) * h + 1;
      const g = svgEl('g', {class: 'frame', 'data-index': f.n.index});
      g.appendChild(svgEl('title', {}, f.n.name + ': ' + num(f.n.measured) + ' cycles measured, ' +
                          signedPct(f.n.overhead, f.n.predicted) + ' overhead'));
      g.appendChild(svgEl('rect', {x: f.x, y: y, width: Math.max(f.w - 1, 0.5), height: h - 2,
                                   fill: overheadColour(f.n)}));
      if (f.w > 40) {
        const chars = Math.floor((f.w - 6) / 6.5);
        const label = f.n.name.length > chars ? f.n.name.slice(0, chars - 1) + '\u2026' : f.n.name;
        g.appendChild(svgEl('text', {x: f.x + 3, y: y + 12}, label));
      }
      g.addEventListener('click', () => showFrame(f, g));
      svg.appendChild(g);
    }
  }

  function showFrame(f, g) {
    for (const s of document.querySelectorAll('#flame g.selected')) s.classList.remove('selected');
    g.classList.add('selected');
    const n = f.n, info = document.getElementById('flame-info');
    info.textContent = '';
    info.appendChild(el('h3', {}, n.name));
    const dl = el('dl', {class: 'figures'});
    function row(k, v) {
      dl.appendChild(el('dt', {}, k));
      dl.appendChild(el('dd', {}, v));
    }
    row('kind', n.index >= 0 ? n.kind + ' of ' + objects[n.index].procedure : 'the whole program');
    row('measured', num(n.measured) + ' cycles (' + pct(n.measured, data.program.measured) +
        ' of the program\u2019s)');
    row('predicted', num(n.predicted) + ' cycles');
    row('overhead', num(n.overhead) + ' cycles (' + signedPct(n.overhead, n.predicted) +
        ' of predicted, ' + pct(Math.max(n.overhead, 0), n.measured) + ' of measured)');
    const inChildren = n.children.reduce((s, c) => s + c.measured, 0);
    row('in timed objects above it', num(inChildren) + ' cycles in ' + n.children.length +
        ' objects' + (inChildren > n.measured ? ', more than it measured: narrowed to fit'
                                              : '; the rest is its own code\u2019s'));
    if (n.index >= 0) row('entries (pass 1)', num(objects[n.index].entries));
    info.appendChild(dl);
    if (f.drawnShare < 0.995)
      info.appendChild(el('p', {class: 'warn'}, 'Drawn at ' + (f.drawnShare * 100).toFixed(0) +
        '% of its width: a frame below it holds objects that together measured more than it ' +
        '(an object entered from other places too, or the runs\u2019 noise), narrowed to fit.'));
    if (n.index >= 0) {
      const b = el('button', {}, 'open its source');
      b.addEventListener('click', () => openObject(n.index));
      info.appendChild(b);
    }
  }

  /* ---- the simulation (`mtool sim RUNDIR`'s sim.json) ---- */
  /* a sim.json this page cannot read (another version's) is left out, as none */
  const given = data.sim;
  const sim = given && given.stall && given.code_objects && given.levels ? given : null;
  const CAUSES = ['cold', 'capacity', 'conflict'];
  /* The data levels (I1 sees no reference of a traced run). */
  const simLevels = sim ? sim.levels.filter(l => l.name !== 'I1').map(l => l.name) : [];
  function levelMisses(m, level) {
    return m && m[level] ? CAUSES.reduce((s, c) => s + m[level][c], 0) : 0;
  }
  /* What a miss at each simulated level adds to an L1 hit, by the latencies
   * calibrate measured (sim/stall.c's serial stall): the next level's latency
   * less this one's, below the last level memory's. */
  function serialSteps() {
    const lat = sim.stall.latency_cycles, names = {D1: 'L1', L2: 'L2', L3: 'L3', L4: 'L4'};
    return simLevels.map((l, i) => {
      const here = lat[names[l]], next = lat[i + 1 < simLevels.length ?
        names[simLevels[i + 1]] : 'memory'];
      return here !== undefined && next !== undefined ? Math.max(next - here, 0) : 0;
    });
  }
  function serialStall(misses, steps) {
    return simLevels.reduce((s, l, i) => s + levelMisses(misses, l) * steps[i], 0);
  }

  function renderSimSummary() {
    const box = document.getElementById('sim-summary');
    const levels = sim.levels.filter(l => l.name !== 'I1').map(l =>
      l.name + ' ' + (l.size % 1024 ? l.size + ' B' : (l.size >> 10) + ' KiB') + ' ' + l.ways +
      '-way: ' + num(l.misses) + ' misses of ' + num(l.refs) + ' (' + pct(l.misses, l.refs) + ')');
    box.appendChild(el('p', {}, num(sim.records) + ' references of ' + sim.trace + ' simulated on ' +
                         sim.machine + ': ' + levels.join('; ')));
    if (sim.sampling)
      box.appendChild(el('p', {class: 'warn'}, 'SAMPLED (' + sim.sampling.mode + ' sampling): ' +
                           'every count is an estimate, ' + sim.sampling.scale.toPrecision(3) +
                           ' x the counted ones.'));
  }

  /* The cross-check: pass 2's measured overhead beside the simulated stall. */
  function renderStall() {
    const st = sim.stall, table = document.getElementById('stall-table');
    /* More than one CPU: the coherence stall estimate beside the overhead too. */
    const mp = sim.processors && sim.processors.cpus > 1;
    const head = el('tr');
    for (const t of ['object', 'overhead', '% of predicted', 'stall estimate', '% of predicted',
                     'overlapped .. serial', 'estimate / overhead']
           .concat(mp ? ['coherence misses', 'coherence stall', 'coherence / overhead'] : []))
      head.appendChild(el('th', {scope: 'col'}, t));
    table.appendChild(el('thead')).appendChild(head);
    const body = table.appendChild(el('tbody'));
    for (const o of st.objects) {
      const s = o.stall, over = o.overhead_cycles;
      const tr = el('tr', {'data-name': o.name, 'data-overhead': over,
                           'data-coherence': mp ? s.coherence_cycles : ''});
      for (const t of [o.name, num(over), signedPct(over, o.predicted_cycles), num(s.estimate_cycles),
                       signedPct(s.estimate_cycles, o.predicted_cycles),
                       num(s.overlapped_cycles) + ' .. ' + num(s.serial_cycles),
                       over > 0 ? (s.estimate_cycles / over).toFixed(2) : '\u2013']
             .concat(mp ? [num(s.coherence_misses), num(s.coherence_cycles),
                           over > 0 ? (s.coherence_cycles / over).toFixed(3) : '\u2013'] : []))
        tr.appendChild(el('td', {}, t));
      body.appendChild(tr);
    }
    const ag = st.agreement, th = data.stall_thresholds;
    let text = 'agreement: ' + ag.same_order + ' of ' + ag.pairs + ' pairs of objects ordered the ' +
      'same by overhead % and by stall estimate % (objects measured more than ' +
      th.model_error_pct + '% below their prediction left out)';
    if (ag.memory_bound)
      text += '; on the ' + ag.memory_bound + ' memory-bound (overhead >= ' + th.memory_bound_pct +
        '%), estimate / overhead ' + ag.ratio_min.toFixed(2) + ' to ' + ag.ratio_max.toFixed(2);
    const outside = st.outside;
    text += '. Program: overhead ' + num(data.program.overhead) + ' cycles, ' +
      num(st.program.unexplained_overhead_cycles) + ' of it outside the timed objects; simulated ' +
      'stall outside them ' + (st.outside_traced ? num(outside.estimate_cycles) + ' (' +
      num(outside.overlapped_cycles) + ' .. ' + num(outside.serial_cycles) + ')' :
      'not traced (mtool sim --all RUNDIR traces it)') + '.';
    document.getElementById('agreement').textContent = text;
  }

  /* Miss causes per code object: a bar per level, cold, capacity and conflict stacked. */
  function renderMissCauses() {
    const last = simLevels[simLevels.length - 1];
    const rows = sim.code_objects.slice()
      .sort((a, b) => levelMisses(b.misses, last) - levelMisses(a.misses, last)).slice(0, 20);
    const labelW = 300, levelW = 30, h = 14, gap = 8, width = 1000;
    const max = Math.max(1, ...rows.flatMap(r => simLevels.map(l => levelMisses(r.misses, l))));
    const scale = (width - labelW - levelW - 90) / max;
    const svg = document.getElementById('miss-causes');
    const groupH = simLevels.length * h + gap;
    svg.setAttribute('width', width);
    svg.setAttribute('height', rows.length * groupH + 4);
    rows.forEach((r, k) => {
      const g = svgEl('g', {class: 'code-object', 'data-id': r.id});
      const y0 = k * groupH + 2;
      const label = r.name.length > 44 ? r.name.slice(0, 43) + '\u2026' : r.name;
      g.appendChild(svgEl('text', {x: 0, y: y0 + 11}, label));
      simLevels.forEach((l, i) => {
        const y = y0 + i * h, m = r.misses[l];
        g.appendChild(svgEl('text', {x: labelW, y: y + 11, class: 'level'}, l));
        let x = labelW + levelW;
        for (const c of CAUSES) {
          const w = m[c] * scale;
          const rect = svgEl('rect', {x: x, y: y + 1, width: w, height: h - 3, class: c,
                                      'data-level': l, 'data-count': m[c]});
          rect.appendChild(svgEl('title', {}, r.name + ', ' + l + ' ' + c + ' misses: ' + m[c]));
          g.appendChild(rect);
          x += w;
        }
        g.appendChild(svgEl('text', {x: x + 4, y: y + 11, class: 'level'},
                            num(levelMisses(r.misses, l))));
      });
      svg.appendChild(g);
    });
  }

  /* Code x data: each pair's serial stall (its misses x what each level adds),
   * as a share of all pairs'; the 16 costliest code and data objects. */
  function renderHeatmap() {
    const steps = serialSteps(), pairs = sim.code_data || [];
    const cells = pairs.map(p => ({p, stall: serialStall(p.misses, steps)}));
    const total = cells.reduce((s, c) => s + c.stall, 0);
    function top(key, name) {
      const sum = new Map();
      for (const c of cells) {
        const e = sum.get(c.p[key]) || {id: c.p[key], name: c.p[name], stall: 0};
        e.stall += c.stall;
        sum.set(c.p[key], e);
      }
      const list = [...sum.values()].sort((a, b) => b.stall - a.stall).slice(0, 16);
      /* two heap blocks allocated on one line by different call paths share a name */
      const named = new Map();
      for (const e of sum.values()) named.set(e.name, (named.get(e.name) || 0) + 1);
      for (const e of list) if (named.get(e.name) > 1) e.name += ' #' + e.id;
      return list;
    }
    const rows = top('code', 'code_name'), cols = top('data', 'data_name');
    const labelW = 260, cell = 34, headH = 150;
    const svg = document.getElementById('heatmap');
    svg.setAttribute('width', labelW + cols.length * cell + 10);
    svg.setAttribute('height', headH + rows.length * cell + 4);
    const short = (s, n) => s.length > n ? s.slice(0, n - 1) + '\u2026' : s;
    cols.forEach((c, j) => {
      const x = labelW + j * cell + cell / 2;
      const t = svgEl('text', {x: x, y: headH - 4, transform: 'rotate(-50 ' + x + ' ' + (headH - 4) + ')',
                               class: 'col-label'}, short(c.name, 24));
      t.appendChild(svgEl('title', {}, c.name));
      svg.appendChild(t);
    });
    const max = Math.max(0, ...cells.map(c => c.stall));
    rows.forEach((r, i) => {
      const y = headH + i * cell;
      const t = svgEl('text', {x: 0, y: y + cell / 2 + 4}, short(r.name, 40));
      t.appendChild(svgEl('title', {}, r.name));
      svg.appendChild(t);
      cols.forEach((c, j) => {
        const found = cells.find(x => x.p.code === r.id && x.p.data === c.id);
        const share = found && total > 0 ? found.stall / total : 0;
        const g = svgEl('g', {class: 'cell', 'data-code': r.id, 'data-data': c.id,
                              'data-share': share});
        const a = max > 0 && found ? found.stall / max : 0;
        g.appendChild(svgEl('rect', {x: labelW + j * cell, y: y, width: cell - 2, height: cell - 2,
                                     fill: found ? 'rgba(217,83,79,' + (0.08 + 0.92 * a).toFixed(3) + ')'
                                                 : '#f4f4f4'}));
        if (share >= 0.005)
          g.appendChild(svgEl('text', {x: labelW + j * cell + cell / 2 - 1, y: y + cell / 2 + 4,
                                       'text-anchor': 'middle', class: a > 0.5 ? 'on-dark' : ''},
                              (share * 100).toFixed(share >= 0.1 ? 0 : 1)));
        g.appendChild(svgEl('title', {}, r.name + ' \u00d7 ' + c.name + ': ' +
                            (share * 100).toFixed(1) + '% of the simulated stall'));
        if (found) g.addEventListener('click', () => showCell(found, share));
        svg.appendChild(g);
      });
    });
    const shown = rows.reduce((s, r) => s + cols.reduce((t, c) => {
      const f = cells.find(x => x.p.code === r.id && x.p.data === c.id);
      return t + (f ? f.stall : 0);
    }, 0), 0);
    document.getElementById('heat-note').textContent = 'Cells: % of the serial stall of all ' +
      cells.length + ' code \u00d7 data pairs (' + num(total) + ' cycles: misses per level \u00d7 ' +
      'what the next level\u2019s latency adds); the ' + rows.length + ' \u00d7 ' + cols.length +
      ' shown hold ' + pct(shown, total) + '. Click a cell for its misses.';
  }

  function showCell(c, share) {
    const info = document.getElementById('heat-info'), p = c.p;
    info.textContent = '';
    info.appendChild(el('h3', {}, p.code_name + ' \u00d7 ' + p.data_name));
    const dl = el('dl', {class: 'figures'});
    dl.appendChild(el('dt', {}, 'references'));
    dl.appendChild(el('dd', {}, num(p.refs)));
    for (const l of simLevels) {
      dl.appendChild(el('dt', {}, l + ' misses'));
      dl.appendChild(el('dd', {}, CAUSES.map(k => k + ' ' + p.misses[l][k]).join(', ')));
    }
    dl.appendChild(el('dt', {}, 'serial stall'));
    dl.appendChild(el('dd', {}, num(c.stall) + ' cycles (' + (share * 100).toFixed(1) + '%)'));
    info.appendChild(dl);
  }

  /* Spatial use (bytes of a line used before it left) and temporal use
   * (reuses of a line while it stayed) per code and data object. */
  function renderUse() {
    const table = document.getElementById('use-table');
    const head = el('tr');
    head.appendChild(el('th', {scope: 'col'}, 'object'));
    head.appendChild(el('th', {scope: 'col'}, 'kind'));
    for (const l of simLevels)
      for (const t of ['lines', 'bytes used', 'reuses / line'])
        head.appendChild(el('th', {scope: 'col'}, l + ' ' + t));
    table.appendChild(el('thead')).appendChild(head);
    const body = table.appendChild(el('tbody'));
    const last = simLevels[simLevels.length - 1];
    const byMisses = list => list.slice()
      .sort((a, b) => levelMisses(b.misses, last) - levelMisses(a.misses, last)).slice(0, 20);
    const rows = byMisses(sim.code_objects).map(o => ({o, kind: 'code'}))
      .concat(byMisses(sim.data_objects || []).map(o => ({o, kind: 'data: ' + o.kind})));
    for (const {o, kind} of rows) {
      const tr = el('tr', {'data-id': o.id, 'data-kind': kind.startsWith('code') ? 'code' : 'data'});
      tr.appendChild(el('td', {}, o.name));
      tr.appendChild(el('td', {}, kind));
      for (const l of simLevels) {
        const u = o.use && o.use[l];
        tr.appendChild(el('td', {}, u ? num(u.lines) : '0'));
        tr.appendChild(el('td', {}, u ? (u.spatial_use * 100).toFixed(1) + '%' : '\u2013'));
        tr.appendChild(el('td', {}, u && u.lines ? (u.reuses / u.lines).toFixed(2) : '\u2013'));
      }
      body.appendChild(tr);
    }
  }

  /* ---- processors (cpus > 1): coherence and NUMA figures, what-if remedies ----
   * The simulation view reads them from sim.json, the history view from the
   * history (report/processors.c); both as {name, kind, figures} with the
   * history's figure names (store.h's mp figures). */
  const MP_FIGURES = [['true_sharing', 'true sharing'], ['false_sharing', 'false sharing'],
    ['invalidations', 'invalidations'], ['interventions', 'interventions'],
    ['upgrades', 'upgrades'], ['local_refs', 'local'], ['remote_refs', 'remote'],
    ['remote_dirty_refs', 'remote dirty'], ['three_hop_refs', 'three-hop']];

  /* A table of a header row and rows of {attrs, cells}. */
  function fillFigures(table, labels, rows) {
    const head = el('tr');
    for (const t of labels) head.appendChild(el('th', {scope: 'col'}, t));
    table.appendChild(el('thead')).appendChild(head);
    const body = table.appendChild(el('tbody'));
    for (const r of rows) {
      const tr = body.appendChild(el('tr', r.attrs));
      for (const t of r.cells) tr.appendChild(el('td', {}, t));
    }
    return body;
  }
  const dataKey = key => 'data-' + key.replace(/_/g, '-');

  /* A row's attributes: its kind, each figure (data-true-sharing, ...). */
  function figureAttrs(o, kind) {
    const attrs = {'data-kind': kind};
    for (const [key] of MP_FIGURES) attrs[dataKey(key)] = o.figures[key];
    return attrs;
  }

  /* sim.json's objects as the history's: coherence figures by id, where
   * their references were served (processors.served_*) by id too. */
  function simMpObjects(list, served, kind) {
    const at = new Map((served || []).map(o => [o.id, o.served]));
    return (list || []).map(o => {
      const sv = at.get(o.id) || {};
      return {id: o.id, name: o.name, kind, figures: {
        true_sharing: o.true_sharing, false_sharing: o.false_sharing,
        invalidations: o.invalidations, interventions: o.interventions, upgrades: o.upgrades,
        local_refs: sv.local || 0, remote_refs: sv.remote || 0,
        remote_dirty_refs: sv.remote_dirty || 0, three_hop_refs: sv.three_hop || 0}};
    });
  }

  /* Coherence misses per object when more than one CPU was simulated. */
  function renderCoherence() {
    const pr = sim.processors;
    if (!pr || pr.cpus < 2) return;
    document.getElementById('coherence').hidden = false;
    const rows = simMpObjects(pr.code_objects, pr.served_code_objects, 'code')
      .concat(simMpObjects(pr.data_objects, pr.served_data_objects, 'data'));
    const sharing = o => o.figures.true_sharing + o.figures.false_sharing;
    const max = Math.max(1, ...rows.map(sharing));
    const body = fillFigures(document.getElementById('coherence-table'),
      ['object', 'kind'].concat(MP_FIGURES.map(f => f[1]), ['']),
      rows.map(o => ({attrs: Object.assign(figureAttrs(o, o.kind), {'data-id': o.id,
        'data-true': o.figures.true_sharing, 'data-false': o.figures.false_sharing}),
        cells: [o.name, o.kind].concat(MP_FIGURES.map(([key]) => num(o.figures[key])), [''])})));
    [...body.children].forEach((tr, k) => {
      const f = rows[k].figures, svg = svgEl('svg', {width: 200, height: 12});
      const wt = 200 * f.true_sharing / max, wf = 200 * f.false_sharing / max;
      svg.appendChild(svgEl('rect', {x: 0, y: 1, width: wt, height: 10, class: 'true-sharing'}));
      svg.appendChild(svgEl('rect', {x: wt, y: 1, width: wf, height: 10, class: 'false-sharing'}));
      tr.lastChild.appendChild(svg);
    });
    document.getElementById('coherence-note').textContent = pr.cpus + ' CPUs simulated (' +
      pr.protocol + '); misses of a line another CPU wrote: true sharing when the words used ' +
      'were written, false sharing when only others on the line were; invalidations, ' +
      'interventions and upgrades counted against the reference that caused them; local, ' +
      'remote, remote dirty and three-hop: its references served past its node\u2019s caches.';
    renderPerCpu(pr);
  }

  /* The per-CPU and per-thread views of sim.json. */
  function renderPerCpu(pr) {
    const misses = m => simLevels.map(l => num(m[l] ? m[l].misses : 0));
    const served = v => ['local', 'remote', 'remote_dirty', 'three_hop'].map(k => num(v[k]));
    const labels = simLevels.map(l => l + ' misses').concat(['true sharing', 'false sharing',
      'invalidations sent', 'interventions', 'upgrades', 'local', 'remote', 'remote dirty',
      'three-hop', 'served stall cycles']);
    const figures = c => misses(c.misses).concat([num(c.true_sharing), num(c.false_sharing),
      num(c.invalidations_sent), num(c.interventions), num(c.upgrades)], served(c.served),
      [num(c.served_stall_cycles)]);
    fillFigures(document.getElementById('cpu-table'), ['CPU', 'node', 'threads', 'references']
      .concat(labels), pr.per_cpu.map(c => ({attrs: {'data-cpu': c.cpu, 'data-refs': c.refs},
        cells: [String(c.cpu), String(c.node), String(c.threads), num(c.refs)]
          .concat(figures(c))})));
    fillFigures(document.getElementById('thread-table'), ['thread', 'CPU', 'references']
      .concat(labels), (pr.per_thread || []).map(t => ({attrs: {'data-thread': t.thread,
        'data-refs': t.refs}, cells: [String(t.thread), String(t.cpu), num(t.refs)]
          .concat(figures(t))})));
  }

  /* sim.json's what_if as the history's (report/processors.c): a saving's
   * misses per level (every cause), sharing (true + false), remote, cycles. */
  function simSaving(v) {
    const misses = {};
    for (const l of Object.keys(v.misses)) misses[l] = v.misses[l].total;
    return {misses, sharing: v.true_sharing + v.false_sharing, remote: v.remote,
            cycles: v.cycles === undefined ? null : v.cycles};
  }
  function simWhatIf(w) {
    return {remedies: w.remedies.map(r => ({kind: r.kind, text: r.text, saved: simSaving(r.saved)})),
      problems: w.problems.map(p => {
        const misses = {};
        for (const l of Object.keys(p.figures.misses)) misses[l] = p.figures.misses[l].total;
        return {code: p.code_name, data: p.data_name, misses,
                true_sharing: p.figures.true_sharing, false_sharing: p.figures.false_sharing,
                remote: p.figures.remote, cycles: p.figures.cycles, proposed: p.best,
                saved: p.best === null ? null : simSaving(p.saved[p.best])};
      })};
  }
  const signedNum = v => v === null || v === undefined ? '\u2013' : (v > 0 ? '+' : '') + num(v);
  const savingCells = (v, levels) => levels.map(l => v ? signedNum(v.misses[l]) : '\u2013')
    .concat(v ? [signedNum(v.sharing), signedNum(v.remote), signedNum(v.cycles)]
              : ['\u2013', '\u2013', '\u2013']);

  /* What-if remedies with what each saves, and the remedy proposed for each
   * top problem, into box (its tables made here). */
  function renderWhatIf(box, w) {
    box.hidden = false;
    const levels = Object.keys(w.remedies.length ? w.remedies[0].saved.misses : {});
    const saved = levels.map(l => l + ' saved').concat(['sharing saved', 'remote saved',
                                                        'cycles saved']);
    box.appendChild(el('h3', {}, 'What-if remedies, simulated on the same trace'));
    box.appendChild(el('p', {}, 'What each remedy saves over the run: misses per level (every ' +
      'cause), sharing misses (true + false), remote references, stall cycles; negative: more.'));
    fillFigures(box.appendChild(el('table', {class: 'objects remedies'})),
      ['remedy', 'kind'].concat(saved), w.remedies.map((r, k) => ({
        attrs: {'data-position': k, 'data-kind': r.kind, 'data-cycles': r.saved.cycles},
        cells: [r.text, r.kind].concat(savingCells(r.saved, levels))})));
    box.appendChild(el('h3', {}, 'Top problems and the remedy proposed for each'));
    box.appendChild(el('p', {}, 'A problem: a code \u00d7 data cell; the remedy proposed saves ' +
      'it the most stall cycles (none: no remedy saves it any); its saving on the cell.'));
    fillFigures(box.appendChild(el('table', {class: 'objects problems'})),
      ['code', 'data'].concat(levels.map(l => l + ' misses'), ['true sharing', 'false sharing',
        'remote', 'stall cycles', 'proposed remedy'], saved),
      w.problems.map(p => ({attrs: {'data-proposed': p.proposed === null ? '' : p.proposed},
        cells: [p.code, p.data].concat(levels.map(l => num(p.misses[l])), [num(p.true_sharing),
          num(p.false_sharing), num(p.remote), p.cycles === null ? '\u2013' : num(p.cycles),
          p.proposed === null ? 'none' : w.remedies[p.proposed].text],
          savingCells(p.saved, levels))})));
  }

  function renderSimulation() {
    if (!sim) { /* the page says how to add one */
      if (given)
        document.getElementById('no-simulation').textContent = 'The run directory\u2019s ' +
          'sim.json is not one this page reads (another mtool\u2019s?): mtool sim RUNDIR ' +
          'makes it again.';
      return;
    }
    document.getElementById('no-simulation').hidden = true;
    document.getElementById('simulation').hidden = false;
    renderSimSummary();
    renderStall();
    renderMissCauses();
    renderHeatmap();
    renderUse();
    renderCoherence();
    if (sim.what_if) renderWhatIf(document.getElementById('whatif'), simWhatIf(sim.what_if));
  }

  /* ---- history: trends and the diff against a baseline (report/history.c) ---- */
  const history = data.history;

  /* A trend chart per kind of figure the object's runs have: a timed run's
   * cycles, a counted run's memory operations (shown when a run without
   * cycles has them: a timed run's are pass 1's counts again), a simulated
   * run's last-level misses, a run of more than one CPU's coherence misses
   * and events and where its references were served, a simulated TLB's page
   * walks and ITLB misses.  [class, index in a point, unit]. */
  const trendGroups = [
    {series: [['measured', 1], ['predicted', 2], ['overhead', 3]], unit: 'cycles',
     shown: pts => pts.some(p => p[1] !== null)},
    {series: [['memops', 4]], unit: 'memory operations',
     shown: pts => pts.some(p => p[4] !== null && p[1] === null)},
    {series: [['misses', 5]], unit: 'last-level misses', shown: pts => pts.some(p => p[5] !== null)},
    {series: [['true-sharing', 6], ['false-sharing', 7], ['invalidations', 8],
              ['interventions', 9], ['upgrades', 10]], unit: 'coherence misses and events',
     shown: pts => pts.some(p => p[6] !== null)},
    {series: [['local', 11], ['remote', 12], ['remote-dirty', 13], ['three-hop', 14]],
     unit: 'references served past the node', shown: pts => pts.some(p => p[11] !== null)},
    {series: [['walks', 15], ['itlb', 16]], unit: 'page walks and ITLB misses',
     shown: pts => pts.some(p => p[15] !== null || p[16] !== null)},
  ];

  /* One object's runs as a small chart of one group's series (x: the runs
   * holding them, in order, labelled by id), one point each. */
  function trendChart(all, group) {
    const points = all.filter(p => group.series.some(([, f]) => p[f] !== null));
    const w = 330, h = 110, left = 56, right = 22, top = 8, bottom = 20;
    const values = points.flatMap(p => group.series.map(([, f]) => p[f])).filter(v => v !== null);
    const lo = Math.min(0, ...values), hi = Math.max(1, ...values);
    const x = k => left + (points.length > 1 ? k * (w - left - right) / (points.length - 1)
                                            : (w - left - right) / 2);
    const y = v => top + (hi - v) * (h - top - bottom) / (hi - lo);
    const svg = svgEl('svg', {width: w, height: h, class: 'trend', role: 'img',
                              'data-unit': group.unit});
    svg.appendChild(svgEl('line', {x1: left, x2: w - right, y1: y(0), y2: y(0), class: 'axis'}));
    svg.appendChild(svgEl('text', {x: left - 4, y: top + 8, class: 'tick'}, num(hi)));
    svg.appendChild(svgEl('text', {x: left - 4, y: y(0) + 4, class: 'tick'}, '0'));
    if (lo < 0)
      svg.appendChild(svgEl('text', {x: left - 4, y: h - bottom, class: 'tick'}, num(lo)));
    group.series.forEach(([cls, f]) => {
      const drawn = points.map((p, k) => [k, p]).filter(([, p]) => p[f] !== null);
      svg.appendChild(svgEl('polyline', {class: 'series ' + cls,
        points: drawn.map(([k, p]) => x(k).toFixed(1) + ',' + y(p[f]).toFixed(1)).join(' ')}));
      for (const [k, p] of drawn) {
        const c = svgEl('circle', {cx: x(k), cy: y(p[f]), r: p[0] === history.run ? 4 : 2.5,
                                   class: 'point ' + cls + (p[0] === history.run ? ' this' : ''),
                                   'data-run': p[0], 'data-value': p[f]});
        c.appendChild(svgEl('title', {}, 'run ' + p[0] + ': ' + num(p[f]) + ' ' +
                            (group.unit === 'cycles' ? 'cycles ' + cls : group.unit)));
        svg.appendChild(c);
      }
    });
    points.forEach((p, k) => {
      if (k === 0 || k === points.length - 1 || p[0] === history.run)
        svg.appendChild(svgEl('text', {x: x(k), y: h - 6, class: 'run-label'}, 'run ' + p[0]));
    });
    return svg;
  }

  function renderTrends() {
    const box = document.getElementById('trends');
    objects.forEach((o, i) => {
      const points = history.trend[i];
      const fig = el('figure', {class: 'trend', 'data-index': i});
      fig.appendChild(el('figcaption', {}, o.spec + ' \u2014 ' + points.length +
                         (points.length === 1 ? ' run' : ' runs')));
      for (const g of trendGroups)
        if (g.shown(points)) fig.appendChild(trendChart(points, g));
      box.appendChild(fig);
    });
  }

  const metricNames = {overhead: 'overhead cycles (measured \u2212 predicted)',
                       measured: 'measured cycles', memops: 'memory operations',
                       ll_misses: 'last-level misses (simulated)'};
  /* The diff's rows: the pairs, most worsened first, then the objects only
   * one run executed. */
  function diffRows() {
    const status = d => d.regressed ? 'regressed' : d.improved ? 'improved' : 'unchanged';
    return history.diff.map(d => Object.assign({status: status(d)}, d))
      .concat(history.new.map(d => Object.assign({status: 'new'}, d)))
      .concat(history.gone.map(d => Object.assign({status: 'gone'}, d)))
      .map(d => Object.assign(d, {delta: known(d.after) && known(d.before) ? d.after - d.before
                                                                          : undefined}));
  }
  /* value: what a column sorts by; a change from zero (null) is the largest. */
  const diffColumns = [
    {key: 'name', label: 'object', text: d => d.name},
    {key: 'kind', label: 'kind', text: d => d.kind},
    {key: 'place', label: 'at', text: d => d.place},
    {key: 'before', label: 'baseline', text: d => num(d.before)},
    {key: 'after', label: 'this run', text: d => num(d.after)},
    {key: 'delta', label: 'delta', text: d => d.delta === undefined ? ''
      : (d.delta >= 0 ? '+' : '') + num(d.delta)},
    {key: 'change', label: 'change', text: d => d.change === undefined ? '' : d.change === null
      ? 'from 0' : (d.change >= 0 ? '+' : '') + d.change.toFixed(1) + '%',
     value: d => d.change === null ? Infinity : d.change},
    {key: 'share', label: 'share', text: d => d.share === undefined ? '' : d.share.toFixed(1) + '%'},
    {key: 'status', label: 'status', text: d => d.status},
  ];
  /* null: regressions first, then the pairs most worsened first (the store's order). */
  let diffSortKey = null, diffDescending = true, diffOrder = [];

  function fillDiff(rows) {
    const table = document.getElementById('diff-table');
    const col = diffColumns.find(c => c.key === diffSortKey);
    const value = col ? col.value || (d => d[col.key]) : null;
    diffOrder = rows.map((d, k) => k).sort((a, b) => {
      if (!col)
        return (rows[b].status === 'regressed') - (rows[a].status === 'regressed') || a - b;
      const cmp = compareValues(value(rows[a]), value(rows[b]));
      return (diffDescending ? -cmp : cmp) || a - b;
    });
    markSorted(table, diffSortKey, diffDescending);
    const tbody = table.querySelector('tbody');
    tbody.textContent = '';
    for (const k of diffOrder) {
      const d = rows[k];
      const tr = el('tr', {class: d.status, 'data-delta': known(d.delta) ? d.delta : '',
                           'data-change': d.change === null ? 'Infinity' : known(d.change)
                             ? d.change : ''});
      for (const c of diffColumns) tr.appendChild(el('td', {}, c.text(d)));
      tbody.appendChild(tr);
    }
  }

  function renderDiff() {
    const note = document.getElementById('diff-note'), table = document.getElementById('diff-table');
    if (!history.baseline) {
      note.textContent = 'Run ' + history.run + ' is the first stored run of its program: ' +
        'nothing to compare with.';
      document.getElementById('diff-csv').hidden = true;
      return;
    }
    const rows = diffRows(), regressed = rows.filter(d => d.status === 'regressed').length;
    note.textContent = 'Run ' + history.run + ' against run ' + history.baseline + ' by ' +
      metricNames[history.metric] + ': ' + regressed + ' regressed by more than ' +
      history.threshold + '% holding at least ' + history.min_share + '% of either run\u2019s ' +
      'total (the rule of mtool history regressions ' + history.run + ' ' + history.baseline +
      '); improved: better by more than ' + history.threshold + '%.  Regressions first; click ' +
      'a heading to sort by it.';
    const head = el('tr');
    for (const c of diffColumns) {
      const th = el('th', {scope: 'col', 'data-key': c.key}, c.label);
      th.addEventListener('click', () => {
        diffDescending = diffSortKey === c.key ? !diffDescending
                                               : !['name', 'kind', 'place'].includes(c.key);
        diffSortKey = c.key;
        fillDiff(rows);
      });
      head.appendChild(th);
    }
    table.appendChild(el('thead')).appendChild(head);
    table.appendChild(el('tbody'));
    fillDiff(rows);
    document.getElementById('diff-csv').addEventListener('click', () => download(
      'mtool-diff-' + history.baseline + '-' + history.run + '.csv',
      csvText(diffColumns.map(c => c.key),
              diffOrder.map(k => diffColumns.map(c => rows[k][c.key])))));
  }

  function renderHistory() {
    const note = document.getElementById('history-note');
    if (!history.run) {
      note.textContent = 'This run is not in the history: ' + history.why;
      return;
    }
    note.textContent = 'Run ' + history.run + ' of the history; each object\u2019s runs ' +
      'up to it (mtool history trend), and the diff against run ' + (history.baseline || '\u2013') +
      ' (mtool report --baseline RUN picks another).';
    document.getElementById('history').hidden = false;
    renderTrends();
    renderDiff();
    if (history.processors) renderMpHistory(history.processors);
  }

  /* A run of more than one CPU: its objects' coherence and NUMA figures,
   * before and after against the baseline, its what-if remedies. */
  function renderMpHistory(pr) {
    document.getElementById('mp-history').hidden = false;
    fillFigures(document.getElementById('mp-table'), ['object', 'kind', 'at']
      .concat(MP_FIGURES.map(f => f[1])), pr.objects.map(o => ({attrs: figureAttrs(o, o.kind),
        cells: [o.name, o.kind, o.place].concat(MP_FIGURES.map(([key]) => num(o.figures[key])))})));
    const note = document.getElementById('mp-diff-note');
    if (!history.baseline || !pr.diff.length) {
      note.textContent = history.baseline ? 'No object of run ' + history.baseline +
        ' paired with this run\u2019s has processors\u2019 figures (a run of one CPU?).'
        : 'No baseline run to compare with.';
    } else {
      note.textContent = 'Run ' + history.baseline + ' \u2192 run ' + history.run + ' (mtool ' +
        'history diff ' + history.baseline + ' ' + history.run + ' --metric false_sharing, ...); ' +
        'marked worse: more of a figure other than local references.';
      const body = fillFigures(document.getElementById('mp-diff-table'), ['object', 'kind', 'at']
        .concat(MP_FIGURES.map(f => f[1])), pr.diff.map(d => ({attrs: {'data-kind': d.kind},
          cells: [d.name, d.kind, d.place].concat(MP_FIGURES.map(([key]) =>
            num(d.before[key]) + ' \u2192 ' + num(d.after[key])))})));
      [...body.children].forEach((tr, k) => MP_FIGURES.forEach(([key], f) => {
        const d = pr.diff[k], td = tr.children[3 + f];
        td.dataset.before = d.before[key];
        td.dataset.after = d.after[key];
        if (key !== 'local_refs' && d.after[key] !== d.before[key])
          td.className = d.after[key] > d.before[key] ? 'worse' : 'better';
      }));
    }
    const levels = Object.keys(pr.threads.length ? pr.threads[0].misses : {});
    fillFigures(document.getElementById('mp-thread-table'), ['thread', 'CPU', 'references']
      .concat(levels.map(l => l + ' misses'), ['stall cycles'], MP_FIGURES.map(f => f[1])),
      pr.threads.map(t => ({attrs: Object.assign(figureAttrs(t, 'thread'), {'data-thread': t.thread,
        'data-cpu': t.cpu, 'data-refs': t.refs,
        'data-stall': t.stall_cycles === null ? '' : t.stall_cycles}),
        cells: [String(t.thread), String(t.cpu), num(t.refs)].concat(levels.map(l =>
          num(t.misses[l])), [t.stall_cycles === null ? '\u2013' : num(t.stall_cycles)],
          MP_FIGURES.map(([key]) => num(t.figures[key])))})));
    if (pr.what_if) renderWhatIf(document.getElementById('mp-whatif'), pr.what_if);
  }

  /* ---- an MPI job: each rank's figures per m-object (report.json's "mpi",
   * from mpi/pass2.tsv; imbalance and slowest rank as the C report states them) ---- */
  function renderMpi() {
    const job = data.mpi;
    if (!job) return;
    document.getElementById('mpi').hidden = false;
    document.getElementById('mpi-note').textContent = job.ranks.length + ' ranks, on ' +
      [...new Set(job.ranks.map(r => r.host === null ? '?' : r.host))].join(', ') +
      '. Each rank’s measured time is its own timers’; its prediction, the object ' +
      'predicted with that rank’s own counts.';
    const holder = document.getElementById('mpi-objects');
    const max = Math.max(1, ...job.objects.flatMap(o => o.per_rank.map(f =>
      Math.max(f.measured_cycles, f.predicted_cycles || 0))));
    const width = 480, rowH = 20, labelW = 150;
    for (const o of job.objects) {
      const rows = o.per_rank;
      const shown = (o.library === null ? '' : o.library + ':') + o.time_spec;
      const head = el('h3', {class: 'mpi-object'}, shown + ': imbalance ' +
        fixed(o.imbalance, 2) + '×, slowest rank ' + o.slowest_rank);
      holder.appendChild(head);
      const svg = svgEl('svg', {width: width + labelW + 280, height: rows.length * rowH + 4,
                                role: 'img', 'aria-label': 'ranks of ' + shown});
      rows.forEach((f, i) => {
        const y = i * rowH + 2;
        const host = job.ranks.find(r => r.rank === f.rank);
        svg.appendChild(svgEl('text', {x: 0, y: y + 13},
          'rank ' + f.rank + (host && host.host !== null ? ' (' + host.host + ')' : '')));
        const measured = f.measured_cycles;
        const pred = known(f.predicted_cycles) ? Math.min(f.predicted_cycles, measured) : 0;
        const over = Math.max(measured - pred, 0);
        svg.appendChild(svgEl('rect', {x: labelW, y: y, width: pred / max * width,
                                       height: rowH - 6, class: 'pred'}));
        svg.appendChild(svgEl('rect', {x: labelW + pred / max * width, y: y,
                                       width: over / max * width, height: rowH - 6,
                                       class: 'over'}));
        svg.appendChild(svgEl('text', {x: labelW + measured / max * width + 4, y: y + 13,
                                       class: 'mpi-measured'},
          num(measured) + ' measured, ' + num(f.predicted_cycles) + ' predicted'));
      });
      holder.appendChild(svg);
    }
  }

  renderOverview();
  renderHistogram();
  renderTable();
  renderSource();
  renderFlame();
  renderMpi();
  renderHistory();
  renderSimulation();
})();
