//! What the page objects share, so that each of them lists only its own test ids: the browser page it
//! drives, loading a path and waiting for hydration, the id a URL names, a workspace section's list
//! (table, empty state, a row per item) and one item's page (its id, its buttons, a status to wait for).

import { visit } from '../support/browser.js';

/** The number `pattern` (a RegExp with one group) finds in the current URL's path; `what` names the
 *  page expected, for the error when it is another one. */
export function idInUrl(page, pattern, what) {
  const m = new URL(page.url()).pathname.match(pattern);
  if (!m) throw new Error(`not on ${what}: ${page.url()}`);
  return Number(m[1]);
}

/** The base of every page object: the Playwright page it drives. */
export class PageObject {
  constructor(page) { this.page = page; }

  testId(id) { return this.page.getByTestId(id); }

  async visit(path) { await visit(this.page, path); }

  /** Fills a form's controls by test id (`<prefix>-<key>`): text typed in, a `<select>`'s option
   *  picked by value. */
  async fillByTestId(prefix, values) {
    for (const [field, value] of Object.entries(values)) {
      const input = this.testId(`${prefix}-${field}`);
      const tag = await input.evaluate((el) => el.tagName);
      if (tag === 'SELECT') await input.selectOption(String(value));
      else await input.fill(String(value));
    }
  }
}

/** A workspace section's list, `/w/<id>/<section>`: its table is `<section>-table`, its empty state
 *  `empty-<section>`, and each row `<row>-row-<key>` (`key` a name, a slug or an id). */
export class SectionPage extends PageObject {
  constructor(page, section, row) {
    super(page);
    this.section = section;
    this.rowPrefix = row;
  }

  async goto(workspaceId) { await this.visit(`/w/${workspaceId}/${this.section}`); }

  get table() { return this.testId(`${this.section}-table`); }
  get empty() { return this.testId(`empty-${this.section}`); }
  row(key) { return this.testId(`${this.rowPrefix}-row-${key}`); }
}

/** One item of a section, `/w/<id>/<section>/<item id>`: its buttons are `<prefix>-<name>` and its
 *  status badge carries `data-status`. */
export class ItemPage extends PageObject {
  /** `what`: the page in words, for errors ("a job page"). */
  constructor(page, { section, prefix, what }) {
    super(page);
    this.section = section;
    this.prefix = prefix;
    this.what = what;
  }

  /** The item id in the current URL. */
  id() { return idInUrl(this.page, new RegExp(`/${this.section}/(\\d+)$`), this.what); }

  /** Waits until the browser is on such a page (after a form that creates one); returns its id. */
  async opened() {
    await this.page.waitForURL(new RegExp(`/${this.section}/\\d+$`));
    return this.id();
  }

  async goto(workspaceId, id) { await this.visit(`/w/${workspaceId}/${this.section}/${id}`); }

  button(name) { return this.testId(`${this.prefix}-${name}`); }

  /** Presses `name` (a button that asks first), reads the question and answers yes; returns the
   *  question, which states what will happen. */
  async confirm(name) {
    await this.button(name).click();
    const question = (await this.button(`${name}-confirm`).locator('p').textContent()).trim();
    await this.button(`${name}-yes`).click();
    return question;
  }

  /** Deletes the item (confirming) and waits for the section's list. */
  async delete() {
    await this.confirm('delete');
    await this.page.waitForURL(new RegExp(`/${this.section}$`));
  }

  /** Waits for the element `css` to carry `data-status="<status>"` (pages poll or stream, so it may take
   *  a while: each page says how long its slowest move may take). */
  async waitForDataStatus(css, status, timeout) {
    await this.page.locator(`${css}[data-status="${status}"]`).waitFor({ timeout });
  }
}
