// tests/browser/report.mjs — `mtool report`'s page in a real browser (Debian's
// chromium, driven by playwright-core): it opens from file:// with no console
// error and no network request; clicking an object opens its source with its
// hot line highlighted; PREV/NEXT walk the bottleneck lines by magnitude; the
// table sorts; a hostile symbol stays text; the flame graph's frames are the
// objects' measured time and a click shows their details; the simulation's
// views (cross-check, miss causes, heat map) show sim.json's figures.
// Oracles: report.json (written by `mtool time`, not by the page's code),
// sim.json (by `mtool sim RUNDIR`) and the sample's source text.
//
//   node tests/browser/report.mjs MEMORY_RUNDIR HOSTILE_RUNDIR SHARING_RUNDIR [SCREENSHOT_DIR]
// (SHARING_RUNDIR: a threaded sample simulated with --set cpus=2).
// One "ok - ..." / "not ok - ..." line per assertion (tests/lib.sh's form).
import fs from 'node:fs';
import path from 'node:path';
import {check, open as openPage, finish} from './page.mjs';

const [memDir, hostileDir, sharingDir, shots] = process.argv.slice(2);
const open = file => openPage(file, '#objects-table tbody tr');

const rows = page => page.$$eval('#objects-table tbody tr',
  trs => trs.map(tr => [...tr.children].map(td => td.textContent)));
const hot = page => page.$eval('#code .line.hot', r => ({
  line: Number(r.dataset.line), overhead: Number(r.dataset.overhead),
  text: r.lastChild.textContent}));

/* ---- the memory sample ---- */
const report = JSON.parse(fs.readFileSync(path.join(memDir, 'report.json'), 'utf8'));
// An object's first and last source line from report.json's "file:first-last".
const lines = o => o.source.split(/:(?=[0-9-]+$)/)[1].split('-').map(Number);
const memops = new Map(report.objects.map(o => [o.time_spec, o.memory_ops]));
const {page, seen} = await open(path.join(memDir, 'report.html'));

// The calibration's figures that fell back (report.json's model_check): a
// row of the overview, in the warning colour, exactly when there are some.
const fell = (report.model_check.fallbacks || []).length;
const fellRow = await page.$$eval('#overview dt', dts => dts
  .filter(dt => dt.textContent === 'calibration figures that fell back')
  .map(dt => ({text: dt.nextElementSibling.textContent,
               warn: dt.nextElementSibling.classList.contains('warn')})));
check('the overview names the calibration figures that fell back exactly when report.json has some (' +
      fell + ')', fell ? fellRow.length === 1 && fellRow[0].warn && fellRow[0].text.startsWith(fell + ' of ')
                       : fellRow.length === 0, JSON.stringify(fellRow));

let table = await rows(page);
check('the table has a row per timed object of report.json (' + report.objects.length + ')',
      table.length === report.objects.length, table.length);
check('the table opens sorted by overhead: its first row is report.json\'s first object',
      table[0][0] === report.objects[0].time_spec, table[0][0]);

// Sorting: memory operations, largest first then least first (report.json's figures).
await page.click('#objects-table th[data-key=memops]');
let order = (await rows(page)).map(r => memops.get(r[0]));
check('clicking "memory ops" sorts by report.json\'s memory_ops, largest first',
      order.every((v, i) => i === 0 || order[i - 1] >= v), order.join(' '));
await page.click('#objects-table th[data-key=memops]');
order = (await rows(page)).map(r => memops.get(r[0]));
check('clicking it again sorts least first',
      order.every((v, i) => i === 0 || order[i - 1] <= v), order.join(' '));
await page.click('#objects-table th[data-key=spec]');
const names = (await rows(page)).map(r => r[0]);
check('clicking "object" sorts by name',
      names.every((v, i) => i === 0 || names[i - 1].localeCompare(v) <= 0), names.join(' '));

// The list walk's loop: a pointer chase, its hot line the chase in memory.c.
const walk = report.objects.find(o => o.procedure === 'list_walk_random' && o.kind === 'loop');
check('report.json has list_walk_random\'s loop', walk !== undefined);
if (walk) {
  await page.click(`#objects-table tbody tr:has(td:text-is("${walk.time_spec}"))`);
  const h = await hot(page);
  const file = walk.source.split(/:(?=[0-9-]+$)/)[0];
  const [first, last] = lines(walk);
  const range = first + '-' + (last || first);
  const shown = await page.$eval('#file-select', s => s.selectedOptions[0].textContent);
  check('clicking list_walk_random\'s loop shows ' + file, path.basename(shown) === file, shown);
  check('its hot line is within its source lines ' + range + ' (report.json)',
        h.line >= first && h.line <= (last || first), h.line);
  check('its hot line walks the list (n->)', /n->/.test(h.text), h.text);
  const info = await page.$eval('#info h3', e => e.textContent);
  check('the INFO panel names the object', info === walk.time_spec, info);
}

