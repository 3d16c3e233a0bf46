//! Page objects for the dataset pages: the list with its upload form (file, name, columns, progress bar,
//! the problems of a refused file), the sample button and delete; one dataset's page with its report,
//! preview and download link.

import { ItemPage, SectionPage } from './page.js';

export class DatasetsListPage extends SectionPage {
  constructor(page) { super(page, 'datasets', 'dataset'); }

  get uploadForm() { return this.page.getByTestId('dataset-upload-form'); }
  get nameInput() { return this.page.getByTestId('dataset-name'); }
  get fileInput() { return this.page.getByTestId('dataset-file'); }
  get fileError() { return this.page.getByTestId('dataset-file-error'); }
  get problems() { return this.page.getByTestId('dataset-problems'); }
  get sampleButton() { return this.page.getByTestId('dataset-sample'); }

  /** Chooses `file` (a path) and submits the form; `name` replaces the default (the file's stem). */
  async upload(file, name) {
    await this.fileInput.setInputFiles(file);
    if (name !== undefined) await this.nameInput.fill(name);
    await this.page.getByTestId('dataset-upload-submit').click();
  }

  /** Uploads `file` (a path) under its own name and waits for the new dataset's page; returns its id. */
  async create(file) {
    await this.upload(file);
    return new DatasetPage(this.page).opened();
  }

  /** Adds the one-click sample of `task` (`classification`: reviews, `matching`: question pairs,
   *  `ner`: sentences with entities) and waits for its page; returns its id. */
  async createSample(task = 'classification') {
    const testid = task === 'classification' ? 'dataset-sample' : `dataset-sample-${task}`;
    await this.page.getByTestId(testid).click();
    return new DatasetPage(this.page).opened();
  }

  /** Deletes a row's dataset (confirming); the outcome is the caller's to check. */
  async delete(name) {
    await this.row(name).getByTestId('dataset-delete').click();
    await this.row(name).getByTestId('dataset-delete-yes').click();
  }
}

export class DatasetPage extends ItemPage {
  constructor(page) { super(page, { section: 'datasets', prefix: 'dataset', what: 'a dataset page' }); }

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
