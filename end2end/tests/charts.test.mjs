// The seed study's charts in a real browser with real fonts: the SVG scales to its card
// (phone and desktop), every label of the ladder is English and ends inside the chart,
// the study's Japanese names draw as glyphs (a CJK font is installed), bad chart
// parameters are named on the page, an empty CDF says why, and the log scale is offered
// for line charts only.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
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

/// The chart's SVG width against its card's content width, and the SVG's own size.
async function chartBox(page) {
  return page.evaluate(() => {
    const card = document.querySelector('.chart');
    const svg = card.querySelector('svg');
    const cs = getComputedStyle(card);
    const inner = card.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    return { svg: svg.getBoundingClientRect().width, inner, viewBox: svg.getAttribute('viewBox') };
  });
}

test('charts fill their card on a phone and on a desktop', async () => {
  for (const [width, query] of [[390, 'chart=ladder'], [390, ''], [1280, ''], [1280, 'chart=sweep']]) {
    const ctx = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await ctx.newPage();
    await page.goto(`${app.base}/c/${SLUG}?${query}`);
    const b = await chartBox(page);
    assert.match(b.viewBox, /^0 0 \d+ \d+$/);
    assert.ok(b.svg <= b.inner + 1, `${width}px ${query}: the chart (${b.svg}px) is wider than its card (${b.inner}px)`);
    assert.ok(b.svg >= b.inner - 1, `${width}px ${query}: the chart uses ${b.svg} of ${b.inner}px`);
    await ctx.close();
  }
});

test('the ladder is labelled in English and every label ends inside the chart', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  for (const query of ['chart=ladder&metric=tpot&p=99', 'chart=ladder', 'chart=ladder&metric=itl&p=median']) {
    await page.goto(`${app.base}/c/${SLUG}?${query}`);
    const out = await page.evaluate(() => {
      const svg = document.querySelector('.chart svg');
      const [, , w, h] = svg.getAttribute('viewBox').split(' ').map(Number);
      return [...svg.querySelectorAll('text')].map(t => {
        const b = t.getBBox();
        return { text: t.textContent.trim(), left: b.x, right: b.x + b.width, top: b.y, bottom: b.y + b.height, w, h };
      });
    });
    assert.ok(out.some(t => t.text.startsWith('Quantization: #5 SGLang FP8')), JSON.stringify(out.map(t => t.text)));
    for (const t of out) {
      assert.match(t.text, /^[\x20-\x7e]*$/, `not plain ASCII: ${t.text}`);
      assert.ok(t.left >= 0 && t.right <= t.w && t.top >= 0 && t.bottom <= t.h, `${query}: "${t.text}" spans ${t.left}..${t.right} of ${t.w}`);
    }
    // A latency that fell reads as a drop.
    assert.ok(out.filter(t => t.text.includes(' faster')).every(t => t.text.includes('(-')), JSON.stringify(out.map(t => t.text)));
  }
  // The study's own names are in the table under the chart, drawn with real glyphs.
  assert.match(await page.textContent('table.chart-ladder'), /量子化/);
  const glyphs = await page.evaluate(() => {
    const draw = (ch) => {
      const c = document.createElement('canvas');
      c.width = 40; c.height = 40;
      const ctx = c.getContext('2d');
      ctx.font = '32px sans-serif';
      ctx.fillText(ch, 2, 34);
      return ctx.getImageData(0, 0, 40, 40).data.join(',');
    };
    // Without a CJK font both come out as the same empty box.
    return draw('量') !== draw('子');
  });
  assert.ok(glyphs, 'Japanese text draws as boxes: no CJK font (scripts/setup.sh installs fonts-droid-fallback)');
  await page.close();
});

test('a bad chart parameter is named on the page, with a 400', async () => {
  const page = await browser.newPage();
  for (const [query, field] of [['metric=bogus', 'metric'], ['chart=pie', 'chart'], ['p=42', 'p']]) {
    const res = await page.goto(`${app.base}/c/${SLUG}?${query}`);
    assert.equal(res.status(), 400, query);
    const msg = await page.textContent('.chart .chart-error');
    assert.match(msg, new RegExp(`Bad chart parameter: ${field}: `), `${query}: ${msg}`);
    assert.equal(await page.$('.chart svg'), null, query);
  }
  await page.close();
});

test('an empty CDF says there is no per-request data; sweeps tick at whole concurrencies', async () => {
  const page = await browser.newPage();
  await page.goto(`${app.base}/c/${SLUG}?chart=cdf`);
  assert.match(await page.textContent('.chart'), /No per-request data/);
  assert.equal(await page.$$eval('.chart svg line, .chart svg polyline', e => e.length), 0, 'bare axes');
  await page.goto(`${app.base}/c/${SLUG}?chart=sweep&metric=tpot&log=1`);
  const nums = (await page.$$eval('.chart svg text', ts => ts.map(t => t.textContent.trim()))).filter(t => /^[\d.]+$/.test(t)).map(Number);
  for (const c of [1, 2, 4, 8]) assert.ok(nums.includes(c), `tick ${c} in ${nums}`);
  assert.ok(!nums.some(n => [0.5, 1.5, 2.5].includes(n)), `fractional concurrency ticks in ${nums}`);
  await page.close();
});

test('the log scale is offered for lines only', async () => {
  const page = await browser.newPage();
  await page.goto(`${app.base}/c/${SLUG}?chart=bars`);
  await page.waitForSelector('.chart[data-hydrated=true]', { state: 'attached', timeout: 30_000 });
  assert.equal(await page.isDisabled('input[name=log]'), true, 'bars: a log axis would make lengths lie');
  await page.selectOption('select[name=chart]', 'sweep');
  await page.waitForURL(/chart=sweep/);
  await page.waitForFunction(() => !document.querySelector('input[name=log]').disabled);
  await page.close();
});