// The top object (the memory sample's main): its hot line is in one of its
// loops with overhead enough to hold it, by report.json.  A line's overhead
// is its share of its innermost object's (report/data.c), so the loop with
// the most overhead has a line with at least that overhead over its lines,
// and the hot line's loop at least as much (not always the loop with the
// most: the 64 MB fill of line 266 in one line, 9.4e7 cycles, beat the
// product loop's 1.1e8 over lines 242-245 on the AMD EPYC Zen 4).
const top = report.objects[0];
await page.click(`#objects-table tbody tr:has(td:text-is("${top.time_spec}"))`);
{
  const h = await hot(page);
  const span = o => { const [f, l] = lines(o); return [f, l || f]; };
  const loops = report.objects.filter(o => o !== top && o.procedure === top.procedure &&
                                          o.kind === 'loop');
  const most = loops.slice().sort((a, b) => b.overhead_cycles - a.overhead_cycles)[0] || top;
  const [mf, ml] = span(most);
  const floor = most.overhead_cycles / (ml - mf + 1);
  const holder = loops.concat([top])
    .filter(o => { const [f, l] = span(o); return h.line >= f && h.line <= l; })
    .sort((a, b) => (span(a)[1] - span(a)[0]) - (span(b)[1] - span(b)[0]))[0];
  check('clicking the top object highlights a line of one of its loops with overhead at least ' +
        floor.toExponential(2) + ' (' + most.time_spec + "'s over its lines " + mf + '-' + ml + ')',
        holder !== undefined && holder.overhead_cycles >= floor && h.overhead > 0,
        h.line + (holder ? ' in ' + holder.time_spec + ', ' + holder.overhead_cycles : ''));
}
if (shots) await page.screenshot({path: path.join(shots, 'source.png')});

// PREV/NEXT: the bottleneck lines in order of overhead, largest first.
const all = await page.$$eval('#code .line[data-line]', rs => rs.map(r => Number(r.dataset.overhead)));
const walked = [];
for (let k = 0; k < 6; k++) {
  await page.click('#next');
  walked.push((await hot(page)).overhead);
}
check('NEXT starts at the line with the most overhead', walked[0] === Math.max(...all),
      walked[0] + ' vs ' + Math.max(...all));
check('NEXT walks the lines by decreasing overhead',
      walked.every((v, i) => i === 0 || walked[i - 1] >= v), walked.join(' '));
await page.click('#prev');
check('PREV steps back', (await hot(page)).overhead === walked[4]);

// The overview: figure 2 as report.json gives it.
await page.evaluate(() => window.scrollTo(0, 0));
const overview = await page.$eval('#overview', e => e.textContent);
check('the overview states the cost model\'s checked error',
      /checked error/.test(overview) && (report.model_check.checked ? /median/ : /not checked/)
        .test(overview));
if (shots) await page.screenshot({path: path.join(shots, 'overview.png')});

/* ---- the flame graph: the call tree of measured time ---- */
const frames = await page.$$eval('#flame g.frame', gs => gs.map(g => ({
  index: Number(g.dataset.index), x: Number(g.querySelector('rect').getAttribute('x')),
  width: Number(g.querySelector('rect').getAttribute('width'))})));
check('the flame graph draws the program and report.json\'s top object',
      frames.some(f => f.index === -1) && frames.some(f => f.index === 0),
      JSON.stringify(frames.slice(0, 3)));
const rootFrame = frames.find(f => f.index === -1), topFrame = frames.find(f => f.index === 0);
check('the top object\'s frame is its share of the program\'s measured time (report.json)',
      topFrame && Math.abs((topFrame.width + 1) / (rootFrame.width + 1) -
        Math.min(top.measured_cycles / report.program.measured_cycles, 1)) < 0.01,
      topFrame && (topFrame.width + 1) / (rootFrame.width + 1));
