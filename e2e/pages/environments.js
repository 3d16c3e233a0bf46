//! Page objects for the environment pages: the list, the create/edit form, and one environment's page
//! (status and lifecycle buttons, lock and build log, usage, terminal, events).

import { ItemPage, PageObject, SectionPage } from './page.js';

export class EnvironmentsListPage extends SectionPage {
  constructor(page) { super(page, 'environments', 'env'); }

  get newButton() { return this.page.getByTestId('new-environment'); }
  get editorOnlyNote() { return this.page.getByTestId('environments-editor-only'); }
  get dockerBanner() { return this.page.getByTestId('docker-unavailable'); }

  async open(name) {
    await this.row(name).getByTestId('env-link').click();
    await this.page.waitForURL(/\/environments\/\d+$/);
  }
}

export class EnvironmentFormPage extends PageObject {
  async gotoNew(workspaceId) { await this.visit(`/w/${workspaceId}/environments/new`); }

  input(field) { return this.page.getByTestId(`env-${field}`); }
  /** The error shown under a field: `name`, `memory`, `cpus`, `shm-size`, `gpus`, ... */
  fieldError(field) { return this.page.getByTestId(`env-${field}-error`); }
  get formError() { return this.page.getByTestId('form-error'); }
  get submitButton() { return this.page.getByTestId('env-submit'); }

  /** Fills what is given (keys as the test ids: `name`, `cpus`, `memory`, `shm-size`, ...). */
  async fill(values) {
    for (const [field, value] of Object.entries(values)) {
      await this.input(field).fill(String(value));
    }
  }

  async submit() { await this.submitButton.click(); }
}

export class EnvironmentPage extends ItemPage {
  constructor(page) { super(page, { section: 'environments', prefix: 'env', what: 'an environment page' }); }

  get status() { return this.page.getByTestId('env-status'); }
  get buildStatus() { return this.page.getByTestId('env-build-status'); }
  get buildLog() { return this.page.getByTestId('build-log'); }
  get imageId() { return this.page.getByTestId('env-image-id'); }
  get buildHash() { return this.page.getByTestId('env-build-hash'); }
  get specHash() { return this.page.getByTestId('env-spec-hash'); }
  get dockerfile() { return this.page.getByTestId('env-dockerfile'); }
  get actions() { return this.page.getByTestId('env-actions'); }
  get stats() { return this.page.getByTestId('env-stats'); }
  get events() { return this.page.getByTestId('env-events'); }
  get terminalOpen() { return this.page.getByTestId('terminal-open'); }
  get terminal() { return this.page.getByTestId('terminal'); }

  /** Waits for a `data-status` on the status badge (`running`, `stopped`, ...). */
  async waitForStatus(status, timeout = 120_000) {
    await this.waitForDataStatus('[data-testid="env-status"]', status, timeout);
  }

  async waitForBuild(status, timeout = 180_000) {
    await this.waitForDataStatus('[data-testid="env-build-status"]', status, timeout);
  }

  async openTerminal() {
    await this.terminalOpen.click();
    await this.page.locator('[data-testid="terminal"][data-state="open"]').waitFor();
    await this.terminal.locator('.xterm-screen').click();
  }

  /** The terminal's screen as lines of text (xterm's DOM renderer; no-break spaces made plain). */
  async terminalLines() {
    return this.terminal.evaluate((el) => [...el.querySelectorAll('.xterm-rows > div')]
      .map((row) => row.textContent.replace(/\u00a0/g, ' ').trimEnd()));
  }

  /** Types a command line and waits for a line of output that is exactly `expected`. */
  async runInTerminal(command, expected, timeout = 30_000) {
    await this.page.keyboard.type(command);
    await this.page.keyboard.press('Enter');
    await this.page.waitForFunction(
      ({ want }) => [...document.querySelectorAll('[data-testid="terminal"] .xterm-rows > div')]
        .some((row) => row.textContent.replace(/\u00a0/g, ' ').trim() === want),
      { want: expected },
      { timeout },
    );
  }

  /** Runs a command line and returns the first new line of output matching `pattern` (a RegExp
   *  matched against the trimmed line). */
  async readFromTerminal(command, pattern, timeout = 30_000) {
    const matching = (lines) => lines.map((l) => l.trim()).filter((l) => pattern.test(l));
    const before = matching(await this.terminalLines()).length;
    await this.page.keyboard.type(command);
    await this.page.keyboard.press('Enter');
    const found = await this.page.waitForFunction(
      ({ source, flags, before }) => {
        const re = new RegExp(source, flags);
        const lines = [...document.querySelectorAll('[data-testid="terminal"] .xterm-rows > div')]
          .map((row) => row.textContent.replace(/\u00a0/g, ' ').trim())
          .filter((l) => re.test(l));
        return lines.length > before ? lines[before] : null;
      },
      { source: pattern.source, flags: pattern.flags, before },
      { timeout },
    );
    return found.jsonValue();
  }

  /** The terminal's size in cells, as xterm.js has fitted it to the element. */
  async terminalCells() {
    return this.terminal.evaluate((el) => ({ rows: el.term.rows, cols: el.term.cols }));
  }
}
