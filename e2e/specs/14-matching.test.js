//! Story: a team that matches customer questions (in Chinese, the default language) adds the matching
//! sample with one click, sees that it is pair data, starts a job from it — the form has chosen the
//! matching task and shows the labels the data has — trains a tiny model, deploys it, and asks the
//! playground whether two questions are the same, typed in two boxes a pair per line; the answer shows
//! both texts and a probability per label. The usage snippets send pairs.
//!
//! Which label the tiny model gives is not asserted (it trains for seconds): only that each pair is
//! answered with probabilities that sum to 1.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startStory } from '../support/story.js';
import { screenshot } from '../support/browser.js';
import { assertAccessibleBasics, waitForText } from '../support/checks.js';
import { DatasetsListPage } from '../pages/datasets.js';
import { JobFormPage } from '../pages/jobs.js';
import { DeployDialog, EndpointPage } from '../pages/endpoints.js';

const PAIRS = [
  ['怎么修改登录密码', '密码忘了怎么办'],
  ['银行卡丢了怎么办', '信用卡额度怎么提高'],
];

describe('text matching: pair data, a matching job, an endpoint that compares two questions', () => {
  const story = startStory({ owner: 'mia', workspace: '问答匹配' });
  let datasetId;

  test('the matching sample is pair data', async () => {
    const { page } = story.owner;
    const datasets = new DatasetsListPage(page);
    await datasets.goto(story.workspaceId);
    datasetId = await datasets.createSample('matching');
    await waitForText(page.getByTestId('dataset-task'), '文本匹配');
    assert.equal(await page.getByTestId('dataset-task').getAttribute('data-task'), 'matching');
    await waitForText(page.getByTestId('dataset-facts'), 'text_b');
    await assertAccessibleBasics(page);
    await screenshot(page, '14-matching-dataset');
  });

  test('a job from it is a matching job, and trains', async () => {
    const { page } = story.owner;
    const form = new JobFormPage(page);
    await form.goto(story.workspaceId, `?dataset=${datasetId}`);
    assert.equal(await form.input('task').inputValue(), 'matching', 'the data decides the task');
    // The labels the data has, read from it.
    await waitForText(page.locator('#job-dataset-hint'), 'same');
    await form.fill({
      name: 'faq-pairs',
      preset: 'tiny',
      'max-seq-len': 48,
      'batch-size': 32,
      'max-steps': 20,
      'eval-every-steps': 10,
    });
    await assertAccessibleBasics(page);
    const job = await form.create();
    await job.waitForStatus('succeeded');
    await job.checkpointRows.first().waitFor();
  });

  test('deployed, it answers pairs in the playground', async () => {
    const { page } = story.owner;
    const deploy = new DeployDialog(page);
    await deploy.open();
    const endpoint = await deploy.deploy();
    await endpoint.waitForStatus('ready');
    assert.equal(await endpoint.parity.getAttribute('data-passed'), 'true');
    await waitForText(endpoint.curl, 'text_a');
    await endpoint.predictPairs(PAIRS);
    await endpoint.results.nth(1).waitFor();
    assert.equal(await endpoint.results.count(), 2);
    for (const [i, [a, b]] of PAIRS.entries()) {
      const result = endpoint.results.nth(i);
      await waitForText(result, a);
      await waitForText(result.getByTestId('playground-pair'), b);
      const { probabilities } = await endpoint.result(i);
      assert.deepEqual(probabilities.map((p) => p.label).sort(), ['different', 'same']);
      const total = probabilities.reduce((t, p) => t + p.probability, 0);
      assert.ok(Math.abs(total - 1) < 1e-3, `probabilities sum to 1, not ${total}`);
    }
    await assertAccessibleBasics(page);
    await screenshot(page, '14-matching-playground');
  });

  test('a pair without its second text is not sent', async () => {
    const { page } = story.owner;
    const endpoint = new EndpointPage(page);
    await page.getByTestId('playground-input').fill('一个问题\n另一个问题');
    await page.getByTestId('playground-input-b').fill('只有一行');
    await page.getByTestId('playground-submit').click();
    await waitForText(page.getByTestId('playground-error'), '行数');
    assert.equal(await endpoint.results.count(), 2, 'the earlier answers stay');
  });
});
