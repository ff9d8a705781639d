// Managing runs in the browser: a tag added on a run's page filters the runs list to
// exactly the tagged runs; deleting asks first (cancel keeps the run, confirm removes it),
// with and without JavaScript; a run in a comparison is offered archiving instead and stays
// in its comparison; deleting a comparison asks first and keeps its runs, which may then be
// deleted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLatlab, launchBrowser, api } from '../harness.mjs';

let app, browser, cleanup;

before(async () => {
  // No workers: the runs stay as the test puts them.
  app = await startLatlab({ LATLAB_WORKERS: '0', LATLAB_SEED: '0' });
  ({ browser, cleanup } = await launchBrowser());
});

after(async () => {
  await cleanup?.();
  if (app) await app.stop();
});

const spec = (label, conc = [1]) => ({
  label, target: { kind: 'external', base_url: 'http://127.0.0.1:9' }, model: 'Qwen/Qwen3-8B',
  dataset: { kind: 'sharegpt' }, num_prompts: 10, load: { max_concurrency: conc },
});

// Queued runs, cancelled at once (no worker): finished runs that may be deleted.
async function finishedRuns(label, conc) {
  const created = await api(app.base, '/api/runs', spec(label, conc));
  for (const id of created.run_ids) await api(app.base, `/api/runs/${id}/cancel`, {});
  return created;
}

function watchErrors(page) {
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  return errors;
}

const listed = page => page.$$eval('table.runs tbody tr', rows => rows.map(r => Number(r.dataset.runId)));

test('a tag added on the run page filters the runs list to exactly the tagged runs', async () => {
  const [a] = (await finishedRuns('tag me')).run_ids;
  const [b] = (await finishedRuns('leave me')).run_ids;
  const [c] = (await finishedRuns('tag me too')).run_ids;
  const page = await browser.newPage();
  const errors = watchErrors(page);
  for (const id of [a, c]) {
    await page.goto(`${app.base}/runs/${id}`);
    await page.click('[data-testid=annotations] summary');
    await page.fill('#annotations-tags', 'E2E-Tag, h100');
    await page.fill('#annotations-note', 'tagged from the browser');
    await Promise.all([page.waitForURL(`${app.base}/runs/${id}`), page.click('#annotations-save')]);
    await page.waitForSelector('[data-testid=tags] [data-tag=e2e-tag]');
    assert.equal(await page.textContent('[data-testid=note]'), 'tagged from the browser');
  }
  await page.goto(`${app.base}/runs`);
  assert.ok((await listed(page)).includes(b));
  await page.fill('#filter-tag', 'e2e-tag');
  await Promise.all([page.waitForURL(/\/runs\?.*tag=e2e-tag/), page.click('#filter-apply')]);
  await page.waitForSelector('[data-testid=list-count]');
  assert.deepEqual(await listed(page), [c, a]);
  // The tag on a run's page links to the same view.
  await page.goto(`${app.base}/runs/${a}`);
  await Promise.all([page.waitForURL(/\/runs\?tag=e2e-tag$/), page.click('[data-testid=tags] a[data-tag=e2e-tag]')]);
  await page.waitForSelector('[data-testid=list-count]');
  assert.deepEqual(await listed(page), [c, a]);
  assert.deepEqual(errors, []);
  await page.close();
});

for (const js of [true, false]) {
  test(`deleting asks first: cancel keeps the run, confirm removes it (JavaScript ${js ? 'on' : 'off'})`, async () => {
    const [id] = (await finishedRuns(`delete me ${js}`)).run_ids;
    const ctx = await browser.newContext({ javaScriptEnabled: js });
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    await page.goto(`${app.base}/runs/${id}`);
    await Promise.all([page.waitForURL(`${app.base}/runs/${id}/delete`), page.click('#delete-run')]);
    assert.match(await page.textContent('[data-testid=delete-question]'), /cannot be undone/);
    await Promise.all([page.waitForURL(`${app.base}/runs/${id}`), page.click('#delete-cancel')]);
    assert.equal((await fetch(`${app.base}/api/runs/${id}`)).status, 200, 'cancel keeps the run');
    await page.waitForSelector('#delete-run');
    await Promise.all([page.waitForURL(`${app.base}/runs/${id}/delete`), page.click('#delete-run')]);
    await Promise.all([page.waitForURL(`${app.base}/runs?deleted=${id}`), page.click('#delete-confirm')]);
    assert.match(await page.textContent('[data-testid=deleted-note]'), new RegExp(`Run #${id} was deleted`));
    assert.ok(!(await listed(page)).includes(id));
    assert.equal((await fetch(`${app.base}/api/runs/${id}`)).status, 404);
    assert.deepEqual(errors, []);
    await ctx.close();
  });
}

