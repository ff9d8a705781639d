// The import page in a hydrated browser: a refused paste comes back with the API's
// message and the text kept (and hydrates again), then a chosen file imports a run and
// lands on its page. (Without JavaScript: server/tests/pages.rs posts the same form.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startLatlab, launchBrowser } from '../harness.mjs';

let app, browser, cleanup;

before(async () => {
  app = await startLatlab({ LATLAB_SEED: '0', LATLAB_WORKERS: '0' });
  ({ browser, cleanup } = await launchBrowser());
});

after(async () => {
  await cleanup?.();
  if (app) await app.stop();
});

// A printed vLLM result block (data/fixtures, shared with the Rust tests).
const BLOCK = readFileSync(new URL('../../data/fixtures/vllm_serving_result.txt', import.meta.url), 'utf8');

const hydrated = page => page.waitForSelector('form[data-hydrated=true]', { state: 'attached', timeout: 30_000 });

test('the import form reports a refusal in place, then imports a file and lands on the run', async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  // The refused post answers 400, which chromium reports as a failed load: expected.
  page.on('console', m => { if (m.type() === 'error' && !/status of 400/.test(m.text())) errors.push(m.text()); });
  await page.goto(`${app.base}/import`);
  await hydrated(page);

  await page.fill('#i-text', 'no block <here>');
  await page.fill('#i-engine', 'vLLM');
  await page.fill('#i-model', 'Qwen/Qwen3-8B');
  await page.fill('#i-label', 'e2e import');
  await Promise.all([page.waitForLoadState('load'), page.waitForURL(`${app.base}/import`), page.click('#submit-import')]);
  await page.waitForSelector('[data-testid=import-error]:not(:empty)');
  assert.match(await page.textContent('[data-testid=import-error]'), /import refused: no "Serving Benchmark Result" block/);
  await hydrated(page);
  assert.equal(await page.inputValue('#i-text'), 'no block <here>');
  assert.equal(await page.inputValue('#i-label'), 'e2e import');
  assert.equal(await page.inputValue('#i-model'), 'Qwen/Qwen3-8B');
  const listed = async () => (await (await fetch(`${app.base}/api/runs`)).json());
  assert.equal((await listed()).length, 0, 'nothing stored');

  await page.fill('#i-text', '');
  await page.setInputFiles('#i-file', { name: 'c4.txt', mimeType: 'text/plain', buffer: Buffer.from(BLOCK) });
  await Promise.all([page.waitForURL(/\/runs\/\d+$/), page.click('#submit-import')]);
  const id = page.url().split('/').pop();
  const run = await (await fetch(`${app.base}/api/runs/${id}`)).json();
  assert.equal(run.spec.label, 'e2e import');
  assert.equal(run.spec.target.kind, 'imported');
  assert.equal(run.summary.ttft.mean_ms, 64);
  await page.waitForSelector('[data-testid=result-block]');
  assert.deepEqual(errors, [], 'no errors while hydrating the import page');
  await ctx.close();
});
