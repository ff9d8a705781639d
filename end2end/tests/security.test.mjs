// Another site's page must not be able to make latlab do anything: a real Chromium page on
// another origin posts latlab's own new-run form (the attack that once created a run with
// no token set), and a page reached under a rebound host name is refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startLatlab, launchBrowser } from '../harness.mjs';

let app, browser, cleanup, evil;

before(async () => {
  app = await startLatlab({ LATLAB_SEED: '0' });
  ({ browser, cleanup } = await launchBrowser());
});

after(async () => {
  await cleanup?.();
  evil?.close();
  if (app) await app.stop();
});

async function runCount() {
  return (await (await fetch(`${app.base}/api/runs?limit=500`)).json()).length;
}

/// Serves `html` at http://localhost:<port>/: another origin (and another site) than
/// latlab's http://127.0.0.1:<port>.
async function serveAttackerPage(html) {
  evil = http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'text/html' }); res.end(html); });
  await new Promise(r => evil.listen(0, '127.0.0.1', r));
  return `http://localhost:${evil.address().port}/`;
}

test("latlab's own form, posted from another site's page, creates nothing", async () => {
  // The attacker copies the real form (every field, with its defaults) and points it at
  // latlab's create-runs server function.
  const page0 = await (await fetch(`${app.base}/runs/new`)).text();
  const form = page0.match(/<form[\s\S]*?<\/form>/)[0];
  const action = form.match(/action="([^"]+)"/)[1];
  const attack = form.replace(/action="[^"]+"/, `action="${app.base}${action}" id="attack"`);
  const url = await serveAttackerPage(`<!DOCTYPE html><html><body>${attack}</body></html>`);
  const before = await runCount();

  const ctx = await browser.newContext({ javaScriptEnabled: true });
  const page = await ctx.newPage();
  await page.goto(url);
  const [resp] = await Promise.all([
    page.waitForResponse(r => r.url().startsWith(app.base) && r.request().method() === 'POST'),
    page.evaluate(() => document.getElementById('attack').submit()),
  ]);
  assert.equal(resp.status(), 403, 'refused');
  assert.match(await resp.text(), /cross-site request refused/);
  // And a script on that page (the form's post navigated away: back to it), posting as a
  // program would.
  await page.goto(url);
  const status = await page.evaluate(async base => {
    try {
      const r = await fetch(`${base}/api/runs`, { method: 'POST', mode: 'no-cors', body: '{}', headers: { 'content-type': 'text/plain' } });
      return r.type;
    } catch (e) { return String(e); }
  }, app.base);
  assert.ok(status === 'opaque' || /Failed/.test(status), status);
  assert.equal(await runCount(), before, 'no run was created');
  await ctx.close();

  // The same form on latlab's own page still works (the refusal is about where it came from).
  const own = await browser.newContext({ javaScriptEnabled: false });
  const p2 = await own.newPage();
  await p2.goto(`${app.base}/runs/new`);
  await Promise.all([p2.waitForURL(/\/runs\/\d+$/), p2.click('#submit-run')]);
  assert.equal(await runCount(), before + 1);
  await own.close();
});

test('a request under a host name latlab does not serve is refused (DNS rebinding)', async () => {
  const port = new URL(app.base).port;
  const res = await new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/api/runs', headers: { host: `rebind.attacker.example:${port}` } }, r => {
      let body = '';
      r.on('data', d => { body += d; });
      r.on('end', () => resolve({ status: r.statusCode, body }));
    }).on('error', reject);
  });
  assert.equal(res.status, 421);
  assert.match(res.body, /LATLAB_ALLOWED_HOSTS/);
});
