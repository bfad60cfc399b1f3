// tests/browser/page.mjs — what every browser test here shares: its
// assertions in tests/lib.sh's form ("ok - ..." / "not ok - ..." lines),
// Debian's chromium driven by playwright-core ($CHROMIUM, else
// /usr/bin/chromium), and a page opened from file:// with every console
// error, page error, dialog and request other than the page itself recorded
// (a page that opens a dialog has it dismissed, so a test never hangs on it).
import path from 'node:path';
import {chromium} from 'playwright-core';

let failed = 0;
let browser = null;

export function check(what, cond, detail) {
  if (cond) console.log('ok - ' + what);
  else { failed++; console.log('not ok - ' + what + (detail !== undefined ? ': ' + detail : '')); }
}

// The page at `file`, once `ready` (a selector; none: once loaded) is in it.
export async function open(file, ready) {
  browser ??= await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox'],
  });
  const page = await browser.newPage({viewport: {width: 1100, height: 800}});
  const seen = {errors: [], requests: [], dialogs: []};
  const url = 'file://' + path.resolve(file);
  page.on('console', m => { if (m.type() === 'error') seen.errors.push(m.text()); });
  page.on('pageerror', e => seen.errors.push(String(e)));
  page.on('dialog', d => { seen.dialogs.push(d.message()); d.dismiss(); });
  page.on('request', r => { if (r.url() !== url) seen.requests.push(r.url()); });
  await page.goto(url);
  if (ready) await page.waitForSelector(ready);
  return {page, seen};
}

// Closes the browser; exits 1 when an assertion failed.
export async function finish() {
  if (browser) await browser.close();
  console.log(failed ? failed + ' failed' : 'all passed');
  process.exit(failed ? 1 : 0);
}
