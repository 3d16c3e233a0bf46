//! Assertions the specs share: accessibility basics every page must meet, a layout check for narrow
//! (375 px) screens, and one that an action is in view without scrolling sideways.

import assert from 'node:assert/strict';

/** Landmarks, a heading, a label for every form control, and the skip link. */
export async function assertAccessibleBasics(page) {
  const report = await page.evaluate(() => {
    const controls = [...document.querySelectorAll('input:not([type=hidden]), select, textarea')];
    const unlabelled = controls
      .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
      .map((el) => el.outerHTML.slice(0, 120));
    const buttonsWithoutName = [...document.querySelectorAll('button')]
      .filter((b) => !(b.textContent.trim() || b.getAttribute('aria-label')))
      .map((b) => b.outerHTML.slice(0, 120));
    return {
      mains: document.querySelectorAll('main').length,
      h1s: document.querySelectorAll('h1').length,
      lang: document.documentElement.lang,
      skipLink: !!document.querySelector('a.skip-link[href="#main"]'),
      unlabelled,
      buttonsWithoutName,
    };
  });
  assert.equal(report.mains, 1, 'exactly one <main> landmark');
  assert.equal(report.h1s, 1, 'exactly one <h1>');
  assert.ok(['zh', 'en'].includes(report.lang), `<html lang> is set (got ${report.lang})`);
  assert.ok(report.skipLink, 'a skip link to #main');
  assert.deepEqual(report.unlabelled, [], 'every form control has a label');
  assert.deepEqual(report.buttonsWithoutName, [], 'every button has an accessible name');
}

/** Nothing wider than the viewport (no sideways scrolling of the page itself). */
export async function assertNoHorizontalOverflow(page) {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  }));
  assert.ok(scrollWidth <= innerWidth, `page is ${scrollWidth}px wide in a ${innerWidth}px viewport`);
}

/** `locator` is seen whole without scrolling sideways: inside the viewport and inside every box around
 *  it that clips (a table that scrolls on its own, say). `what` names it in the failure. */
export async function assertInView(locator, what) {
  const box = await locator.evaluate((el) => {
    const r = el.getBoundingClientRect();
    let [left, right] = [0, window.innerWidth];
    for (let p = el.parentElement; p; p = p.parentElement) {
      if (/(auto|scroll|hidden|clip)/.test(getComputedStyle(p).overflowX)) {
        const c = p.getBoundingClientRect();
        [left, right] = [Math.max(left, c.left), Math.min(right, c.right)];
      }
    }
    return { left: r.left, right: r.right, width: r.width, clipLeft: left, clipRight: right };
  });
  assert.ok(box.width > 0 && box.left >= box.clipLeft - 1 && box.right <= box.clipRight + 1,
    `${what} is in view without scrolling: ${JSON.stringify(box)}`);
}

/** Waits for `locator` to show `text`, a string or a RegExp (it may be rendering or re-rendering). */
export async function waitForText(locator, text) {
  await locator.filter({ hasText: text }).first().waitFor();
}

/** Words a Chinese page shows as they are: formats, units, standards and product names — what a Chinese
 *  engineer writes in Latin letters too. Anything else in Latin letters is English that was not
 *  translated. */
const TERMS = [
  'ERNIE', 'GPU', 'GPUs', 'CPU', 'CUDA', 'API', 'URL', 'JSON', 'JSONL', 'CSV', 'TSV', 'UTF', 'GBK', 'GB', 'QoS',
  'Big5', 'Docker', 'HTTP', 'HTTPS', 'REST', 'macro', 'fp32', 'fp16', 'bf16', 'AVX512', 'BF16', 'AVX',
  'curl', 'Python', 'Bearer', 'TOML', 'logits', 'token', 'tokens', 'slug', 'SHA', 'sha256', 'KiB', 'MiB',
  'GiB', 'QPS', 'p50', 'p95', 'p99', 'Ctrl', 'Shift', 'Hugging', 'Face', 'PaddleNLP', 'tar', 'max_seq_len',
  'WordPiece', 'Paddock', 'UTC', 'CLS', 'SEP', 'Paddle', 'PaddlePaddle',
  // Precision: the value `auto` and what decides it (bfloat16, Intel's AMX tiles, NVIDIA's Ampere).
  'auto', 'bfloat', 'AMX', 'Ampere', 'NVIDIA',
  // The header, placeholder and library the endpoint's call snippets name in their sentences.
  'Authorization', 'YOUR_API_KEY', 'requests',
];

/** The words in `text` that are neither technical terms nor in `allowed` (names the test gave). */
export function englishWords(text, allowed = []) {
  const ok = new Set([...TERMS, ...allowed].map((w) => w.toLowerCase()));
  // File names, paths and commands (`config.json`, `/v1/endpoints/<slug>/predict`, `paddock eval`) are
  // what they are. (Dotted words such as `job.cancel` go with them: a test that cares about one checks
  // its words itself, as the activity step does.)
  const prose = text
    .replace(/[\w./-]*\w\.[a-z][a-z0-9]{1,11}\b/g, ' ')
    .replace(/(^|[\s（(])\/[\w<>{}./-]+/g, ' ')
    .replace(/\bpaddock [a-z][a-z-]*/g, ' ');
  const words = prose.match(/[A-Za-z][A-Za-z_]{2,}/g) || [];
  return [...new Set(words.filter((w) => !ok.has(w.toLowerCase())))];
}

/** `text`, shown on a Chinese page, has no English beyond technical terms, numbers and `allowed`. */
export function assertNotEnglish(text, allowed = [], where = 'the page') {
  const words = englishWords(text, allowed);
  assert.deepEqual(words, [], `English on ${where}: ${words.join(', ')} in «${text.replace(/\s+/g, ' ').slice(0, 600)}»`);
}

/** Every sentence in the page's main area is Chinese: what the server said included (statuses, reasons,
 *  report lines, errors). Code, commands, logs and the terminal are what they are and are left out, as
 *  are the names in `allowed` (of datasets, jobs, people the test made). */
export async function assertPageNotEnglish(page, allowed = []) {
  const text = await page.locator('main').evaluate((main) => {
    const copy = main.cloneNode(true);
    copy.querySelectorAll('code, pre, kbd, samp, script, style, svg, [translate="no"], [data-raw]').forEach((e) => e.remove());
    // Text node by text node, so that the words of neighbouring cells stay apart.
    const walker = document.createTreeWalker(copy, NodeFilter.SHOW_TEXT);
    const parts = [];
    while (walker.nextNode()) parts.push(walker.currentNode.nodeValue);
    return parts.join(' ');
  });
  assertNotEnglish(text, allowed, page.url().replace(/^https?:\/\/[^/]+/, ''));
}
