//! Page objects for the sweep pages: the list, the form (from a job: its fields by test id, a
//! parameter as how it varies and its values), and one sweep's page (status, counts, best trial,
//! trials table, buttons).

import { ItemPage, PageObject, SectionPage } from './page.js';

export class SweepsListPage extends SectionPage {
  /** Rows are `sweep-row-<id>`. */
  constructor(page) { super(page, 'sweeps', 'sweep'); }
}

export class SweepFormPage extends PageObject {
  /** A control by its test id without the `sweep-` prefix: `name`, `method`, `min-steps`, ... */
  input(field) { return this.page.getByTestId(`sweep-${field}`); }
  /** The error line under a field, by its path (`parameters.learning_rate`, `parallelism`). */
  fieldError(path) { return this.page.getByTestId(`${path}-error`); }
  get formError() { return this.page.getByTestId('form-error'); }

  /** Varies job field `name` (`learning_rate`, `seed`, ...): `how` is `values`, `uniform`,
   *  `log_uniform` or `int_uniform`, `text` the list or the range. */
  async vary(name, how, text) {
    await this.page.getByTestId(`sweep-param-${name}-distribution`).selectOption(how);
    await this.page.getByTestId(`sweep-param-${name}`).fill(text);
  }

  async fill(values) { await this.fillByTestId('sweep', values); }

  async submit() { await this.page.getByTestId('sweep-submit').click(); }

  /** Submits a valid form and waits for the new sweep's page; returns it. */
  async create() {
    await this.submit();
    const sweep = new SweepPage(this.page);
    await sweep.opened();
    return sweep;
  }
}

export class SweepPage extends ItemPage {
  constructor(page) { super(page, { section: 'sweeps', prefix: 'sweep', what: 'a sweep page' }); }

  get status() { return this.page.getByTestId('sweep-summary').getByTestId('sweep-status'); }
  get counts() { return this.page.getByTestId('sweep-counts'); }
  get best() { return this.page.getByTestId('sweep-best'); }
  get trialRows() { return this.page.getByTestId('trials-table').locator('tbody tr'); }

  /** The sweep page reads itself again every few seconds: a sweep of tiny trials ends in a minute. */
  async waitForStatus(status, timeout = 240_000) {
    await this.waitForDataStatus('[data-testid="sweep-summary"] [data-testid="sweep-status"]', status, timeout);
  }
}
