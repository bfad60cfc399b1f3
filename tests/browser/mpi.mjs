// tests/browser/mpi.mjs — an MPI job's report.html in a real browser (Debian's
// chromium, driven by playwright-core): it opens from file:// with no console
// error and no network request, and shows the job's section: one view per timed
// object of report.json's "mpi" (by time_spec), with the imbalance and slowest
// rank report.json gives, and a bar row per rank naming the rank and its host.
// The page's data is report.json's "mpi" (one format, report/job.c: written
// from mpi/pass2.tsv for the page, from the pass 2 itself for report.json):
// the same ranks, objects and figures (to the 6 digits written), its names the
// time specs.  tests/mpi_check.py checks report.json's figures themselves.
//
//   node tests/browser/mpi.mjs RUNDIR
// One "ok - ..." / "not ok - ..." line per assertion (tests/lib.sh's form).
import fs from 'node:fs';
import path from 'node:path';
import {check, open, finish} from './page.mjs';

const [dir] = process.argv.slice(2);
const {page, seen} = await open(path.join(dir, 'report.html'), '#objects-table tbody tr');

const report = JSON.parse(fs.readFileSync(path.join(dir, 'report.json'), 'utf8'));
check('the page opens with no console error and no request', !seen.errors.length && !seen.requests.length,
      seen.errors.concat(seen.requests).join('; '));
check('the MPI section is shown', await page.$eval('#mpi', s => !s.hidden));
const embedded = await page.$eval('#mtool-data', s => JSON.parse(s.textContent).mpi);
// Equal, numbers within the 6 significant digits both were written with.
const same = (a, b) => typeof a === 'number' && typeof b === 'number'
  ? Math.abs(a - b) <= 1e-5 * Math.max(Math.abs(a), Math.abs(b))
  : a === null || b === null || typeof a !== 'object' ? a === b
  : Object.keys(a).length === Object.keys(b).length &&
    Object.keys(a).every(k => same(a[k], b[k]));
const shown = o => (o.library === null ? '' : o.library + ':') + o.time_spec;
const named = m => ({...m, objects: m.objects.map(o => ({...o, name: shown(o)}))});
check('the page\'s data is report.json\'s "mpi": launcher, ranks, objects and figures per rank',
      embedded !== null && same(embedded, named(report.mpi)),
      JSON.stringify(embedded).slice(0, 300) + ' vs ' + JSON.stringify(report.mpi).slice(0, 300));
const heads = await page.$$eval('#mpi-objects h3', hs => hs.map(h => h.textContent));
const want = report.mpi.objects.map(o => shown(o) + ': imbalance ' +
  o.imbalance.toFixed(2) + '\u00d7, slowest rank ' + o.slowest_rank);
check('one view per timed object, with report.json\'s imbalance and slowest rank (' +
      want.length + ')', JSON.stringify(heads) === JSON.stringify(want),
      JSON.stringify(heads) + ' vs ' + JSON.stringify(want));
const labels = await page.$$eval('#mpi-objects svg', svgs => svgs.map(
  s => [...s.querySelectorAll('text')].map(t => t.textContent).filter(t => t.startsWith('rank '))));
const ranks = report.mpi.ranks.map(r => 'rank ' + r.rank + ' (' + r.host + ')');
check('each view has a bar row per rank, named with its host (' + ranks.length + ' ranks)',
      labels.length === want.length && labels.every(l => JSON.stringify(l) === JSON.stringify(ranks)),
      JSON.stringify(labels[0]) + ' vs ' + JSON.stringify(ranks));
const bars = await page.$$eval('#mpi-objects svg rect.pred', rs => rs.length);
check('a predicted bar per rank and object', bars === ranks.length * want.length, bars);
if (process.argv[3]) await page.screenshot({path: process.argv[3], fullPage: true});
await finish();
