//! Story: a new team's first hour, in Chinese at 1280 px, as one walk — the visitor signs up and creates
//! a workspace, imports a pretrained ERNIE model (a Hugging Face directory, as a `.tar`) on the Models
//! page, adds the sample dataset, sees the job form start from that model, trains, cancels a second run
//! (after saying no once: the question states what happens), deploys the checkpoint and asks the
//! playground. On every page of the walk nothing the server says is English: statuses, reports, reasons
//! and errors are in the page's language (names, commands, logs and technical terms aside).
//!
//! The model is the trainer's parity fixture (random weights, a 24-wide ERNIE): what it predicts is not
//! the point, only that each step works and says so in Chinese.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startStory } from '../support/story.js';
import { hydrated, screenshot, visit } from '../support/browser.js';
import { assertInView, assertPageNotEnglish, waitForText } from '../support/checks.js';
import { DatasetPage, DatasetsListPage } from '../pages/datasets.js';
import { JobFormPage, JobPage, ModelsPage } from '../pages/jobs.js';
import { DeployDialog, EndpointPage } from '../pages/endpoints.js';
import { createWorkspace, signUp } from '../pages/flows.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const ERNIE = path.resolve(here, '..', '..', 'trainer', 'tests', 'fixtures', 'parity', 'ernie');
const PRAISE = '非常满意！房间干净，服务周到。';
/** The names this story gives, which may show in Latin letters on a Chinese page. */
const NAMES = ['lin', 'ernie', 'ernie_mini', 'snownlp', 'sample', 'first_run', 'long_run'];
/** The sample dataset's labels, and the model shapes (ERNIE 3.0's names for them): names too. */
const LABELS = ['negative', 'positive', 'base', 'medium', 'mini', 'micro', 'nano', 'tiny'];

