//! The browser side of every spec: Debian's Chromium driven by playwright-core (no browser
//! download), one isolated context per person, and a screenshot of each page visited.

import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const screenshotDir = path.resolve(here, '..', 'screenshots');

/** Flags that keep Chromium from reaching out to the network or needing a GPU or sandbox. */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
  });
}

/** The viewport of the narrow-screen checks: a 375 px wide phone. */
export const PHONE = { width: 375, height: 740 };

/** A fresh context (its own cookies) for one person. The English `locale` is deliberate: Paddock
 *  must still open in Simplified Chinese, its default, whatever the browser prefers. */
export async function newPerson(browser, baseURL, { width = 1280, height = 860 } = {}) {
  const context = await browser.newContext({ baseURL, locale: 'en-US', viewport: { width, height } });
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  // Failed requests (a 401 from a server function) are expected in some steps; what must never
  // appear is a wasm panic or a hydration mismatch, which Leptos reports on the console.
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /panicked|hydrat|unreachable|RuntimeError/i.test(msg.text())) {
      problems.push(`console error: ${msg.text()}`);
    }
  });
  return { context, page, problems };
}

/** Runs `steps(page)` in the browser of a person met on the way (a colleague, the owner on a phone),
 *  then checks that none of their pages panicked or failed to hydrate; their context is closed whether
 *  or not a step failed, so a failure does not leave it open for the rest of the spec. */
export async function withPerson(person, steps) {
  try {
    await steps(person.page);
    assert.deepEqual(person.problems, []);
  } finally {
    await person.context.close();
  }
}

/** Saves `screenshots/<name>.png` (full page). */
export async function screenshot(page, name) {
  await mkdir(screenshotDir, { recursive: true });
  await page.screenshot({ path: path.join(screenshotDir, `${name}.png`), fullPage: true });
}

/** Waits until the wasm bundle has hydrated the page (the app marks `<html data-hydrated>` from an
 *  effect, and effects only run in the browser after hydration). */
export async function hydrated(page) {
  await page.waitForSelector('html[data-hydrated="true"]', { state: 'attached' });
}

/** Loads `path` (a full page load, not client-side navigation) and waits for hydration. */
export async function visit(page, path) {
  await page.goto(path);
  await hydrated(page);
}

/** Plants a value on `window`; it survives client-side navigation and re-rendering but not a
 *  full page load, so finding it again proves the page was not reloaded. */
export async function plantMarker(page) {
  const marker = `m-${Math.random().toString(36).slice(2)}`;
  await page.evaluate((m) => { window.__marker = m; }, marker);
  return marker;
}

export async function readMarker(page) {
  return page.evaluate(() => window.__marker ?? null);
}
