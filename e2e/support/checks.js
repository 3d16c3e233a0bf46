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
