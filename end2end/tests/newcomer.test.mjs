// What a newcomer trips on, in a real browser against a real latlab (seed study loaded):
// a sweep's comparison page that updates by itself, a dead target shown as failed with its
// errors, the reference study one click from home, runs picked and compared, and no page
// that scrolls sideways on a phone.
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

async function waitRun(id, ok, seconds = 120) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const r = await api(`/api/runs/${id}`);
    if (ok(r)) return r;
    assert.ok(Date.now() < deadline, `run ${id}: ${JSON.stringify(r.status)}`);
    await new Promise(res => setTimeout(res, 300));
  }
}

test('a sweep page shows its runs finishing without a reload', async () => {
  const created = await api('/api/runs', {
    label: 'live sweep', target: { kind: 'native', model_source: 'random:tiny', device: 'cpu' }, model: 'tiny',
    dataset: { kind: 'random', input_len: 16, output_len: 8 }, num_prompts: 3, load: { max_concurrency: [1, 2] },
    sampling: { ignore_eos: true },
  });
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  let navigations = 0;
  page.on('framenavigated', f => { if (f === page.mainFrame()) navigations++; });
  await page.goto(`${app.base}/c/${created.comparison_slug}`);
  await page.waitForSelector('.chart[data-hydrated=true]', { timeout: 30_000 });
  const startNav = navigations;
  assert.match(await page.textContent('[data-testid=live-note]'), /still going/);
  // Both runs end as succeeded on the same page, the note goes away, no reload happened.
  await page.waitForFunction(() => document.querySelectorAll('table.comparison .status-succeeded').length === 2, null, { timeout: 150_000 });
  await page.waitForSelector('[data-testid=live-note]', { state: 'detached', timeout: 10_000 });
  assert.equal(navigations, startNav, 'the page updated in place');
  assert.doesNotMatch(await page.textContent('table.comparison'), /queued|running/);
  await ctx.close();
});

test('a dead target is a failed run with its first errors on the page', async () => {
  const { run_ids: [id] } = await api('/api/runs', {
    label: 'dead target', target: { kind: 'external', base_url: 'http://127.0.0.1:9' }, model: 'm',
    dataset: { kind: 'random', input_len: 8, output_len: 8 }, num_prompts: 5, load: { max_concurrency: [1] },
  });
  await waitRun(id, r => ['failed', 'succeeded'].includes(r.status));
  const ctx = await browser.newContext({ javaScriptEnabled: false });
  const page = await ctx.newPage();
  await page.goto(`${app.base}/runs/${id}`);
  assert.equal(await page.textContent('.status-line .badge'), 'failed');
  assert.match(await page.textContent('[data-testid=run-error]'), /every request failed \(5 of 5\); first errors: .*onnect/i);
  await ctx.close();
});

test('the reference study is one click from the home page', async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${app.base}/`);
  await Promise.all([page.waitForURL(/\/c\/qwen3-8b-h100-gpustack/), page.click('[data-testid=reference-study]')]);
  // A client-side navigation sets the title once the comparison's data has arrived.
  await page.waitForFunction(() => /Qwen3-8B/.test(document.title), null, { timeout: 10_000 });
  await page.click('text=Comparisons');
  await page.waitForURL(/\/comparisons$/);
  // The list renders once its data arrives, after the URL changes: wait for it.
  await page.waitForSelector('a[href="/c/qwen3-8b-h100-gpustack"]', { timeout: 10_000 });
  await ctx.close();
});

test('runs picked on the runs list become a comparison', async () => {
  const ids = [];
  for (const label of ['pick a', 'pick b']) {
    const { run_ids: [id] } = await api('/api/runs', {
      label, target: { kind: 'external', base_url: 'http://127.0.0.1:9' }, model: 'm',
      dataset: { kind: 'random', input_len: 8, output_len: 8 }, num_prompts: 1, load: { max_concurrency: [1] },
    });
    ids.push(id);
  }
  const ctx = await browser.newContext({ javaScriptEnabled: false });
  const page = await ctx.newPage();
  await page.goto(`${app.base}/runs`);
  await page.click('#compare-selected');
  await page.waitForURL(/compare_error=/);
  assert.match(await page.textContent('[data-testid=compare-error]'), /at least two runs/);
  for (const id of ids) await page.check(`input[name=run][value="${id}"]`);
  await page.fill('#compare-title', 'picked by hand');
  await Promise.all([page.waitForURL(/\/c\/[A-Za-z0-9]+$/), page.click('#compare-selected')]);
  assert.equal(await page.textContent('h1'), 'picked by hand');
  await ctx.close();
});

test('no page scrolls sideways on a 390 px phone, and wide tables stay in their box at 1600 px', async () => {
  const { run_ids: [id] } = await api('/api/runs', {
    label: 'a rather long label for a narrow screen', target: { kind: 'external', base_url: 'http://127.0.0.1:9' }, model: 'Qwen/Qwen3-8B',
    dataset: { kind: 'random', input_len: 8, output_len: 8 }, num_prompts: 1, load: { max_concurrency: [1] },
  });
  // The run page is widest once the run has ended (its error, its distribution table):
  // check it then, not while it is still queued.
  for (let i = 0; i < 100 && !['failed', 'succeeded'].includes((await api(`/api/runs/${id}`)).status); i++) {
    await new Promise(r => setTimeout(r, 100));
  }
  const pages = ['/', '/runs', '/runs/new', '/import', '/comparisons', '/c/qwen3-8b-h100-gpustack', `/runs/${id}`, '/login'];
  for (const [width, height] of [[390, 844], [1600, 900]]) {
    const ctx = await browser.newContext({ viewport: { width, height } });
    const page = await ctx.newPage();
    for (const p of pages) {
      await page.goto(`${app.base}${p}`);
      const wide = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(wide <= width, `${p} at ${width} px is ${wide} px wide`);
    }
    if (width < 600) {
      // Form labels sit above their inputs, not beside them.
      await page.goto(`${app.base}/runs/new`);
      const [label, input] = await Promise.all([page.locator('label[for=f-label]').boundingBox(), page.locator('#f-label').boundingBox()]);
      assert.ok(label.y + label.height <= input.y + 1, `label beside its input: ${JSON.stringify([label, input])}`);
    }
    await ctx.close();
  }
});
