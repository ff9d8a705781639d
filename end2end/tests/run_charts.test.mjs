// A run's analysis in a real browser: the request timeline draws one bar per request, a
// zoom given in the URL narrows its axis (a permalink reproduces the view), and the
// distribution table and chart are there, with JavaScript on and off; each chart travels once
// and survives hydration, and other views and runs are drawn without a reload.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLatlab, launchBrowser, api as apiAt } from '../harness.mjs';

let app, browser, cleanup;
// The run the first test makes; the second reads it.
let runId;

before(async () => {
  app = await startLatlab({});
  ({ browser, cleanup } = await launchBrowser());
});

after(async () => {
  await cleanup?.();
  if (app) await app.stop();
});

const api = (path, body) => apiAt(app.base, path, body);

test('the timeline has a bar per request and zooms by URL', async () => {
  const { run_ids: [id] } = await api('/api/runs', {
    label: 'timeline', target: { kind: 'native', model_source: 'random:tiny', device: 'cpu' }, model: 'tiny',
    dataset: { kind: 'random', input_len: 16, output_len: 8 }, num_prompts: 5, load: { max_concurrency: [2] },
    sampling: { ignore_eos: true },
  });
  const deadline = Date.now() + 150_000;
  for (;;) {
    const r = await api(`/api/runs/${id}`);
    if (r.status === 'succeeded') break;
    assert.ok(!['failed', 'cancelled'].includes(r.status) && Date.now() < deadline, JSON.stringify(r.status));
    await new Promise(res => setTimeout(res, 300));
  }
  runId = id;
  for (const javaScriptEnabled of [true, false]) {
    const ctx = await browser.newContext({ javaScriptEnabled });
    const page = await ctx.newPage();
    await page.goto(`${app.base}/runs/${id}`);
    await page.waitForSelector('.chart-timeline svg', { timeout: 30_000 });
    assert.equal(await page.locator('.chart-timeline [data-request]').count(), 5, 'one bar per request');
    const whole = Number(await page.getAttribute('.chart-timeline svg', 'data-to'));
    assert.ok(whole > 0, `axis ends at ${whole}`);
    assert.equal(await page.locator('[data-testid=dist-table] tr[data-metric]').count() >= 4, true);
    // The zoom lives in the URL: the same link shows the same narrower window.
    const to = (whole / 2).toFixed(3);
    await page.goto(`${app.base}/runs/${id}?from=0&to=${to}#analysis`);
    await page.waitForSelector('.chart-timeline svg', { timeout: 30_000 });
    assert.equal(Number(await page.getAttribute('.chart-timeline svg', 'data-to')), Number(to));
    // A bad zoom names its parameter on the page.
    await page.goto(`${app.base}/runs/${id}?from=abc`);
    assert.match(await page.textContent('.run-charts'), /from/);
    await ctx.close();
  }
});

test('each chart travels once and survives hydration; views and runs change in place', async () => {
  const id = runId;
  assert.ok(id, 'the first test made a run');
  // The HTML holds each bar once: the charts are not repeated in the hydration data.
  const html = await (await fetch(`${app.base}/runs/${id}`)).text();
  assert.equal(html.split('data-request=').length - 1, 5, 'one copy of the timeline');
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  await page.goto(`${app.base}/runs/${id}`);
  await page.waitForSelector('.run-charts[data-hydrated=true]', { timeout: 30_000 });
  // Hydration kept the server's markup, hover titles included.
  assert.equal(await page.locator('.chart-timeline [data-request]').count(), 5);
  assert.match((await page.locator('.chart-timeline title').allTextContents()).join('\n'), /request #0/);
  // Another metric by link: fetched and drawn without a reload, the URL a permalink.
  await page.evaluate(() => { window.notReloaded = true; });
  await page.click('.chart-controls a[href*="metric=tpot"]');
  await page.waitForFunction(() => /TPOT/.test(document.querySelector('.chart-distribution svg')?.textContent ?? ''));
  assert.ok(await page.evaluate(() => window.notReloaded), 'navigated in place');
  assert.match(page.url(), /metric=tpot/);
  assert.equal(await page.locator('.chart-timeline [data-request]').count(), 5);
  // Another run reached by a link: its charts come from the server function.
  await page.goto(`${app.base}/runs`);
  await page.waitForLoadState('networkidle');
  await page.evaluate(() => { window.notReloaded = true; });
  await page.click(`a[href="/runs/${id}"]`);
  await page.waitForFunction(() => document.querySelectorAll('.chart-timeline [data-request]').length === 5, null, { timeout: 30_000 });
  assert.ok(await page.evaluate(() => window.notReloaded), 'navigated in place');
  assert.match(await page.textContent('.chart-distribution svg'), /TTFT/);
  assert.deepEqual(errors, []);
  await ctx.close();
});
