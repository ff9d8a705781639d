// EAGLE-3 on the native engine, end to end: a run through the real worker and the real
// latlab-engine (random:tiny with its random draft, on the CPU) stores the engine's mean
// accepted length, and the run page shows it labelled as meaningless for random weights.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLatlab, launchBrowser, api as apiAt } from '../harness.mjs';

let app, browser, cleanup;

before(async () => {
  app = await startLatlab({});
  ({ browser, cleanup } = await launchBrowser());
});

after(async () => {
  await cleanup?.();
  if (app) await app.stop();
});

const api = (path, body) => apiAt(app.base, path, body);

// The run once it has ended (the CPU engine takes seconds).
async function finished(id) {
  const deadline = Date.now() + 150_000;
  for (;;) {
    const run = await api(`/api/runs/${id}`);
    if (['succeeded', 'failed', 'cancelled'].includes(run.status)) return run;
    assert.ok(Date.now() < deadline, `run ${id} still ${run.status}`);
    await new Promise(res => setTimeout(res, 300));
  }
}

test('a speculating native run stores its accepted length and says what it is worth', async () => {
  const { run_ids: [id] } = await api('/api/runs', {
    label: 'eagle3 chain', model: 'tiny',
    target: {
      kind: 'native', model_source: 'random:tiny', device: 'cpu',
      speculative: { algorithm: 'eagle3', draft_model: 'random:tiny-eagle3', num_steps: 3, topk: 1, num_draft_tokens: 4 },
    },
    dataset: { kind: 'random', input_len: 16, output_len: 12 }, num_prompts: 3, load: { max_concurrency: [1] },
    sampling: { ignore_eos: true },
  });
  const run = await finished(id);
  assert.equal(run.status, 'succeeded', JSON.stringify(run));
  const spec = JSON.stringify(run);
  // The engine's counters over the timed part: a random draft is rarely right, but every
  // verified step emits at least its bonus token, and a chain of 3 at most 4.
  const m = spec.match(/"mean_accepted_length":([0-9.]+)/);
  assert.ok(m, `no accepted length in ${spec}`);
  assert.ok(Number(m[1]) >= 1 && Number(m[1]) <= 4, m[1]);
  assert.match(spec, /random draft weights: acceptance means nothing/);
  const ctx = await browser.newContext({ javaScriptEnabled: false });
  const page = await ctx.newPage();
  await page.goto(`${app.base}/runs/${id}`);
  assert.match(await page.textContent('[data-testid=accepted-length]'), /^[1-4]\.\d\d/);
  assert.match(await page.textContent('[data-testid=spec-caveat]'), /acceptance means nothing/);
  await ctx.close();
});

// Synthetic acceptance through the worker: two passes over one engine, the first plain (and
// kept as the baseline), the second speculating at the asked mean, labelled as synthetic.
test('a synthetic-acceptance run accepts what it asked for and keeps its speculation-off pass', async () => {
  const { run_ids: [id] } = await api('/api/runs', {
    label: 'synthetic 2.5', model: 'tiny',
    target: {
      kind: 'native', model_source: 'random:tiny', device: 'cpu',
      speculative: { algorithm: 'eagle3', draft_model: 'random:tiny-eagle3', num_steps: 3, topk: 1, num_draft_tokens: 4 },
      synthetic_acceptance: 2.5,
    },
    dataset: { kind: 'random', input_len: 16, output_len: 21 }, num_prompts: 3, load: { max_concurrency: [1] },
    sampling: { ignore_eos: true, temperature: 0 },
  });
  const run = await finished(id);
  assert.equal(run.status, 'succeeded', JSON.stringify(run));
  const s = run.speculative;
  assert.ok(s, `no speculation block in ${JSON.stringify(run)}`);
  // 20 tokens after the prefill's one in rounds of 2-3 (2.5 on average): the last round
  // may be cut short by the length.
  assert.ok(Math.abs(s.mean_accepted_length - 2.5) <= 0.3, String(s.mean_accepted_length));
  assert.match(s.caveat, /^synthetic acceptance/);
  assert.equal(s.synthetic.requested, 2.5);
  assert.equal(s.synthetic.baseline.completed, 3, JSON.stringify(s.synthetic));
  assert.ok(s.synthetic.baseline.tpot.mean_ms > 0);
  const ctx = await browser.newContext({ javaScriptEnabled: false });
  const page = await ctx.newPage();
  await page.goto(`${app.base}/runs/${id}`);
  assert.match(await page.textContent('[data-testid=spec-caveat]'), /synthetic acceptance/);
  assert.match(await page.textContent('[data-testid=spec-synthetic]'), /2\.5 tokens per round asked\. Speculation off/);
  await ctx.close();
});
