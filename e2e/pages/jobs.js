//! Page objects for the job pages: the list, the job form (fields by their test ids, errors under each
//! field), and one job's page (status, progress, live charts, log search, checkpoints, buttons); and the
//! Models page's checkpoint list; and the evaluations card both show.

import { ItemPage, PageObject, SectionPage } from './page.js';

export class JobsListPage extends SectionPage {
  /** Rows are `job-row-<id>`. */
  constructor(page) { super(page, 'jobs', 'job'); }

  get newButton() { return this.page.getByTestId('new-job'); }
  rows() { return this.page.locator('[data-testid^="job-row-"]'); }
}

export class JobFormPage extends PageObject {
  async goto(workspaceId, query = '') { await this.visit(`/w/${workspaceId}/jobs/new${query}`); }

  /** A control by its test id without the `job-` prefix: `name`, `learning-rate`, `preset`, ... */
  input(field) { return this.page.getByTestId(`job-${field}`); }
  fieldError(field) { return this.page.getByTestId(`job-${field}-error`); }
  get formError() { return this.page.getByTestId('form-error'); }

  /** Fills text inputs and picks `<select>` options (keys as the test ids without `job-`). */
  async fill(values) { await this.fillByTestId('job', values); }

  async submit() { await this.page.getByTestId('job-submit').click(); }

  /** Submits a valid form and waits for the new job's page; returns it. */
  async create() {
    await this.submit();
    const job = new JobPage(this.page);
    await job.opened();
    return job;
  }
}

export class JobPage extends ItemPage {
  constructor(page) { super(page, { section: 'jobs', prefix: 'job', what: 'a job page' }); }

  get status() { return this.page.getByTestId('job-status-card').getByTestId('job-status'); }
  get progress() { return this.page.getByTestId('job-status-card').getByTestId('job-progress'); }
  get toml() { return this.page.getByTestId('job-toml'); }
  get log() { return this.page.getByTestId('job-log'); }
  get logState() { return this.page.getByTestId('log-state'); }
  /** The log's entries (one element each; an entry may span several lines). */
  get logLines() { return this.log.locator('.log-line'); }
  get checkpointRows() { return this.page.getByTestId('checkpoint-row'); }
  /** The `<paddock-chart>` of one chart: `loss`, `eval`, `lr`, `speed`. */
  chart(name) { return this.page.getByTestId(`chart-${name}`).locator('paddock-chart'); }

  async waitForStatus(status, timeout = 180_000) {
    await this.waitForDataStatus('[data-testid="job-status-card"] [data-testid="job-status"]', status, timeout);
  }

  /** How many points a chart holds now (0 before it is drawn). */
  async chartPoints(name) {
    return Number((await this.chart(name).getAttribute('data-points')) ?? 0);
  }

  /** Starts recording, in the page, every (loss chart points, job status) pair it goes through; the
   *  record lives on `window` and so survives client-side navigation. */
  async recordChart() {
    await this.page.evaluate(() => {
      window.__chartRecord = [];
      window.__chartTimer = setInterval(() => {
        const chart = document.querySelector('[data-testid="chart-loss"] paddock-chart');
        const status = document.querySelector('[data-testid="job-status-card"] [data-testid="job-status"]');
        if (!chart || !status) return;
        const entry = { points: Number(chart.dataset.points ?? 0), status: status.dataset.status };
        const last = window.__chartRecord.at(-1);
        if (!last || last.points !== entry.points || last.status !== entry.status) window.__chartRecord.push(entry);
      }, 20);
    });
  }

  async chartRecord() {
    return this.page.evaluate(() => {
      clearInterval(window.__chartTimer);
      return window.__chartRecord ?? [];
    });
  }

  async searchLog(text) {
    await this.page.getByTestId('log-search').fill(text);
    await this.page.getByTestId('log-search-submit').click();
  }
}

/** Models: every checkpoint of the workspace with its job (a list of checkpoints, not a section table). */
export class ModelsPage extends PageObject {
  async goto(workspaceId) { await this.visit(`/w/${workspaceId}/models`); }

  get rows() { return this.page.getByTestId('checkpoint-row'); }
}

/** The evaluations card on a job's page and on Models: the form (editors) and the results. */
export class EvaluationsPanel extends PageObject {
  get form() { return this.page.getByTestId('evaluate-form'); }
  get error() { return this.form.getByTestId('error'); }
  get empty() { return this.page.getByTestId('evaluations-empty'); }
  get rows() { return this.page.getByTestId('evaluation-row'); }
  /** The first evaluation row with this status (`queued`, `running`, `succeeded`, `failed`). */
  row(status) { return this.page.locator(`[data-testid="evaluation-row"][data-status="${status}"]`).first(); }

  /** Evaluates the first checkpoint offered (the newest) on dataset `datasetId`. */
  async evaluate(datasetId) {
    await this.form.getByTestId('evaluate-dataset').selectOption(String(datasetId));
    await this.form.getByTestId('evaluate-submit').click();
  }
}
