//! Page objects for the endpoint pages: the Deploy form opened from a checkpoint, the list, and one
//! endpoint's page (status, parity report, replicas, traffic, playground, keys, call examples, buttons).

import assert from 'node:assert/strict';

import { hydrated } from '../support/browser.js';
import { ItemPage, PageObject, SectionPage } from './page.js';

/** The Deploy form of a checkpoints table (a job's page or Models). */
export class DeployDialog extends PageObject {
  get dialog() { return this.page.getByTestId('deploy-dialog'); }
  input(field) { return this.page.getByTestId(`deploy-${field}`); }

  /** Opens the form from the first checkpoint that can be deployed, noting that row's state. */
  async open() {
    const row = this.page.locator('[data-testid="checkpoint-row"]:has([data-testid="checkpoint-deploy"])').first();
    this.state = await row.getAttribute('data-state');
    await row.getByTestId('checkpoint-deploy').click();
    await this.dialog.waitFor();
  }

  async submit() { await this.page.getByTestId('deploy-submit').click(); }

  async close() {
    await this.page.getByTestId('deploy-dialog-close').click();
    await this.dialog.waitFor({ state: 'detached' });
  }

  /** Submits the form and waits for the new endpoint's page; returns it. A checkpoint that learned
   *  nothing deploys only once its warning is ticked: this ticks it, after checking that the warning
   *  shows for exactly such a checkpoint. */
  async deploy() {
    const degenerate = this.state === 'degenerate';
    // The form (and the warning in it) shows once the server's precision advice is read, which the
    // first deploy on a server measures: counted before that, a warning would not be there yet.
    await this.input('submit').waitFor();
    assert.equal(await this.page.getByTestId('deploy-degenerate').count(), degenerate ? 1 : 0, `a ${this.state} checkpoint`);
    if (degenerate) await this.page.getByTestId('deploy-degenerate-ack').check();
    await this.submit();
    const endpoint = new EndpointPage(this.page);
    await endpoint.opened();
    return endpoint;
  }
}

/** Rows are `endpoint-row-<slug>`. */
export class EndpointsListPage extends SectionPage {
  constructor(page) { super(page, 'endpoints', 'endpoint'); }
}

export class EndpointPage extends ItemPage {
  constructor(page) { super(page, { section: 'endpoints', prefix: 'endpoint', what: 'an endpoint page' }); }

  async goto(workspaceId, endpointId) {
    await super.goto(workspaceId, endpointId);
    await this.whenLive();
  }

  /** Waits until the endpoint's own view has hydrated, not only the shell: the curl example gets the
   *  server's address from an effect, and effects run once the view is live, so its buttons work. */
  async whenLive() {
    await hydrated(this.page);
    await this.curl.filter({ hasText: 'http://' }).waitFor();
  }

  get statusCard() { return this.page.getByTestId('endpoint-status-card'); }
  get status() { return this.statusCard.getByTestId('endpoint-status'); }
  get replicas() { return this.statusCard.getByTestId('endpoint-replicas'); }
  get parity() { return this.page.getByTestId('parity-report'); }
  get replicaRows() { return this.page.getByTestId('replica-row'); }
  get actions() { return this.page.getByTestId('endpoint-actions'); }
  get manage() { return this.page.getByTestId('endpoint-manage'); }
  get keyForm() { return this.page.getByTestId('key-form'); }
  get secret() { return this.page.getByTestId('new-key-secret'); }
  get curl() { return this.page.getByTestId('snippet-curl'); }
  get python() { return this.page.getByTestId('snippet-python'); }
  get results() { return this.page.getByTestId('playground-result'); }
  metric(name) { return this.page.getByTestId(`metric-${name}`); }

  async waitForStatus(status, timeout = 240_000) {
    await this.waitForDataStatus('[data-testid="endpoint-status-card"] [data-testid="endpoint-status"]', status, timeout);
  }

  /** The slug, read from the URL the curl example calls. */
  async slug() {
    const m = (await this.curl.textContent()).match(/\/v1\/endpoints\/([a-z0-9-]+)\/predict/);
    if (!m) throw new Error('no predict URL in the curl example');
    return m[1];
  }

  /** Types `texts` (one per line) into the playground and presses Predict. */
  async predict(texts) {
    await this.page.getByTestId('playground-input').fill(texts.join('\n'));
    await this.page.getByTestId('playground-submit').click();
  }

  /** Types `pairs` (`[first, second]` each) into a matching endpoint's two boxes, a pair per line, and
   *  presses Predict. */
  async predictPairs(pairs) {
    await this.page.getByTestId('playground-input').fill(pairs.map((p) => p[0]).join('\n'));
    await this.page.getByTestId('playground-input-b').fill(pairs.map((p) => p[1]).join('\n'));
    await this.page.getByTestId('playground-submit').click();
  }

  /** One playground answer: its label and every label's probability, as the page shows them. */
  async result(index) {
    const result = this.results.nth(index);
    return {
      label: (await result.getByTestId('playground-label').textContent()).trim(),
      probabilities: await result.getByTestId('playground-probability').evaluateAll((rows) =>
        rows.map((r) => ({ label: r.dataset.label, probability: Number(r.dataset.probability) }))),
    };
  }

  /** Creates a key and returns its secret as the page shows it (once). */
  async createKey(name, perMinute) {
    await this.page.getByTestId('key-name').fill(name);
    if (perMinute !== undefined) await this.page.getByTestId('key-rate').fill(String(perMinute));
    await this.page.getByTestId('key-submit').click();
    await this.secret.waitFor();
    return (await this.secret.textContent()).trim();
  }
}