await page.click('#flame g.frame[data-index="0"]');
{
  const info = await page.$eval('#flame-info', e => ({h: e.querySelector('h3').textContent,
                                                       text: e.textContent}));
  check('clicking a frame shows its details: ' + top.time_spec,
        info.h === top.time_spec && /measured/.test(info.text) && /entries \(pass 1\)/.test(info.text),
        info.text.slice(0, 200));
  check('the clicked frame is marked', (await page.$$('#flame g.frame.selected')).length === 1);
}
if (shots) {
  await page.$eval('#flame', e => e.scrollIntoView());
  await page.screenshot({path: path.join(shots, 'flame.png')});
}

/* ---- the simulation, against sim.json (what `mtool sim RUNDIR` kept) ---- */
const simFile = path.join(memDir, 'sim.json');
if (fs.existsSync(simFile)) {
  const sim = JSON.parse(fs.readFileSync(simFile, 'utf8'));
  check('the simulation section is shown', await page.$eval('#simulation', e => !e.hidden));
  const stallRows = await page.$$eval('#stall-table tbody tr',
    trs => trs.map(tr => [...tr.children].map(td => td.textContent)));
  check('the cross-check has sim.json\'s objects in its order',
        stallRows.map(r => r[0]).join('|') === sim.stall.objects.map(o => o.name).join('|'));
  const ratios = sim.stall.objects.map(o => o.overhead_cycles > 0 ?
    (o.stall.estimate_cycles / o.overhead_cycles).toFixed(2) : '\u2013');
  check('estimate / overhead per object as sim.json\'s figures give it',
        stallRows.map(r => r[6]).join(' ') === ratios.join(' '), stallRows.map(r => r[6]).join(' '));
  const agreement = await page.$eval('#agreement', e => e.textContent);
  const ag = sim.stall.agreement;
  check('the agreement is stated as the text report states it',
        agreement.startsWith('agreement: ' + ag.same_order + ' of ' + ag.pairs + ' pairs of objects ' +
                             'ordered the same by overhead % and by stall estimate %'), agreement);

  // Miss causes: every bar segment is sim.json's count of its object, level and cause.
  const codeById = new Map(sim.code_objects.map(o => [o.id, o]));
  const segments = await page.$$eval('#miss-causes g.code-object rect', rs => rs.map(r => ({
    id: Number(r.parentNode.dataset.id), level: r.dataset.level, cause: r.getAttribute('class'),
    count: Number(r.dataset.count)})));
  const wrongSeg = segments.filter(s => codeById.get(s.id).misses[s.level][s.cause] !== s.count);
  check('the miss-cause bars (' + segments.length + ' segments) are sim.json\'s cold, capacity ' +
        'and conflict misses', segments.length >= 9 && wrongSeg.length === 0,
        JSON.stringify(wrongSeg.slice(0, 3)));

  // The heat map: each pair's serial stall (misses x what the next level adds), as a share.
  const levels = sim.levels.map(l => l.name).filter(n => n !== 'I1');
  const lat = sim.stall.latency_cycles, prof = {D1: 'L1', L2: 'L2', L3: 'L3', L4: 'L4'};
  const step = levels.map((l, i) =>
    lat[i + 1 < levels.length ? prof[levels[i + 1]] : 'memory'] - lat[prof[l]]);
  const stallOf = p => levels.reduce((s, l, i) =>
    s + (p.misses[l].cold + p.misses[l].capacity + p.misses[l].conflict) * step[i], 0);
  const total = sim.code_data.reduce((s, p) => s + stallOf(p), 0);
  const best = sim.code_data.reduce((a, p) => stallOf(p) > stallOf(a) ? p : a);
  const cells = await page.$$eval('#heatmap g.cell', gs => gs.map(g => ({
    code: Number(g.dataset.code), data: Number(g.dataset.data), share: Number(g.dataset.share)})));
  const bestCell = cells.find(c => c.code === best.code && c.data === best.data);
  check('the heat map draws its cells (' + cells.length + ')', cells.length >= 4);
  check('its costliest cell is ' + best.code_name + ' x ' + best.data_name + ', its share ' +
        (stallOf(best) / total * 100).toFixed(1) + '% by sim.json',
        bestCell && Math.abs(bestCell.share - stallOf(best) / total) < 1e-9 &&
        cells.every(c => c.share <= bestCell.share), JSON.stringify(bestCell));
  await page.click(`#heatmap g.cell[data-code="${best.code}"][data-data="${best.data}"]`);
  const heatInfo = await page.$eval('#heat-info h3', e => e.textContent);
  check('clicking it names the pair', heatInfo === best.code_name + ' \u00d7 ' + best.data_name,
        heatInfo);
  const useRows = await page.$$eval('#use-table tbody tr', trs => trs.length);
  check('line use has rows of code and data objects', useRows >= 4, useRows);
  if (shots) {
    await page.$eval('#heatmap', e => e.scrollIntoView());
    await page.screenshot({path: path.join(shots, 'heatmap.png')});
    await page.$eval('#simulation', e => e.scrollIntoView());
    await page.screenshot({path: path.join(shots, 'simulation.png')});
  }
} else {
  check('without sim.json the page says how to add a simulation',
        await page.$eval('#no-simulation', e => !e.hidden));
}

