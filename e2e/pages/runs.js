//! Page objects for runs: the jobs list as a table of runs (filters and order in the URL, rows ticked
//! to compare) and the comparison page (curves, the sortable table with its CSV, parallel coordinates).

import { PageObject } from './page.js';

export class RunsPage extends PageObject {
  async goto(workspaceId, query = '') { await this.visit(`/w/${workspaceId}/jobs${query}`); }

  /** A filter or the order by its test id without the `filter-` prefix: `status`, `sweep`, ... */
  filter(name) { return this.page.getByTestId(name === 'sort' ? 'sort' : `filter-${name}`); }
  get rows() { return this.page.getByTestId('jobs-table').locator('tbody tr'); }
  get compareButton() { return this.page.getByTestId('compare-runs'); }

  /** Chooses `value` in filter `name` and waits for the URL to say `word`, then for the rows of that
   *  view (until its list arrives, the rows shown are the previous view's). */
  async choose(name, value, word) {
    await this.filter(name).selectOption(String(value));
    await this.page.waitForURL(new RegExp(word.replace(/[?]/g, '\\?')));
    const url = new URL(this.page.url());
    await this.page.getByTestId('run-actions').and(this.page.locator(`[data-shown="${url.pathname}${url.search}"]`)).waitFor();
  }

  /** The rows' best scores, top to bottom (NaN where a run has none). */
  async bestScores() {
    return (await this.rows.getByTestId('job-best').evaluateAll((cells) => cells.map((c) => c.dataset.value)))
      .map((v) => (v === undefined ? NaN : Number(v)));
  }

  /** Ticks the first `n` rows and opens their comparison; returns it. */
  async compareFirst(n) {
    for (let i = 0; i < n; i += 1) await this.rows.nth(i).getByTestId('run-pick').check();
    await this.compareButton.click();
    const compare = new ComparePage(this.page);
    await compare.opened();
    return compare;
  }
}

export class ComparePage extends PageObject {
  async opened() {
    await this.page.waitForURL(/\/compare\?jobs=/);
    await this.page.getByTestId('compare-table').waitFor();
  }

  get runs() { return this.page.getByTestId('compared-run'); }
  get rows() { return this.page.getByTestId('compare-row'); }
  get headings() { return this.page.getByTestId('compare-table').locator('thead th'); }
  get lines() { return this.page.getByTestId('parcoords-line'); }
  get chart() { return this.page.getByTestId('compare-chart'); }
  get series() { return this.page.getByTestId('compare-series'); }
  get csv() { return this.page.getByTestId('compare-csv'); }

  /** Sorts by the column whose heading says `text` (a click; again for the other way). */
  async sortBy(text) {
    await this.headings.filter({ hasText: text }).getByTestId('compare-sort').click();
  }

  /** The cells of column `index` (0 = the run), top to bottom. */
  async column(index) {
    return this.rows.evaluateAll((rows, i) => rows.map((r) => r.children[i].textContent.trim()), index);
  }
}
