// Latency against load in a real browser, against latlab's native engine on the CPU: a
// request-rate sweep made in the form runs and its comparison draws latency against
// throughput (the view in the URL) with goodput per run; a run's Re-run opens the form
// filled in with its settings; the run page charts the engine's Prometheus telemetry.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLatlab, launchBrowser, waitHydrated, api as apiAt } from '../harness.mjs';

let app, browser, cleanup;
// Set by the first test, read by the others (node --test runs a file's tests in order).
let slug, runIds;

before(async () => {
  // Sampled often, so a run of a few seconds has several telemetry points.
  app = await startLatlab({ LATLAB_TELEMETRY_S: '0.2' });
  ({ browser, cleanup } = await launchBrowser());
});

after(async () => {
  await cleanup?.();
  if (app) await app.stop();
});

const api = (path, body) => apiAt(app.base, path, body);

async function waitFinished(slug) {
  const deadline = Date.now() + 240_000;
  for (;;) {
    const c = await api(`/api/comparisons/${slug}`);
    const states = c.runs.map(r => r.status);
    if (states.every(s => ['succeeded', 'failed', 'cancelled', 'interrupted'].includes(s))) return c;
    assert.ok(Date.now() < deadline, `runs still ${states}`);
    await new Promise(res => setTimeout(res, 500));
  }
}

/// Coordinate pairs of an SVG polyline's points attribute.
const pairs = points => points.trim().split(/\s+/).filter(p => p.includes(',')).length;

test('a rate sweep made in the form runs and draws latency against throughput', async () => {
  const page = await browser.newPage();
  await page.goto(`${app.base}/runs/new`);
  await waitHydrated(page);
  await page.selectOption('#f-target_kind', 'native');
  await page.selectOption('#f-device', 'cpu');
  await page.selectOption('#f-dataset_kind', 'random');
  await page.fill('#f-input_len', '16');
  await page.fill('#f-output_len', '8');
  await page.fill('#f-num_prompts', '6');
  await page.fill('#f-max_concurrency', '4');
  await page.fill('#f-request_rate', '2, 8, inf');
  await page.selectOption('#f-arrival', 'gamma');
  await page.fill('#f-burstiness', '0.5');
  await page.click('[data-testid=goodput-fields] summary');
  await page.fill('#f-percentiles', '50, 99');
  await page.fill('#f-goodput_ttft_ms', '5000');
  await page.fill('#f-label', 'rate sweep');
  await page.click('#submit-run');
  await page.waitForURL(/\/c\/[^/?]+\?chart=curve$/, { timeout: 30_000 });
  slug = new URL(page.url()).pathname.split('/').pop();

  const c = await waitFinished(slug);
  runIds = c.runs.map(r => r.id);
  assert.deepEqual(c.runs.map(r => r.status), ['succeeded', 'succeeded', 'succeeded'], JSON.stringify(c.runs.map(r => r.error)));
  // Each run's spec says its one rate, the arrival process and the SLOs asked for.
  assert.deepEqual(c.runs.map(r => r.spec.load.request_rate), [2, 8, null]);
  for (const r of c.runs) {
    assert.equal(r.spec.load.request_rates, undefined);
    assert.equal(r.spec.load.burstiness, 0.5);
    assert.deepEqual(r.spec.goodput, { ttft_ms: 5000, tpot_ms: null, e2el_ms: null });
    assert.deepEqual(r.spec.percentiles, [50, 99]);
    assert.equal(typeof r.summary.goodput, 'number');
  }

  await page.goto(`${app.base}/c/${slug}?chart=curve&p=99`);
  await page.waitForSelector('.chart svg polyline[stroke-width="2"]', { state: 'attached', timeout: 30_000 });
  const line = page.locator('.chart svg polyline[stroke-width="2"]');
  assert.equal(await line.count(), 1, 'one configuration, one line');
  assert.equal(pairs(await line.getAttribute('points')), 3, 'a point per rate');
  const hover = await page.locator('.chart svg title').allTextContents();
  // Joined in load order: 2/s, 8/s, then inf.
  const at = r => hover.findIndex(h => h.includes(r) && h.includes('tok/s, TTFT p99'));
  assert.ok(at('rate=2/s') >= 0 && at('rate=2/s') < at('rate=8/s') && at('rate=8/s') < at('rate=inf'), hover.join('\n'));
  assert.match(await page.textContent('.chart svg'), /output throughput \(tok\/s\)/);
  // Goodput per run in the table.
  const goodput = await page.locator('table.comparison td.goodput').allTextContents();
  assert.equal(goodput.length, 3);
  for (const g of goodput) assert.ok(Number(g) > 0, g);

  // The throughput axis is a control, and the URL holds it; it answers once the page has
  // hydrated (the chart marks that), not while only the server's markup is there.
  await page.waitForSelector('.chart[data-hydrated=true]', { state: 'attached', timeout: 30_000 });
  await page.selectOption('select[name=x]', 'requests');
  await page.waitForURL(/x=requests/);
  await page.waitForFunction(() => /request throughput \(req\/s\)/.test(document.querySelector('.chart svg')?.textContent ?? ''));
  const permalink = page.url();
  await page.close();
  const fresh = await (await browser.newContext({ javaScriptEnabled: false })).newPage();
  await fresh.goto(permalink);
  assert.match(await fresh.textContent('.chart svg'), /request throughput \(req\/s\)/);
  await fresh.context().close();
});