check('no console error', seen.errors.length === 0, seen.errors.join(' | '));
check('no network request', seen.requests.length === 0, seen.requests.join(' '));
await page.close();

/* ---- the hostile symbol ---- */
{
  const {page, seen} = await open(path.join(hostileDir, 'report.html'));
  const hostile = 'ev<script>alert("x")</script>\x1b]0;pwned\x07\x1b[31mRED&amp;';
  const cells = (await rows(page)).map(r => r[0]);
  check('the hostile symbol is shown as text in the table',
        cells.some(c => c.startsWith(hostile)), JSON.stringify(cells));
  await page.click('#objects-table tbody tr');
  const note = await page.$eval('#code .note', e => e.textContent);
  check('its source file is gone: the page says so and shows its lines\' figures',
        /source not embedded: .*No such file/.test(note) &&
        (await page.$$eval('#code .line.hot', r => r.length)) === 1, note);
  const labels = await page.$$eval('#miss-causes g.code-object > text:first-child',
                                   ts => ts.map(t => t.textContent));
  check('the hostile symbol is text in the miss-cause bars too',
        labels.some(l => l.startsWith(hostile.slice(0, 40))), JSON.stringify(labels));
  check('it made no element: the page has its two scripts only',
        (await page.$$eval('script', s => s.length)) === 2);
  check('no dialog opened', seen.dialogs.length === 0, seen.dialogs.join(' '));
  const title = await page.title();
  check('the title shows the path as text', title.startsWith('mtool report: '), title);
  check('no console error (hostile)', seen.errors.length === 0, seen.errors.join(' | '));
  check('no network request (hostile)', seen.requests.length === 0, seen.requests.join(' '));
  await page.close();
}

/* ---- coherence misses: a threaded program simulated on two CPUs ---- */
{
  const {page, seen} = await open(path.join(sharingDir, 'report.html'));
  const sim = JSON.parse(fs.readFileSync(path.join(sharingDir, 'sim.json'), 'utf8'));
  const pr = sim.processors;
  check('sim.json of the threaded sample has two CPUs and sharing misses',
        pr && pr.cpus === 2 && pr.data_objects.some(o => o.false_sharing > 0));
  check('the coherence view is shown', await page.$eval('#coherence', e => !e.hidden));
  const shown = await page.$$eval('#coherence-table tbody tr', trs => trs.map(tr =>
    [tr.dataset.kind, tr.firstChild.textContent, Number(tr.dataset.true), Number(tr.dataset.false)]
      .join(' ')));
  const want = pr.code_objects.map(o => ['code', o.name, o.true_sharing, o.false_sharing].join(' '))
    .concat(pr.data_objects.map(o => ['data', o.name, o.true_sharing, o.false_sharing].join(' ')));
  check('its rows are sim.json\'s true and false sharing per code and data object',
        shown.join('|') === want.join('|'), shown.join('|'));
  // Its events and where its references were served: sim.json's
  // processors.{code,data}_objects and served_{code,data}_objects by id.
  const servedOf = (list, id) => ((list || []).find(o => o.id === id) || {served: {}}).served;
  const figs = (o, served) => [o.invalidations, o.interventions, o.upgrades, served.local || 0,
    served.remote || 0, served.remote_dirty || 0, served.three_hop || 0].join(' ');
  const events = await page.$$eval('#coherence-table tbody tr', trs => trs.map(tr =>
    ['invalidations', 'interventions', 'upgrades', 'localRefs', 'remoteRefs', 'remoteDirtyRefs',
     'threeHopRefs'].map(k => tr.dataset[k]).join(' ')));
  const wantEvents = pr.code_objects.map(o => figs(o, servedOf(pr.served_code_objects, o.id)))
    .concat(pr.data_objects.map(o => figs(o, servedOf(pr.served_data_objects, o.id))));
  check('and their invalidations, interventions, upgrades, local, remote, remote dirty and ' +
        'three-hop references', events.join('|') === wantEvents.join('|'), events.join('|'));
  const cpus = await page.$$eval('#cpu-table tbody tr', trs => trs.map(tr =>
    tr.dataset.cpu + ':' + tr.dataset.refs));
  check('the per-CPU table has sim.json\'s CPUs and their references',
        cpus.join(' ') === pr.per_cpu.map(c => c.cpu + ':' + c.refs).join(' '), cpus.join(' '));
  const threads = await page.$$eval('#thread-table tbody tr', trs => trs.map(tr =>
    tr.dataset.thread + ':' + tr.dataset.refs));
  check('the per-thread table has sim.json\'s threads and their references',
        threads.length >= 2 &&
        threads.join(' ') === pr.per_thread.map(t => t.thread + ':' + t.refs).join(' '),
        threads.join(' '));
  if (sim.what_if) {
    const w = sim.what_if;
    const remedies = await page.$$eval('#whatif table.remedies tbody tr', trs => trs.map(tr =>
      tr.firstChild.textContent + '|' + tr.dataset.cycles));
    check('the what-if table has sim.json\'s ' + w.remedies.length + ' remedies and their ' +
          'cycles saved', remedies.join('\n') === w.remedies.map(r => r.text + '|' +
            r.saved.cycles).join('\n'), remedies.join(' / '));
    const proposed = await page.$$eval('#whatif table.problems tbody tr', trs => trs.map(tr =>
      tr.dataset.proposed));
    check('each problem proposes sim.json\'s best remedy',
          proposed.join(' ') === w.problems.map(p => p.best === null ? '' : p.best).join(' '),
          proposed.join(' '));
  } else {
    check('sim.json of the threaded sample has a what-if (mtool sim --what-if)', false);
  }
  check('no console error (threaded)', seen.errors.length === 0, seen.errors.join(' | '));
  await page.close();
}

