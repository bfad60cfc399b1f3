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
  function pct(a, b) {
    return b ? (a / b * 100).toFixed(1) + '%' : '\u2013';
  }
  function signedPct(a, b) {
    return b ? (a >= 0 ? '+' : '') + (a / b * 100).toFixed(0) + '%' : '\u2013';
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
    box.appendChild(dl);
  }

  /* ---- m-objects: histogram and table ---- */
  function renderHistogram() {
    const order = objects.map((o, i) => i)
      .sort((a, b) => objects[b].measured - objects[a].measured).slice(0, 40);
    const labelW = 300, h = 20, width = 1000;
    const max = Math.max(1, ...order.map(i => Math.max(objects[i].measured, objects[i].predicted)));
    const scale = (width - labelW - 90) / max;
    const svg = document.getElementById('histogram');
    svg.setAttribute('width', width);
    svg.setAttribute('height', order.length * h + 4);
    order.forEach((i, k) => {
      const o = objects[i], y = k * h + 2;
      const g = svgEl('g', {class: 'bar', 'data-index': i});
      const label = o.spec.length > 44 ? o.spec.slice(0, 43) + '\u2026' : o.spec;
      g.appendChild(svgEl('title', {}, o.spec + ': ' + num(o.overhead) + ' cycles overhead'));
      g.appendChild(svgEl('text', {x: 0, y: y + 13}, label));
      const wp = o.predicted * scale, wo = Math.max(o.overhead, 0) * scale;
      g.appendChild(svgEl('rect', {x: labelW, y: y, width: wp, height: h - 5, class: 'pred'}));
      g.appendChild(svgEl('rect', {x: labelW + wp, y: y, width: wo, height: h - 5, class: 'over'}));
      g.appendChild(svgEl('text', {x: labelW + wp + wo + 4, y: y + 13},
                          signedPct(o.overhead, o.predicted)));
      g.addEventListener('click', () => openObject(i));
      svg.appendChild(g);
    });
  }

  const columns = [
    {key: 'spec', label: 'object', text: o => o.spec},
    {key: 'kind', label: 'kind', text: o => o.kind},
    {key: 'predicted', label: 'predicted', text: o => num(o.predicted)},
    {key: 'measured', label: 'measured', text: o => num(o.measured)},
    {key: 'overhead', label: 'overhead', text: o => num(o.overhead)},
    {key: 'overhead_pct', label: 'overhead %', text: o => signedPct(o.overhead, o.predicted),
     value: o => o.predicted ? o.overhead / o.predicted : 0},
    {key: 'memops', label: 'memory ops', text: o => num(o.memops)},
    {key: 'extra', label: 'extra cycles / mem op', text: o => o.extra.toFixed(2)},
    {key: 'share', label: 'share of overhead', text: o => pct(o.overhead, data.program.overhead),
     value: o => o.overhead},
  ];
  let sortKey = 'overhead', sortDescending = true;

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
  }

  function fillTable() {
    const table = document.getElementById('objects-table');
    const col = columns.find(c => c.key === sortKey);
    const value = col.value || (o => o[col.key]);
    const order = objects.map((o, i) => i).sort((a, b) => {
      const x = value(objects[a]), y = value(objects[b]);
      const cmp = typeof x === 'string' ? x.localeCompare(y) : x - y;
      return sortDescending ? -cmp : cmp;
    });
    for (const th of table.querySelectorAll('th')) {
      if (th.dataset.key === sortKey)
        th.setAttribute('aria-sort', sortDescending ? 'descending' : 'ascending');
      else
        th.removeAttribute('aria-sort');
    }
    const tbody = table.querySelector('tbody');
    tbody.textContent = '';
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
  /* The bottleneck lines, largest overhead first (executed memory operations
   * break ties, and rank the lines when no object has overhead). */
  const bottlenecks = [];
  perFile.forEach((m, file) => m.forEach((a, line) => {
    if (a.overhead > 0 || a.memops > 0) bottlenecks.push({file, line, a});
  }));
  bottlenecks.sort((x, y) => y.a.overhead - x.a.overhead || y.a.memops - x.a.memops);
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

  /* An object without source lines: its blocks' figures, by procedure entry. */
  function showBlocks(i) {
    shownFile = -1;
    const code = document.getElementById('code');
    code.textContent = '';
    code.appendChild(el('div', {class: 'note'}, 'no source lines for ' + objects[i].spec +
                        ' (no DWARF): executed blocks of its procedure at ' + objects[i].address));
    for (const [object, entry, executions, memops, predicted, overhead] of data.blocks) {
      if (object !== i) continue;
      const row = el('div', {class: 'line'});
      row.appendChild(el('span', {class: 'num'}, entry));
      row.appendChild(figureCell(executions, 0, ''));
      row.appendChild(figureCell(memops, 0, ''));
      row.appendChild(figureCell(overhead, 0, ''));
      row.appendChild(el('span', {class: 'src'}, num(predicted) + ' cycles predicted'));
      code.appendChild(row);
    }
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
    row('\u2003in its loops', num(o.memops_in_loops) + ' (' + o.loops + ' loops)');
    row('\u2003outside loops', num(o.memops_own - o.memops_in_loops));
    row('\u2003in its calls', num(o.memops - o.memops_own) + ' (' + o.calls + ' call sites ran)');
    row('extra cycles / mem op', o.extra.toFixed(2));
    info.appendChild(dl);
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
    else showBlocks(i);
    document.getElementById('source').scrollIntoView();
  }

  function step(delta) {
    if (!bottlenecks.length) return;
    position = Math.min(Math.max(position + delta, 0), bottlenecks.length - 1);
    const b = bottlenecks[position];
    highlight(b.file, b.line);
    if (b.a.object >= 0) showInfo(b.a.object);
    document.getElementById('position').textContent = 'bottleneck ' + (position + 1) + ' of ' +
      bottlenecks.length + ': ' + data.files[b.file].name + ':' + b.line + ', ' +
      num(b.a.overhead) + ' cycles overhead, ' + num(b.a.memops) + ' memory ops';
  }

  function renderSource() {
    const select = document.getElementById('file-select');
    data.files.forEach((f, i) => select.appendChild(el('option', {value: i}, f.name)));
    select.addEventListener('change', () => showFile(Number(select.value)));
    document.getElementById('prev').addEventListener('click', () => step(-1));
    document.getElementById('next').addEventListener('click', () => step(1));
    if (objects.length) {
      showInfo(0);
      if (objects[0].file >= 0) showFile(objects[0].file);
    } else if (data.files.length) {
      showFile(0);
    }
  }

  renderOverview();
  renderHistogram();
  renderTable();
  renderSource();
})();
