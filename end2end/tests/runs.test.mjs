// A run from the form to stored results: latlab starts latlab-engine on CPU with a tiny
// random model, benchmarks 20 prompts at concurrency 1 and 4, stores every request, and
// the run page updates live without a reload.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLatlab, launchBrowser, waitHydrated } from '../harness.mjs';

let app, browser, cleanup;

before(async () => {
  app = await startLatlab();
  ({ browser, cleanup } = await launchBrowser());
});

after(async () => {
  await cleanup?.();
  if (app) await app.stop();
});

test('a native-engine sweep runs from the form and the run page shows progress and results', async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${app.base}/runs/new`);
  await waitHydrated(page);
  await page.selectOption('#f-target_kind', 'native');
  await page.fill('#f-model_source', 'random:tiny');
  await page.selectOption('#f-device', 'cpu');
  await page.fill('#f-model', 'tiny');
  await page.selectOption('#f-dataset_kind', 'random');
  await page.fill('#f-input_len', '32');
  await page.fill('#f-output_len', '16');
  await page.check('#f-ignore_eos');
  await page.fill('#f-num_prompts', '20');
  await page.fill('#f-max_concurrency', '1,4');
  await page.fill('#f-label', 'tiny cpu');
  await Promise.all([page.waitForURL(/\/c\/[0-9A-Za-z]{10}$/), page.click('#submit-run')]);
  const slug = page.url().split('/').pop();
  const cmp = await (await fetch(`${app.base}/api/comparisons/${slug}`)).json();
  const links = cmp.runs.map(r => `/runs/${r.id}`);
  assert.deepEqual(cmp.runs.map(r => r.spec.load.max_concurrency), [[1], [4]]);

  // The BS=4 run waits behind the BS=1 run (one worker slot); watch it live.
  await page.goto(`${app.base}${links[1]}`);
  const seen = new Set();
  const deadline = Date.now() + 180_000;
  for (;;) {
    const badge = (await page.textContent('.badge').catch(() => '')) || '';
    seen.add(badge.trim());
    if (await page.isVisible('[data-testid=progress]').catch(() => false)) seen.add('progress shown');
    if (['succeeded', 'failed', 'interrupted', 'cancelled'].includes(badge.trim())) break;
    assert.ok(Date.now() < deadline, `run did not finish; seen ${[...seen]}`);
    await page.waitForTimeout(100);
  }
  const error = await page.textContent('[data-testid=run-error]').catch(() => null);
  assert.ok(seen.has('succeeded'), `ended with ${[...seen]} ${error ?? ''}`);
  assert.ok(seen.has('queued') || seen.has('running'), `never saw it queued or running: ${[...seen]}`);
  assert.ok(seen.has('progress shown') || seen.has('running'), `no live progress: ${[...seen]}`);
  const block = await page.textContent('[data-testid=result-block]');
  assert.match(block, /Successful requests:\s+20\n/);
  assert.match(block, /Maximum request concurrency:\s+4\n/);
  assert.match(block, /Total generated tokens:\s+320\n/);

  assert.deepEqual(errors, [], 'no errors while hydrating and updating the run page');

  // Every request stored, for both runs; the engine said it ran random weights.
  for (const href of links) {
    const id = href.split('/').pop();
    const run = await (await fetch(`${app.base}/api/runs/${id}`)).json();
    assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
    const reqs = await (await fetch(`${app.base}/api/runs/${id}/requests`)).json();
    assert.equal(reqs.length, 20);
    assert.ok(reqs.every(r => r.success && r.output_tokens === 16 && r.chunk_offsets_s.length >= 1));
    const target = await (await fetch(`${app.base}/api/runs/${id}/target`)).json();
    assert.equal(target.target_info.engine_info.weights, 'random', 'the engine said its weights are random');
    const log = await (await fetch(`${app.base}/api/runs/${id}/log`)).text();
    assert.match(log, /latlab-engine serve --model random:tiny/);
  }
  await ctx.close();
});