/* ---- CSV: parsed back (RFC 4180) and compared with the table and report.json ---- */
// RFC 4180 fields: quoted ones may hold commas and doubled quotes.
function parseCsv(text) {
  const rows = [];
  let row = [], field = '', quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') { row.push(field); field = ''; }
    else if (c === '\n') { row.push(field); rows.push(row); row = []; field = ''; }
    else field += c;
  }
  return rows;
}
async function downloadCsv(page, button) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click(button)]);
  return fs.readFileSync(await download.path(), 'utf8');
}
const near = (x, y) => Math.abs(x - y) <= 1e-5 * Math.max(Math.abs(y), 1);
{
  const {page, seen} = await open(path.join(memDir, 'report.html'));
  await page.click('#objects-table th[data-key=memops]');
  const table = await rows(page);
  const csv = parseCsv(await downloadCsv(page, '#objects-csv'));
  check('the m-objects CSV has a header and the table\'s rows, in its order (by memory ops)',
        csv.length === table.length + 1 && csv[0][0] === 'spec' &&
        csv.slice(1).every((r, k) => r[0] === table[k][0] && r[1] === table[k][1]),
        JSON.stringify(csv.slice(0, 3)));
  const bySpec = new Map(report.objects.map(o => [o.time_spec, o]));
  const col = name => csv[0].indexOf(name);
  const bad = csv.slice(1).filter(r => {
    const o = bySpec.get(r[0]);
    return !o || !near(Number(r[col('measured')]), o.measured_cycles) ||
      !near(Number(r[col('predicted')]), o.predicted_cycles) ||
      Number(r[col('memops')]) !== o.memory_ops;
  });
  check('its measured and predicted cycles and memory ops are report.json\'s', bad.length === 0,
        JSON.stringify(bad.slice(0, 2)));
  check('the download made no network request (blob: only)',
        seen.requests.every(u => u.startsWith('blob:')), seen.requests.join(' '));
  await page.close();
}

