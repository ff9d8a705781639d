// latlab in a real browser: server-rendered pages without JavaScript, the hydrated form
// with JavaScript, inline validation without a reload, sweeps landing on a comparison.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startLatlab, launchBrowser, waitHydrated } from '../harness.mjs';

let app, browser, cleanup;
const shots = path.join(import.meta.dirname, '..', 'test-results');
fs.mkdirSync(shots, { recursive: true });

before(async () => {
  // Without the seed study, so the first page shows the empty state.
  app = await startLatlab({ LATLAB_SEED: '0' });
  ({ browser, cleanup } = await launchBrowser());
});

after(async () => {
  await cleanup?.();
  if (app) {
    const { code, postgresLeftRunning } = await app.stop();
    assert.equal(code, 0, 'latlab exits cleanly on SIGTERM');
    assert.equal(postgresLeftRunning, false, 'the embedded cluster is stopped on shutdown');
  }
});

async function runCount() {
  return (await (await fetch(`${app.base}/api/runs?limit=500`)).json()).length;
}

test('pages render with JavaScript off, and the form still works', async () => {
  const ctx = await browser.newContext({ javaScriptEnabled: false });
  const page = await ctx.newPage();
  await page.goto(`${app.base}/`);
  assert.match(await page.textContent('[data-testid=empty-state]'), /No runs yet/);
  await page.goto(`${app.base}/runs/new`);
  // Without JavaScript every group is visible, native engine fields included.
  assert.ok(await page.isVisible('#f-model_source'));
  assert.ok(await page.isVisible('#f-base_url'));
  await page.fill('#f-label', 'no-js run');
  await page.fill('#f-num_prompts', '7');
  await Promise.all([page.waitForURL(/\/runs\/\d+$/), page.click('#submit-run')]);
  assert.match(await page.textContent('h1'), /no-js run/);
  // The submitted values reached the run; its status is whatever the worker has made of it
  // by the time the page renders (a worker can pick it up first: queued was a race).
  const main = await page.textContent('main');
  assert.match(main, /sharegpt × 7 prompts/);
  assert.match(main, /queued|running|succeeded|failed/);
  await ctx.close();
});

test('the form submits with JavaScript on and the new run appears', async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  await page.goto(`${app.base}/runs/new`);
  await waitHydrated(page);
  assert.ok(!(await page.isVisible('#f-model_source')), 'native fields hidden for an external target');
  await page.selectOption('#f-target_kind', 'native');
  assert.ok(await page.isVisible('#f-model_source'), 'choosing native shows its fields');
  await page.fill('#f-label', 'js run');
  await page.fill('#f-num_prompts', '20');
  await page.fill('#f-max_concurrency', '4');
  await Promise.all([page.waitForURL(/\/runs\/\d+$/), page.click('#submit-run')]);
  await page.waitForSelector('text=js run');
  assert.match(await page.textContent('main'), /native random:tiny/);
  await page.screenshot({ path: path.join(shots, 'run-page.png'), fullPage: true });
  await page.click('a.brand');
  await page.waitForSelector('table.runs');
  assert.match(await page.textContent('table.runs'), /js run/);
  assert.deepEqual(errors, [], 'no errors in the page');
  await ctx.close();
});

test('an invalid value shows its error without a page reload', async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${app.base}/runs/new`);
  await waitHydrated(page);
  const before = await runCount();
  await page.evaluate(() => { window.__sameDocument = true; });
  await page.fill('#f-num_prompts', '0');
  await page.waitForSelector('#num_prompts-error:has-text("must be between 1 and 100000")');
  await page.fill('#f-max_concurrency', '1,x');
  await page.waitForSelector('#max_concurrency-error:has-text("\\"x\\" is not a whole number")');
  await page.click('#submit-run');
  await page.waitForSelector('text=field(s) need attention');
  assert.ok(await page.evaluate(() => window.__sameDocument === true), 'the page did not reload');
  assert.match(page.url(), /\/runs\/new$/);
  await page.screenshot({ path: path.join(shots, 'form-errors.png'), fullPage: true });
  // Fixing the value clears its message.
  await page.fill('#f-num_prompts', '10');
  await page.waitForSelector('#num_prompts-error', { state: 'hidden' });
  assert.equal(await runCount(), before, 'nothing was stored');
  await ctx.close();
});

test('a concurrency sweep creates one run per value under a comparison permalink', async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${app.base}/runs/new`);
  await waitHydrated(page);
  await page.fill('#f-label', 'sweep');
  await page.fill('#f-max_concurrency', '1,2,4');
  await Promise.all([page.waitForURL(/\/c\/[0-9A-Za-z]{10}$/), page.click('#submit-run')]);
  await page.waitForSelector('table.comparison');
  const loads = await page.$$eval('table.comparison tbody tr', rows => rows.map(r => r.children[2].textContent));
  assert.deepEqual(loads, ['BS=1', 'BS=2', 'BS=4']);
  // The permalink opens the same view in a fresh context.
  const url = page.url();
  const other = await browser.newContext({ javaScriptEnabled: false });
  const p2 = await other.newPage();
  await p2.goto(url);
  assert.equal((await p2.$$('table.comparison tbody tr')).length, 3);
  await other.close();
  await ctx.close();
});

test('launched engine presets show their exact commands and make one run each', async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${app.base}/runs/new`);
  await waitHydrated(page);
  await page.selectOption('#f-target_kind', 'launched');
  await page.fill('#f-presets', 'vllm-bf16, sglang-fp8');
  await page.waitForSelector('[data-testid=launch-preview] li:nth-child(2)');
  const preview = await page.$$eval('[data-testid=launch-preview] li', lis => lis.map(l => l.textContent));
  assert.deepEqual(preview, ['vllm-bf16: vllm serve Qwen/Qwen3-8B',
    'sglang-fp8: python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B-FP8']);
  await page.fill('#f-presets', 'vllm-bf16, nonsense');
  await page.waitForSelector('#presets-error:has-text("unknown preset \\"nonsense\\"")');
  await page.fill('#f-presets', 'vllm-bf16, sglang-fp8');
  await Promise.all([page.waitForURL(/\/c\/[0-9A-Za-z]{10}$/), page.click('#submit-run')]);
  const cmp = await (await fetch(`${app.base}/api/comparisons/${page.url().split('/').pop()}`)).json();
  assert.deepEqual(cmp.runs.map(r => [r.spec.target.kind, r.spec.target.engine, r.spec.label]),
    [['launched', 'vllm', 'vllm-bf16'], ['launched', 'sglang', 'sglang-fp8']]);
  await ctx.close();
});