test('re-run opens the form filled in with the run\'s settings', async () => {
  assert.ok(runIds, 'the sweep ran');
  const page = await browser.newPage();
  await page.goto(`${app.base}/runs/${runIds[1]}`);
  await page.click('[data-testid=rerun]');
  await page.waitForURL(new RegExp(`/runs/new\\?from=${runIds[1]}$`));
  await waitHydrated(page);
  assert.match(await page.textContent('[data-testid=prefill-note]'), new RegExp(`Filled in from run #${runIds[1]}`));
  const value = sel => page.inputValue(sel);
  assert.equal(await value('#f-target_kind'), 'native');
  assert.equal(await value('#f-device'), 'cpu');
  assert.equal(await value('#f-dataset_kind'), 'random');
  assert.equal(await value('#f-request_rate'), '8');
  assert.equal(await value('#f-max_concurrency'), '4');
  assert.equal(await value('#f-arrival'), 'gamma');
  assert.equal(await value('#f-burstiness'), '0.5');
  assert.equal(await value('#f-percentiles'), '50, 99');
  assert.equal(await value('#f-goodput_ttft_ms'), '5000');
  assert.equal(await value('#f-num_prompts'), '6');
  assert.equal(await value('#f-label'), 'rate sweep');
  assert.ok(await page.locator('[data-testid=goodput-fields][open]').count() === 1, 'the goodput section opens');
  // Loaded directly, the server-rendered form hydrates with the same values and stays live.
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  await page.goto(`${app.base}/runs/new?from=${runIds[1]}`);
  await waitHydrated(page);
  assert.equal(await value('#f-request_rate'), '8');
  await page.fill('#f-request_rate', '8, 8');
  await page.waitForFunction(() => /must not repeat/.test(document.querySelector('#request_rate-error')?.textContent ?? ''));
  await page.fill('#f-request_rate', '8');
  assert.deepEqual(errors, []);
  // Submitting it as it is makes one run of that rate.
  await page.click('#submit-run');
  await page.waitForURL(/\/runs\/\d+$/, { timeout: 30_000 });
  const id = Number(new URL(page.url()).pathname.split('/').pop());
  const again = await api(`/api/runs/${id}`);
  const before = await api(`/api/runs/${runIds[1]}`);
  assert.deepEqual(again.spec, before.spec);
  await api(`/api/runs/${id}/cancel`, {});
  await page.close();
});

test('the run page charts the native engine\'s Prometheus telemetry', async () => {
  assert.ok(runIds, 'the sweep ran');
  // The 2/s run lasts a few seconds: several samples at 0.2 s.
  for (const javaScriptEnabled of [true, false]) {
    const ctx = await browser.newContext({ javaScriptEnabled });
    const page = await ctx.newPage();
    await page.goto(`${app.base}/runs/${runIds[0]}`);
    const chart = page.locator('[data-testid=telemetry] .chart-telemetry[data-series=running_requests] svg');
    await chart.waitFor({ timeout: 30_000 });
    assert.match(await chart.textContent(), /running requests/);
    assert.match(await chart.textContent(), /seconds since the measured start/);
    const points = await chart.locator('polyline[stroke-width="2"]').first().getAttribute('points');
    assert.ok(pairs(points) >= 3, `a line through several samples: ${points}`);
    const hover = await chart.locator('title').allTextContents();
    assert.ok(hover.some(h => /^target: \d+ at [\d.]+ s$/.test(h)), hover.join('\n'));
    assert.match(await page.textContent('[data-testid=telemetry-summary]'), /Sampled by the worker/);
    await ctx.close();
  }
});