/* ---- the history view: trends and the diff (three stored runs) ---- */
if (process.env.HISTORY_PAGE) {
  const oracle = JSON.parse(fs.readFileSync(process.env.HISTORY_ORACLE, 'utf8'));
  const {page, seen} = await open(process.env.HISTORY_PAGE);
  check('the history view is shown', await page.$eval('#history', e => !e.hidden));
  const main = await page.$$eval('#trends figure.trend', fs => fs.filter(f =>
    f.querySelector('figcaption').textContent.startsWith('main \u2014'))
    .map(f => [...f.querySelectorAll('circle.point.measured')].map(c => Number(c.dataset.run))));
  check('main\'s trend chart has one measured point per stored run (history trend: ' +
        oracle.trend_runs.join(' ') + ')',
        main.length === 1 && main[0].join(' ') === oracle.trend_runs.join(' '), JSON.stringify(main));
  const diff = await page.$$eval('#diff-table tbody tr', trs => trs.map(tr =>
    [...tr.children].map(td => td.textContent)));
  const marked = await page.$$eval('#diff-table tbody tr.regressed',
                                   trs => trs.map(tr => tr.firstChild.textContent));
  check('the rows marked regressed are history regressions\' (' + oracle.regressed.join(' ') + ')',
        marked.slice().sort().join(' ') === oracle.regressed.join(' '), marked.join(' '));
  const csv = parseCsv(await downloadCsv(page, '#diff-csv'));
  check('the diff CSV has the table\'s rows: names, places and statuses',
        csv.length === diff.length + 1 && csv.slice(1).every((r, k) =>
          r[0] === diff[k][0] && r[2] === diff[k][2] && r[8] === diff[k][8]),
        JSON.stringify(csv.slice(0, 3)));
  check('its regressed rows are the marked ones',
        csv.filter(r => r[8] === 'regressed').map(r => r[0]).join(' ') === marked.join(' '));
  // Sorting the diff: regressions first by default; by delta, relative
  // change and name on a click, a second click reversing.  The oracle of
  // each row's figures is the page's data (the store's before and after).
  const statuses = diff.map(r => r[8]);
  const firstOther = statuses.findIndex(t => t !== 'regressed');
  check('the diff opens with the regressions first',
        marked.length > 0 && (firstOther < 0 || statuses.slice(firstOther).every(t => t !== 'regressed')),
        statuses.join(' '));
  const diffData = await page.$eval('#mtool-data', e => JSON.parse(e.textContent).history);
  const deltaOf = new Map(diffData.diff.map(d => [d.name, d.after - d.before]));
  const sortedBy = async (key, value) => {
    await page.click('#diff-table th[data-key=' + key + ']');
    return page.$$eval('#diff-table tbody tr', (trs, v) => trs.map(tr => v === 'name'
      ? tr.firstChild.textContent : tr.dataset[v]), value);
  };
  const isSorted = (xs, desc, cmp) => xs.every((x, i) => i === 0 ||
    (desc ? cmp(xs[i - 1], x) >= 0 : cmp(xs[i - 1], x) <= 0));
  const num = (a, b) => (a === '' ? -Infinity : Number(a)) - (b === '' ? -Infinity : Number(b));
  let deltas = await sortedBy('delta', 'delta');
  check('clicking "delta" sorts by after \u2212 before, largest first',
        isSorted(deltas, true, num) && deltas.filter(v => v !== '').length === deltaOf.size,
        deltas.join(' '));
  const names = await page.$$eval('#diff-table tbody tr', trs => trs.map(tr => tr.firstChild.textContent));
  check('its deltas are the stored figures\' (after \u2212 before of each object)',
        names.every((n, k) => deltas[k] === '' || Math.abs(Number(deltas[k]) - deltaOf.get(n)) <=
                              1e-6 * Math.max(1, Math.abs(deltaOf.get(n)))));
  deltas = await sortedBy('delta', 'delta');
  check('clicking it again sorts least first', isSorted(deltas.filter(v => v !== ''), false, num),
        deltas.join(' '));
  const changes = await sortedBy('change', 'change');
  check('clicking "change" sorts by relative change, largest (from 0) first',
        isSorted(changes, true, num), changes.join(' '));
  const byName = await sortedBy('name', 'name');
  check('clicking "object" sorts by name', isSorted(byName, false, (a, b) => a.localeCompare(b)),
        byName.join(' '));
  const csvSorted = parseCsv(await downloadCsv(page, '#diff-csv'));
  check('the diff CSV follows the order shown',
        csvSorted.slice(1).map(r => r[0]).join('\n') === byName.join('\n'));
  if (shots) {
    await page.$eval('#history-head', e => e.scrollIntoView());
    await page.screenshot({path: path.join(shots, 'history.png')});
  }
  check('no console error (history)', seen.errors.length === 0, seen.errors.join(' | '));
  await page.close();
}