test('a run in a comparison is offered archiving instead, and stays in its comparison', async () => {
  const { run_ids: [m, other], comparison_slug: slug } = await finishedRuns('compared', [1, 2]);
  const page = await browser.newPage();
  const errors = watchErrors(page);
  await page.goto(`${app.base}/runs/${m}/delete`);
  assert.match(await page.textContent('[data-testid=delete-refused]'), /cannot be deleted/);
  assert.equal(await page.$('#delete-confirm'), null, 'no delete button');
  await Promise.all([page.waitForURL(`${app.base}/runs/${m}`), page.click('#delete-archive-instead')]);
  await page.waitForSelector('[data-testid=archived-note]');
  const cmp = await api(app.base, `/api/comparisons/${slug}`);
  assert.deepEqual(cmp.runs.map(r => r.id), [m, other]);
  // A deletion forced through the API is refused too, naming the comparison.
  const r = await fetch(`${app.base}/api/runs/${m}`, { method: 'DELETE' });
  assert.equal(r.status, 409);
  assert.match(await r.text(), new RegExp(`/c/${slug}`));
  await page.goto(`${app.base}/runs`);
  assert.ok(!(await listed(page)).includes(m), 'archived runs leave the list');
  await page.selectOption('#filter-archived', 'only');
  await Promise.all([page.waitForURL(/archived=only/), page.click('#filter-apply')]);
  await page.waitForSelector('[data-testid=list-count]');
  assert.deepEqual(await listed(page), [m]);
  assert.deepEqual(errors, []);
  await page.close();
});

test('deleting a comparison asks first, keeps its runs, and then lets them be deleted', async () => {
  const { run_ids: [a, b], comparison_slug: slug } = await finishedRuns('compared then freed', [1, 2]);
  const page = await browser.newPage();
  const errors = watchErrors(page);
  await page.goto(`${app.base}/c/${slug}`);
  await Promise.all([page.waitForURL(`${app.base}/c/${slug}/delete`), page.click('#comparison-delete')]);
  assert.match(await page.textContent('[data-testid=delete-question]'), /stops working.*Its 2 runs stay/);
  await Promise.all([page.waitForURL(`${app.base}/c/${slug}`), page.click('#delete-cancel')]);
  assert.equal((await fetch(`${app.base}/api/comparisons/${slug}`)).status, 200, 'cancel keeps it');
  await page.waitForSelector('#comparison-delete');
  await Promise.all([page.waitForURL(`${app.base}/c/${slug}/delete`), page.click('#comparison-delete')]);
  await Promise.all([page.waitForURL(`${app.base}/comparisons?deleted=${slug}`), page.click('#delete-confirm')]);
  assert.match(await page.textContent('[data-testid=deleted-note]'), new RegExp(`/c/${slug} was deleted`));
  assert.equal(await page.$(`tr[data-slug="${slug}"]`), null, 'gone from the list');
  assert.equal((await fetch(`${app.base}/api/comparisons/${slug}`)).status, 404);
  for (const id of [a, b]) assert.equal((await fetch(`${app.base}/api/runs/${id}`)).status, 200, `run ${id} stays`);
  // Nothing lists the runs now: they may be deleted.
  assert.equal((await fetch(`${app.base}/api/runs/${a}`, { method: 'DELETE' })).status, 204);
  assert.deepEqual(errors, []);
  await page.close();
});
