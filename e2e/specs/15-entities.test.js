//! Story: a team that pulls people, places and organisations out of Chinese text (in Chinese, the
//! default language) adds the entity sample with one click, sees that it is entity data with its types,
//! starts a job from it — the form has chosen entity extraction and shows the types the data has —
//! trains a tiny model, evaluates it (entity F1, a row per type, a confusion with "no entity"), deploys
//! it, and types sentences into the playground:
//! the entities come back marked in the text, each with its type, and listed with their characters.
//! Switched to English, the playground says the same in English.
//!
//! Which entities a tiny model finds after seconds of training is not asserted one by one: only that
//! it finds some in sentences of its training data, and that every mark is the text at its offsets.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startStory } from '../support/story.js';
import { screenshot } from '../support/browser.js';
import { assertAccessibleBasics, waitForText } from '../support/checks.js';
import { DatasetsListPage } from '../pages/datasets.js';
import { EvaluationsPanel, JobFormPage } from '../pages/jobs.js';
import { DeployDialog, EndpointPage } from '../pages/endpoints.js';
import { Shell } from '../pages/shell.js';

/** Sentences of the sample's training file: a model trained on it for seconds marks something here. */
const TEXTS = [
  '请把材料交给联合国大会的尹志平。',
  '这次会议由清华大学主办，商务印书馆协办。',
  '中国区发布了新的管理办法。',
];

describe('entity extraction: entity data, an entity job, an endpoint that marks entities', () => {
  const story = startStory({ owner: 'qiao', workspace: '实体抽取' });
  let datasetId;

  test('the entity sample is entity data with its types', async () => {
    const { page } = story.owner;
    const datasets = new DatasetsListPage(page);
    await datasets.goto(story.workspaceId);
    datasetId = await datasets.createSample('ner');
    await waitForText(page.getByTestId('dataset-task'), '实体抽取');
    assert.equal(await page.getByTestId('dataset-task').getAttribute('data-task'), 'ner');
    await assertAccessibleBasics(page);
  });

  test('a job from it extracts entities, and trains', async () => {
    const { page } = story.owner;
    const form = new JobFormPage(page);
    await form.goto(story.workspaceId, `?dataset=${datasetId}`);
    assert.equal(await form.input('task').inputValue(), 'ner', 'the data decides the task');
    await waitForText(page.locator('#job-dataset-hint'), 'PER');
    await form.fill({
      name: 'people-places',
      preset: 'tiny',
      'max-seq-len': 64,
      'batch-size': 32,
      'learning-rate': '0.003',
      'max-steps': 120,
      'eval-every-steps': 60,
    });
    const job = await form.create();
    await job.waitForStatus('succeeded');
    await job.checkpointRows.first().waitFor();
  });

  test('evaluated on its data, it is scored by entity type', async () => {
    const { page } = story.owner;
    const evaluations = new EvaluationsPanel(page);
    await evaluations.evaluate(datasetId);
    const row = evaluations.row('succeeded');
    await row.waitFor({ timeout: 120_000 });
    assert.match((await row.getByTestId('evaluation-entity-f1').textContent()).trim(), /[01]\.\d{4}/);
    await page.getByTestId('evaluation-details').locator('summary').click();
    const types = await page.getByTestId('evaluation-per-class').locator('tbody th').allTextContents();
    assert.deepEqual(types, ['LOC', 'ORG', 'PER'], 'one row per entity type');
    const cells = await page.getByTestId('confusion-matrix').getByTestId('confusion-cell').count();
    assert.equal(cells, 16, 'three types and "no entity", both ways');
    await assertAccessibleBasics(page);
    await screenshot(page, '15-entities-evaluation');
  });

  test('deployed, it marks the entities of each text in the playground', async () => {
    const { page } = story.owner;
    const deploy = new DeployDialog(page);
    await deploy.open();
    const endpoint = await deploy.deploy();
    await endpoint.waitForStatus('ready');
    assert.equal(await endpoint.parity.getAttribute('data-passed'), 'true', 'token logits agree');
    await waitForText(endpoint.python, 'entities');
    await endpoint.predict(TEXTS);
    await endpoint.results.nth(TEXTS.length - 1).waitFor();
    let marked = 0;
    for (const [i, text] of TEXTS.entries()) {
      const result = endpoint.results.nth(i);
      const rows = await result.getByTestId('playground-entity-row').evaluateAll((items) =>
        items.map((li) => ({ label: li.dataset.label, start: Number(li.dataset.start), end: Number(li.dataset.end) })));
      const marks = await result.getByTestId('playground-entity').evaluateAll((items) =>
        items.map((m) => ({ label: m.dataset.label, text: m.firstChild.textContent })));
      assert.equal(Number(await result.getAttribute('data-entities')), rows.length);
      assert.equal(marks.length, rows.length, 'each entity listed is marked in the text');
      for (const [j, row] of rows.entries()) {
        assert.ok(['PER', 'LOC', 'ORG'].includes(row.label), row.label);
        assert.equal(marks[j].text, [...text].slice(row.start, row.end).join(''), 'the mark is the text at its offsets');
      }
      marked += rows.length;
    }
    assert.ok(marked > 0, 'entities found in sentences the model trained on');
    await assertAccessibleBasics(page);
    await screenshot(page, '15-entities-playground');
  });

  test('in English, the playground says so in English', async () => {
    const { page } = story.owner;
    const endpoint = new EndpointPage(page);
    await new Shell(page).langSwitch.click();
    await waitForText(page.locator('#playground-hint'), 'entities');
    const list = endpoint.results.locator('.entity-list').first();
    assert.match(await list.getAttribute('aria-label'), /entities found/);
    await screenshot(page, '15-entities-english');
  });
});