/* ---- a run's page built from the history alone (`mtool report 3`, its run
 * directory removed): the oracle is the page the run directory gave
 * (`mtool report last` before the removal) ---- */
if (process.env.STORED_PAGE) {
  const {page, seen} = await open(process.env.STORED_PAGE);
  const fromDir = await open(process.env.STORED_ORACLE_PAGE);
  const note = await page.$eval('#stored-note', e => e.hidden ? '' : e.textContent);
  check('the page says it is built from the history and why', /^Run 3 .*is gone.*history alone/.test(note),
        note);
  const specsOf = async p => (await p.page.$$eval('#mtool-data', e =>
    JSON.parse(e[0].textContent).objects.map(o => o.measured))).sort((a, b) => a - b);
  const [mine, theirs] = [await specsOf({page}), await specsOf(fromDir)];
  check('its objects table has the run directory page\'s objects (' + theirs.length + ')',
        (await rows(page)).length === theirs.length &&
        mine.every((v, i) => Math.abs(v - theirs[i]) <= 1e-5 * Math.max(1, v)));
  await page.click('#objects-table tbody tr');
  const shown = await page.$eval('#code .line.hot', r => r.lastChild.textContent).catch(() => null);
  check('clicking the top object shows its first source line', shown !== null && shown.length > 0,
        shown);
  check('the flame graph is replaced by a note', await page.$eval('#flame', e => e.hidden));
  check('main\'s trend chart has runs 1-3 of cycles',
        (await page.$$eval('#trends figure.trend', fs => fs.filter(f =>
          f.querySelector('figcaption').textContent.startsWith('main \u2014'))
          .map(f => [...f.querySelectorAll('circle.point.measured')].map(c => c.dataset.run).join(' '))))
          .join() === '1 2 3');
  if (shots) await page.screenshot({path: path.join(shots, 'stored.png'), fullPage: false});
  check('no console error (page from the history)', seen.errors.length === 0 &&
        fromDir.seen.errors.length === 0, seen.errors.join(' | '));
  await page.close();
  await fromDir.page.close();
}

/* ---- a counted run's page from the history: memory-operation bars and trends ---- */
if (process.env.COUNT_PAGE) {
  const {page, seen} = await open(process.env.COUNT_PAGE);
  const data = await page.$eval('#mtool-data', e => JSON.parse(e.textContent));
  const bars = await page.$$eval('#histogram g.bar', gs => gs.map(g => g.lastChild.textContent));
  check('the histogram\'s bars are memory operations (' + bars.length + ')',
        bars.length === Math.min(40, data.objects.length) && bars.every(t => t !== '\u2013'));
  const memopsCharts = await page.$$eval('#trends svg.trend[data-unit="memory operations"]',
                                         s => s.length);
  check('trend charts of memory operations for the counted run', memopsCharts > 0);
  check('no console error (counted run)', seen.errors.length === 0, seen.errors.join(' | '));
  await page.close();
}

/* ---- a simulated run's page from the history: its last-level misses ---- */
if (process.env.SIM_RUN_PAGE) {
  const {page, seen} = await open(process.env.SIM_RUN_PAGE);
  const data = await page.$eval('#mtool-data', e => JSON.parse(e.textContent));
  const col = await page.$$eval('#objects-table th', ths => ths.findIndex(t => t.dataset.key === 'll_misses'));
  const shownMisses = await page.$$eval('#objects-table tbody tr', (trs, c) =>
    trs.map(tr => tr.children[c].textContent), col);
  check('the objects table has a column of last-level misses, one cell per object',
        col >= 0 && shownMisses.length === data.objects.length && shownMisses.every(t => t !== '\u2013'));
  check('trend charts of last-level misses for the simulated run',
        (await page.$$eval('#trends svg.trend[data-unit="last-level misses"]', s => s.length)) > 0);
  check('no console error (simulated run)', seen.errors.length === 0, seen.errors.join(' | '));
  await page.close();
}