describe("a new team's first hour, in Chinese, from sign-up to a playground answer", () => {
  const story = startStory();
  let workspaceId;
  let jobId;

  test('a visitor signs up and creates the team workspace', async () => {
    const { page } = story.owner;
    await signUp(page, 'lin');
    workspaceId = await createWorkspace(page, '舆情分析组');
    await assertPageNotEnglish(page, [...NAMES, ...LABELS]);
  });

  test('a pretrained ERNIE directory is imported on the Models page, above everything else', async () => {
    const { page } = story.owner;
    const dir = await mkdtemp(path.join(tmpdir(), 'paddock-e2e-first-hour-'));
    const archive = path.join(dir, 'ernie_mini.tar');
    execFileSync('tar', ['-cf', archive, '-C', path.dirname(ERNIE), path.basename(ERNIE)]);

    const models = new ModelsPage(page);
    await models.goto(workspaceId);
    const form = page.getByTestId('pretrained-upload-form');
    await assertInView(page.getByTestId('pretrained-file'), 'the import');
    await page.getByTestId('pretrained-file').setInputFiles(archive);
    assert.equal(await page.getByTestId('pretrained-name').inputValue(), 'ernie_mini', 'named after the file');
    await page.getByTestId('pretrained-upload').click();
    const row = page.locator('[data-testid="pretrained-row"][data-name="ernie_mini"]');
    await row.waitFor({ timeout: 60_000 });
    assert.equal(await form.getByTestId('error').count(), 0);
    await assertPageNotEnglish(page, [...NAMES, ...LABELS]);
    await screenshot(page, '10-imported');
  });

  test('the sample dataset is one click, and its report is in Chinese', async () => {
    const { page } = story.owner;
    const datasets = new DatasetsListPage(page);
    await datasets.goto(workspaceId);
    await datasets.createSample();
    const dataset = new DatasetPage(page);
    await dataset.opened();
    await page.getByTestId('report-problems').or(page.getByTestId('report-no-problems')).first().waitFor();
    await assertPageNotEnglish(page, [...NAMES, ...LABELS]);
  });

  test('the job form starts from the imported model; the run succeeds and its page is in Chinese', async () => {
    const { page } = story.owner;
    const dataset = new DatasetPage(page);
    const datasetId = dataset.id();
    const form = new JobFormPage(page);
    await form.goto(workspaceId, `?dataset=${datasetId}`);
    const base = page.getByTestId('job-base-checkpoint');
    await page.waitForFunction(() => document.querySelector('[data-testid="job-base-checkpoint"]')?.selectedOptions[0]?.textContent.includes('ernie_mini'));
    const chosen = await base.evaluate((s) => s.selectedOptions[0].hasAttribute('data-pretrained'));
    assert.ok(chosen, 'the pretrained model is the default start');
    await assertPageNotEnglish(page, [...NAMES, ...LABELS]);
    await form.fill({ name: 'first_run', 'max-seq-len': 32, 'batch-size': 16, 'max-steps': 12, 'eval-every-steps': 6 });
    const job = await form.create();
    jobId = job.id();
    await waitForText(page.getByTestId('job-base-pretrained'), 'ernie_mini');
    await job.waitForStatus('succeeded');
    await job.checkpointRows.first().waitFor();
    await waitForText(job.logState, '任务已结束');
    await assertPageNotEnglish(page, [...NAMES, ...LABELS]);
    await screenshot(page, '10-job');
  });

  test('cancelling a run asks first and says what happens; no keeps it running, yes ends it', async () => {
    const { page } = story.owner;
    const first = new JobPage(page);
    await first.button('clone').click();
    await page.getByTestId('job-cloned').waitFor();
    const form = new JobFormPage(page);
    await form.fill({ name: 'long_run', epochs: 1000, 'max-steps': 100000, 'eval-every-steps': 1000 });
    const job = await form.create();
    await job.waitForStatus('running');
    // Training has begun (a step is done), so that there is something to keep.
    await job.progress.filter({ hasText: /^\s*[1-9]\d* \// }).waitFor({ timeout: 120_000 });
    await job.button('cancel').click();
    const question = job.button('cancel-confirm');
    // The consequence in words: a final checkpoint, and how to go on.
    await waitForText(question, '保存最后一个检查点');
    // The two answers cannot be mistaken for each other: one cancels the run, the other keeps it.
    assert.equal((await job.button('cancel-yes').textContent()).trim(), '取消运行');
    assert.equal((await job.button('cancel-cancel').textContent()).trim(), '继续运行');
    await job.button('cancel-cancel').click();
    await question.waitFor({ state: 'detached' });
    assert.equal(await job.status.getAttribute('data-status'), 'running', 'saying no changes nothing');
    assert.match(await job.confirm('cancel'), /任务以“已取消”结束/);
    await job.waitForStatus('cancelled');
    // As the question said: a last checkpoint, and the end said in Chinese.
    await job.checkpointRows.first().waitFor();
    await waitForText(page.getByTestId('job-message'), '已按要求取消');
    await assertPageNotEnglish(page, [...NAMES, ...LABELS]);
  });

  test('the checkpoint deploys, the endpoint page is in Chinese, and the playground answers', async () => {
    const { page } = story.owner;
    const job = new JobPage(page);
    await job.goto(workspaceId, jobId);
    await job.checkpointRows.first().waitFor();
    const deploy = new DeployDialog(page);
    await deploy.open();
    await assertPageNotEnglish(page, [...NAMES, ...LABELS]);
    const endpoint = await deploy.deploy();
    await endpoint.waitForStatus('ready');
    await hydrated(page);
    await endpoint.predict([PRAISE]);
    await endpoint.results.first().waitFor();
    const { label, probabilities } = await endpoint.result(0);
    // The imported model had three labels of its own; fine-tuned, it answers in the dataset's two.
    assert.deepEqual(probabilities.map((p) => p.label).sort(), ['negative', 'positive'], JSON.stringify(probabilities));
    assert.ok(probabilities.some((p) => p.label === label), `the answer is one of them: ${label}`);
    await waitForText(endpoint.results.first(), PRAISE);
    // The labels are the dataset's own words: allowed, as names are.
    await assertPageNotEnglish(page, [...NAMES, ...probabilities.map((p) => p.label), 'first_run']);
    await screenshot(page, '10-playground');
  });

  test("the workspace's activity says what everyone did, in Chinese", async () => {
    const { page } = story.owner;
    await visit(page, `/w/${workspaceId}/activity`);
    const cancelled = page.locator('[data-testid="activity-row"][data-action="job.cancel"]');
    await waitForText(cancelled, '取消任务');
    await waitForText(page.locator('[data-testid="activity-row"][data-action="endpoint.deploy"]'), '部署服务端点');
    await assertPageNotEnglish(page, NAMES);
  });

  test('no wasm panic or hydration error happened', () => {
    assert.deepEqual(story.owner.problems, []);
  });
});
