// tests/browser/mpi.mjs — an MPI job's report.html in a real browser (Debian's
// chromium, driven by playwright-core): it opens from file:// with no console
// error and no network request, and shows the job's section: one view per timed
// object of report.json's "mpi" (by time_spec), with the imbalance and slowest
// rank report.json gives (the page computes them itself from mpi/pass2.tsv's
// figures; report.json is written by the C report, not by the page), and a bar
// row per rank naming the rank and its host.
//
//   node tests/browser/mpi.mjs RUNDIR
// One "ok - ..." / "not ok - ..." line per assertion (tests/lib.sh's form).
import fs from 'node:fs';
import path from 'node:path';
import {chromium} from 'playwright-core';

const [dir] = process.argv.slice(2);
let failed = 0;
function check(what, cond, detail) {
  if (cond) console.log('ok - ' + what);
  else { failed++; console.log('not ok - ' + what + (detail !== undefined ? ': ' + detail : '')); }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
const page = await browser.newPage({viewport: {width: 1100, height: 800}});
const errors = [], requests = [];
const url = 'file://' + path.resolve(path.join(dir, 'report.html'));
page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
page.on('pageerror', e => errors.push(String(e)));
page.on('request', r => { if (r.url() !== url) requests.push(r.url()); });
await page.goto(url);
await page.waitForSelector('#objects-table tbody tr');

const report = JSON.parse(fs.readFileSync(path.join(dir, 'report.json'), 'utf8'));
const spec = new Map(report.objects.map(o => [o.name, o.time_spec]));
check('the page opens with no console error and no request', !errors.length && !requests.length,
      errors.concat(requests).join('; '));
check('the MPI section is shown', await page.$eval('#mpi', s => !s.hidden));
const heads = await page.$$eval('#mpi-objects h3', hs => hs.map(h => h.textContent));
const want = report.mpi.objects.map(o => spec.get(o.name) + ': imbalance ' +
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
await browser.close();
process.exit(failed ? 1 : 0);
