// tests/browser/mp.mjs — the history view of a simulated run of two CPUs in
// a real browser (Debian's chromium, playwright-core): its objects'
// coherence and NUMA figures, their before and after against the baseline,
// the what-if remedies and the problems' proposals, the per-thread table,
// the trend charts' coherence points.  Oracle: tests/history_mp_page.py's ORACLE, the history
// read with python's sqlite3, not by the page's code.
//
//   node tests/browser/mp.mjs PAGE ORACLE [PAGE ORACLE ...]
// One "ok - ..." / "not ok - ..." line per assertion (tests/lib.sh's form).
import fs from 'node:fs';
import path from 'node:path';
import {check, open, finish} from './page.mjs';

const FIGURES = ['true_sharing', 'false_sharing', 'invalidations', 'interventions', 'upgrades',
                 'local_refs', 'remote_refs', 'remote_dirty_refs', 'three_hop_refs'];
const dataKey = f => f.replace(/_(.)/g, (m, c) => c.toUpperCase()); /* dataset's name */
const args = process.argv.slice(2);

for (let a = 0; a + 1 < args.length; a += 2) {
  const oracle = JSON.parse(fs.readFileSync(args[a + 1], 'utf8'));
  const {page, seen} = await open(args[a]);
  const run = 'run ' + oracle.run + ': ';
  check(run + 'the processors\' history view is shown',
        await page.$eval('#mp-history', e => !e.hidden && e.offsetParent !== null));

  const key = o => o.kind + ' ' + o.name;
  const want = new Map(oracle.objects.map(o => [key(o), FIGURES.map(f => o.figures[f]).join(' ')]));
  const shown = await page.$$eval('#mp-table tbody tr', (trs, figs) => trs.map(tr =>
    [tr.dataset.kind + ' ' + tr.firstChild.textContent,
     figs.map(f => tr.dataset[f]).join(' ')]), FIGURES.map(dataKey));
  check(run + 'its ' + want.size + ' objects\' nine figures are the history\'s',
        shown.length === want.size && shown.every(([k, v]) => want.get(k) === v),
        JSON.stringify(shown.filter(([k, v]) => want.get(k) !== v).slice(0, 2)));

  const diff = await page.$$eval('#mp-diff-table tbody tr', trs => trs.map(tr => ({
    key: tr.dataset.kind + ' ' + tr.firstChild.textContent,
    cells: [...tr.children].slice(3).map(td => ({before: Number(td.dataset.before),
      after: Number(td.dataset.after), cls: td.className}))})));
  const wantDiff = new Map(oracle.diff.map(d => [key(d), d]));
  const wrongDiff = diff.filter(r => {
    const d = wantDiff.get(r.key);
    return !d || r.cells.some((c, f) => c.before !== d.before[FIGURES[f]] ||
                                        c.after !== d.after[FIGURES[f]]);
  });
  check(run + 'its diff against run ' + oracle.baseline + ': ' + wantDiff.size +
        ' objects, before and after as the history holds them',
        diff.length === wantDiff.size && wrongDiff.length === 0, JSON.stringify(wrongDiff[0]));
  const misMarked = diff.flatMap(r => r.cells.map((c, f) => [FIGURES[f], c])).filter(([f, c]) =>
    c.cls !== (f === 'local_refs' || c.after === c.before ? '' : c.after > c.before ? 'worse'
                                                                                 : 'better'));
  check(run + 'a figure that grew is marked worse, one that fell better (local references ' +
        'neither)', misMarked.length === 0, JSON.stringify(misMarked[0]));

  if (oracle.what_if) {
    const w = oracle.what_if;
    const remedies = await page.$$eval('#mp-whatif table.remedies tbody tr', trs => trs.map(tr =>
      [tr.firstChild.textContent, tr.dataset.kind, Number(tr.dataset.cycles)].join('|')));
    check(run + 'its ' + w.remedies.length + ' remedies with their cycles saved',
          remedies.join('\n') === w.remedies.map(r => [r.text, r.kind, r.cycles].join('|'))
            .join('\n'), remedies.join(' / '));
    const problems = await page.$$eval('#mp-whatif table.problems', ts => {
      const heads = [...ts[0].querySelectorAll('th')].map(th => th.textContent);
      const at = heads.indexOf('proposed remedy');
      return [...ts[0].querySelectorAll('tbody tr')].map(tr => [tr.children[0].textContent,
        tr.children[1].textContent, tr.children[at].textContent].join('|'));
    });
    check(run + 'its ' + w.problems.length + ' problems with the remedy proposed for each',
          problems.join('\n') === w.problems.map(p => [p.code, p.data, p.proposed || 'none']
            .join('|')).join('\n'), problems.join(' / '));
  } else {
    check(run + 'no what-if remedies shown: none stored',
          await page.$eval('#mp-whatif', e => e.hidden));
  }

  const threads = await page.$$eval('#mp-thread-table tbody tr', (trs, figs) => trs.map(tr =>
    [tr.dataset.thread, tr.dataset.cpu, tr.dataset.refs, tr.dataset.stall]
      .concat(figs.map(f => tr.dataset[f])).join(' ')), FIGURES.map(dataKey));
  const wantThreads = oracle.threads.map(t => [t.thread, t.cpu, t.refs, t.stall_cycles]
    .concat(FIGURES.map(f => t.figures[f])).join(' '));
  check(run + 'the per-thread table: ' + wantThreads.length + ' threads, their CPU, references, ' +
        'stall and nine figures as the history holds them',
        wantThreads.length >= 2 && threads.join('|') === wantThreads.join('|'), threads.join('|'));

  for (const [name, points] of Object.entries(oracle.trends)) {
    const drawn = await page.$$eval('#trends figure.trend', (figs, n) => figs.filter(f =>
      f.querySelector('figcaption').textContent.startsWith(n + ' \u2014'))
      .map(f => [...f.querySelectorAll('circle.point.false-sharing')].map(c =>
        [Number(c.dataset.run), Number(c.dataset.value)])), name);
    if (!drawn.length)
      continue; /* not among the page's objects */
    const want = points.map(p => [p[0], p[1 + FIGURES.indexOf('false_sharing')]]);
    check(run + name + '\'s trend chart: a false-sharing point per run of two CPUs (' +
          want.map(p => p.join(':')).join(' ') + ')',
          JSON.stringify(drawn[0]) === JSON.stringify(want), JSON.stringify(drawn[0]));
  }
  if (process.env.MP_SCREENSHOTS) {
    await page.$eval('#mp-history', e => e.scrollIntoView());
    await page.screenshot({path: path.join(process.env.MP_SCREENSHOTS, 'mp-' + oracle.run + '.png'),
                           fullPage: false});
  }
  check(run + 'no console error', seen.errors.length === 0, seen.errors.join(' | '));
  await page.close();
}
await finish();