/* ---- the hostile symbol in the history's diff and its CSV ---- */
if (process.env.HOSTILE_HISTORY_PAGE) {
  const {page, seen} = await open(process.env.HOSTILE_HISTORY_PAGE);
  const hostile = 'ev<script>alert("x")</script>\x1b]0;pwned\x07\x1b[31mRED&amp;';
  const names = await page.$$eval('#diff-table tbody tr', trs => trs.map(tr =>
    tr.firstChild.textContent));
  check('the hostile symbol is text in the diff table', names.some(n => n.startsWith(hostile)),
        JSON.stringify(names));
  const text = await downloadCsv(page, '#diff-csv');
  // history export --csv's rule: control characters as \xHH, quoted for the quotes.
  const want = hostile.replace(/[\x00-\x1f\x7f]/g,
    c => '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0'));
  check('in the CSV it is quoted with its quotes doubled, its control bytes as \\xHH',
        text.includes('"' + want.replace(/"/g, '""')) && !/[\x00-\x09\x0b-\x1f]/.test(text),
        JSON.stringify(text.slice(0, 300)));
  check('parsed back, the CSV cell is the name with its control bytes escaped',
        parseCsv(text).some(r => r[0].startsWith(want)));
  check('it made no element (history): the page has its two scripts only',
        (await page.$$eval('script', s => s.length)) === 2 && seen.dialogs.length === 0);
  await page.close();
}

/* ---- the hostile symbol in a page from the history alone ---- */
if (process.env.HOSTILE_STORED_PAGE) {
  const {page, seen} = await open(process.env.HOSTILE_STORED_PAGE);
  const hostile = 'ev<script>alert("x")</script>\x1b]0;pwned\x07\x1b[31mRED&amp;';
  check('the hostile symbol is text in the objects table of a page from the history',
        (await rows(page)).some(r => r[0].startsWith(hostile)));
  check('it made no element (page from the history): two scripts, no dialog',
        (await page.$$eval('script', s => s.length)) === 2 && seen.dialogs.length === 0 &&
        seen.errors.length === 0, seen.errors.join(' | '));
  await page.close();
}

/* ---- a stripped binary: the timed procedures' annotated disassembly ---- */
if (process.env.STRIPPED_RUNDIR) {
  const blocks = JSON.parse(fs.readFileSync(process.env.STRIPPED_ORACLE, 'utf8'));
  const {page, seen} = await open(path.join(process.env.STRIPPED_RUNDIR, 'report.html'));
  await page.click('#objects-table tbody tr');
  const insns = await page.$$eval('#code .line.insn[data-address]', rs => rs.map(r => ({
    address: parseInt(r.dataset.address, 16), executions: Number(r.dataset.executions),
    reads: Number(r.dataset.reads), writes: Number(r.dataset.writes),
    overhead: Number(r.dataset.overhead), hot: r.classList.contains('hot'),
    text: r.querySelector('.text').textContent})));
  check('clicking the top object shows its procedure\'s disassembly (' + insns.length +
        ' instructions)', insns.length > 10 && insns.every(i => i.text.length > 0));
  const blockOf = a => blocks.find(([start, end]) => a >= start && a < end);
  const wrong = insns.filter(i => !blockOf(i.address) || blockOf(i.address)[2] !== i.executions);
  check('each instruction\'s executions are its block\'s count in counts.tsv (pass 1)',
        wrong.length === 0, JSON.stringify(wrong.slice(0, 3)));
  const sums = new Map();
  for (const i of insns) {
    const b = blockOf(i.address);
    if (!b) continue;
    const s = sums.get(b) || [0, 0];
    sums.set(b, [s[0] + i.reads, s[1] + i.writes]);
  }
  const off = [...sums].filter(([b, [r, w]]) => r !== b[3] || w !== b[4]);
  check('its memory-op marks add up to each block\'s reads and writes (the analysis)',
        off.length === 0 && insns.some(i => i.reads + i.writes > 0), JSON.stringify(off.slice(0, 2)));
  const hot = insns.filter(i => i.hot);
  check('the hot instruction is outlined and has overhead', hot.length === 1 && hot[0].overhead > 0);
  const walked = [];
  for (let k = 0; k < 4; k++) {
    await page.click('#next');
    walked.push(await page.$eval('#code .line.hot', r => Number(r.dataset.overhead)));
  }
  const most = await page.$$eval('#code .line[data-overhead]', rs =>
    Math.max(...rs.map(r => Number(r.dataset.overhead))));
  check('NEXT walks the instructions by decreasing overhead, from the largest',
        walked[0] >= most && walked.every((v, i) => i === 0 || walked[i - 1] >= v),
        walked.join(' '));
  await page.click('#prev');
  check('PREV steps back', await page.$eval('#code .line.hot', r => Number(r.dataset.overhead)) ===
        walked[2]);
  if (shots) await page.screenshot({path: path.join(shots, 'disassembly.png')});
  check('no console error (stripped)', seen.errors.length === 0, seen.errors.join(' | '));
  await page.close();
}

await finish();
