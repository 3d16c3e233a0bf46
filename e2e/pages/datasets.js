//! Page objects for the dataset pages: the list with its upload form (file, name, columns, progress bar,
//! the problems of a refused file), the sample button and delete; one dataset's page with its report,
//! preview and download link.

import { hydrated } from '../support/browser.js';

export class DatasetsListPage {
  constructor(page) { this.page = page; }

  async goto(workspaceId) {
    await this.page.goto(`/w/${workspaceId}/datasets`);
    await hydrated(this.page);
  }

  get table() { return this.page.getByTestId('datasets-table'); }
  get empty() { return this.page.getByTestId('empty-datasets'); }
  get uploadForm() { return this.page.getByTestId('dataset-upload-form'); }
  get nameInput() { return this.page.getByTestId('dataset-name'); }
  get fileInput() { return this.page.getByTestId('dataset-file'); }
  get fileError() { return this.page.getByTestId('dataset-file-error'); }
  get problems() { return this.page.getByTestId('dataset-problems'); }
  get sampleButton() { return this.page.getByTestId('dataset-sample'); }
  row(name) { return this.page.getByTestId(`dataset-row-${name}`); }

  /** Chooses `file` (a path) and submits the form; `name` replaces the default (the file's stem). */
  async upload(file, name) {
    await this.fileInput.setInputFiles(file);
    if (name !== undefined) await this.nameInput.fill(name);
    await this.page.getByTestId('dataset-upload-submit').click();
  }

  /** Deletes a row's dataset (confirming); the outcome is the caller's to check. */
  async delete(name) {
    await this.row(name).getByTestId('dataset-delete').click();
    await this.row(name).getByTestId('dataset-delete-yes').click();
  }
}

export class DatasetPage {
  constructor(page) { this.page = page; }

  /** The dataset id in the current URL. */
  id() {
    const m = new URL(this.page.url()).pathname.match(/\/datasets\/(\d+)$/);
    if (!m) throw new Error(`not on a dataset page: ${this.page.url()}`);
    return Number(m[1]);
  }

  get report() { return this.page.getByTestId('dataset-report'); }
  get rows() { return this.page.getByTestId('report-rows'); }
  get validRows() { return this.page.getByTestId('report-valid-rows'); }
  get labels() { return this.page.getByTestId('report-labels'); }
  get histogram() { return this.page.getByTestId('report-histogram'); }
  get preview() { return this.page.getByTestId('dataset-preview'); }
  get previewRows() { return this.page.getByTestId('preview-row'); }
  get sha256() { return this.page.getByTestId('dataset-sha256'); }
  get download() { return this.page.getByTestId('dataset-download'); }
  get trainButton() { return this.page.getByTestId('dataset-train'); }
}
