// The seed study's permalink in a real browser: the chart is in the server's HTML (JS
// off), switching the metric re-renders it in the browser and puts the view in the URL,
// the SVG downloads with what was on screen, and a permalink reproduces the view.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startLatlab, launchBrowser } from '../harness.mjs';

const SLUG = 'qwen3-8b-h100-gpustack';
let app, browser, cleanup;

before(async () => {
  app = await startLatlab();
  ({ browser, cleanup } = await launchBrowser());
});

after(async () => {
  await cleanup?.();
  if (app) await app.stop();
});

/// Resolves once the page is hydrated (the chart's controls answer to changes only then).
async function waitHydrated(page) {
  await page.waitForSelector('.chart[data-hydrated=true]', { state: 'attached', timeout: 30_000 });
}

test('a permalink shows its chart with JavaScript off', async () => {
  const ctx = await browser.newContext({ javaScriptEnabled: false });
  const page = await ctx.newPage();
  await page.goto(`${app.base}/c/${SLUG}?metric=itl&p=99`);
  assert.match(await page.textContent('h1'), /Qwen3-8B on H100 \(GPUStack study\)/);
  const chart = await page.innerHTML('.chart');
  assert.match(chart, /<svg/);
  assert.match(chart, /ITL \(chunk-level\) p99 \(ms\)/);
  // Hover titles carry the published numbers: vLLM's P99 ITL was 40.98 ms.
  assert.match(chart, /data-value="40.98"/);
  assert.match(await page.textContent('main'), /imported/);
  await ctx.close();
});

test('switching the metric re-renders the chart, changes the URL, and the SVG downloads', async () => {
  const ctx = await browser.newContext({ acceptDownloads: true });
  const page = await ctx.newPage();
  await page.goto(`${app.base}/c/${SLUG}`);
  await waitHydrated(page);
  assert.match(await page.innerHTML('.chart'), /TTFT mean \(ms\)/);
  await page.selectOption('select[name=metric]', 'tpot');
  await page.waitForURL(/[?&]metric=tpot/);
  await page.waitForFunction(() => document.querySelector('.chart').innerHTML.includes('TPOT mean (ms)'));
  await page.selectOption('select[name=p]', '99');
  await page.waitForURL(/metric=tpot&p=99/);
  await page.waitForFunction(() => document.querySelector('.chart').innerHTML.includes('TPOT p99 (ms)'));

  const [download] = await Promise.all([page.waitForEvent('download'), page.click('a[data-download=svg]')]);
  const svg = fs.readFileSync(await download.path(), 'utf8');
  assert.match(svg, /^<svg/);
  assert.match(svg, /TPOT p99 \(ms\)/);
  assert.match(svg, /data-value="7.96"/, 'vLLM BS=4 P99 TPOT as published');

  // PNG: the browser draws the on-screen SVG onto a canvas.
  const [png] = await Promise.all([page.waitForEvent('download'), page.click('button[data-png]')]);
  const bytes = fs.readFileSync(await png.path());
  assert.deepEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'a PNG file');

  // The ladder: each step against the previous, with the study's published gain beside it.
  await page.selectOption('select[name=chart]', 'ladder');
  await page.waitForURL(/chart=ladder/);
  await page.waitForFunction(() => document.querySelector('.chart').innerHTML.includes('study: +25.8% speed-up)'));
  const url = page.url();
  assert.match(url, /chart=ladder&metric=tpot&p=99/);

  // The permalink reproduces the view in a fresh page.
  const again = await ctx.newPage();
  await again.goto(url);
  assert.match(await again.innerHTML('.chart'), /Optimization ladder: TPOT p99 \(ms\)/);
  assert.equal(await again.inputValue('select[name=metric]'), 'tpot');
  await ctx.close();
});
