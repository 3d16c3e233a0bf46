//! Story: an owner has an endpoint serving a tiny model's first checkpoint and wants its last one in
//! front of callers without risking them. On the endpoint page (zh) she starts a canary of the last
//! checkpoint at 20% of the calls, watches both versions' figures side by side while an application
//! calls the endpoint, and promotes it by hand; the history says what happened and who did it. Then
//! she lets the endpoint size itself and scale to zero while idle.
//!
//! The training, deployment and key are made over the REST API (spec 09 drives those pages); the
//! canary and autoscaling are driven from the page.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'playwright-core';

import { startStory } from '../support/story.js';
import { screenshot } from '../support/browser.js';
import { assertAccessibleBasics, waitForText } from '../support/checks.js';
import { EndpointPage } from '../pages/endpoints.js';
import { addSampleDataset } from '../pages/flows.js';

/** Polls `read` until `done(value)`, for up to `ms`. */
async function until(read, done, what, ms = 180_000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await read();
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`never ${what}: ${JSON.stringify(last)}`);
}

describe('a canary is started, watched beside the stable version and promoted from the endpoint page', () => {
  const story = startStory({ owner: 'fang', workspace: '线上服务' });
  let api;
  let caller;
  let endpointId;
  let slug;
  let secret;
  let first;
  let last;

  before(async () => {
    caller = await request.newContext({ baseURL: story.server.baseURL });
  });

  after(async () => { await caller?.dispose(); });

  test('a tiny model, its endpoint and a key, made over the API', async () => {
    const { page } = story.owner;
    api = `/api/v1/workspaces/${story.workspaceId}`;
    const datasetId = await addSampleDataset(page, story.workspaceId);
    const submitted = await page.request.post(`${api}/jobs`, {
      data: { name: 'tiny-canary', dataset_id: datasetId, preset: 'tiny', max_seq_len: 32, batch_size: 16,
              max_steps: 15, eval_every_steps: 5, keep_best: 3 },
    });
    assert.equal(submitted.status(), 201, await submitted.text());
    const jobId = (await submitted.json()).summary.id;
    const job = await until(async () => (await page.request.get(`${api}/jobs/${jobId}`)).json(),
      (j) => j.summary.finished_at, 'finished');
    assert.equal(job.summary.status, 'succeeded');
    const ids = job.checkpoints.filter((c) => !c.deleted_at).map((c) => c.id).sort((a, b) => a - b);
    assert.ok(ids.length >= 2, JSON.stringify(ids));
    [first, last] = [ids[0], ids[ids.length - 1]];
    const deployed = await page.request.post(`${api}/endpoints`, { data: { name: '情感服务', checkpoint_id: first } });
    assert.equal(deployed.status(), 201, await deployed.text());
    const endpoint = await deployed.json();
    endpointId = endpoint.summary.id;
    slug = endpoint.summary.slug;
    await until(async () => (await page.request.get(`${api}/endpoints/${endpointId}`)).json(),
      (d) => d.summary.status === 'ready', 'ready');
    const key = await page.request.post(`${api}/endpoints/${endpointId}/keys`, { data: { name: 'app', rate_limit_per_minute: 100000 } });
    assert.equal(key.status(), 201, await key.text());
    secret = (await key.json()).secret;
  });

  test('the canary starts from the page, takes its share and shows both versions side by side', async () => {
    const { page } = story.owner;
    const endpoint = new EndpointPage(page);
    await endpoint.goto(story.workspaceId, endpointId);
    const card = page.getByTestId('endpoint-canary');
    await waitForText(card.locator('h2'), '金丝雀发布');
    await page.getByTestId('canary-checkpoint').selectOption(String(last));
    await page.getByTestId('canary-steps').fill('20, 60');
    await page.getByTestId('canary-step-secs').fill('600');
    // Judged only after many calls (this story promotes by hand): a few calls' p95 is one slow call.
    await page.getByTestId('canary-min-requests').fill('100000');
    await assertAccessibleBasics(page);
    await page.getByTestId('canary-start').click();
    await page.locator('[data-testid="canary-phase"][data-phase="running"]').waitFor({ timeout: 120_000 });
    await waitForText(page.getByTestId('canary-phase'), '接收 20% 的调用');

    // An application calls: a tester's header reaches the canary, the rest split by the share.
    const url = `/v1/endpoints/${slug}/predict`;
    const headers = { Authorization: `Bearer ${secret}` };
    const tester = await caller.post(url, { headers: { ...headers, 'X-Paddock-Canary': 'always' }, data: { inputs: ['服务很好'] } });
    assert.equal(tester.status(), 200, await tester.text());
    assert.equal(tester.headers()['x-paddock-version'], 'canary');
    const versions = new Set();
    for (let i = 0; i < 60; i += 1) {
      const res = await caller.post(url, { headers, data: { inputs: [i % 2 ? '太差了' : '很满意'] } });
      assert.equal(res.status(), 200, await res.text());
      versions.add(res.headers()['x-paddock-version']);
    }
    assert.deepEqual([...versions].sort(), ['canary', 'stable'], 'both versions answered');
    // The page's polling shows both versions' calls in this step, side by side.
    for (const version of ['canary', 'stable']) {
      await page.waitForFunction((v) => Number(document.querySelector(
        `[data-testid="canary-version"][data-version="${v}"] [data-testid="canary-requests"]`)?.textContent) > 0, version);
    }
    await waitForText(page.getByTestId('canary-figures'), '稳定版本');
    await screenshot(page, '18-canary-running');
  });

  test('promoted by hand: the endpoint serves the new checkpoint and the history says who did what', async () => {
    const { page } = story.owner;
    await page.getByTestId('canary-promote').click();
    await page.getByTestId('canary-form').waitFor({ timeout: 120_000 });
    await waitForText(page.getByTestId('endpoint-checkpoint'), `#${last}`);
    const promoted = page.locator('[data-testid="history-line"][data-kind="canary_promoted"]');
    await waitForText(promoted, `检查点 #${last} 晋升为稳定版本`);
    await waitForText(promoted, 'fang');
    await page.locator('[data-testid="history-line"][data-kind="canary_started"]').waitFor();
    const audit = await (await page.request.get(`${api}/activity`)).text();
    assert.ok(audit.includes('endpoint.canary.promote'), 'audited');
    await screenshot(page, '18-canary-promoted');
  });

  test('autoscaling set on the page: the endpoint sizes itself and goes to zero while idle', async () => {
    const { page } = story.owner;
    await page.getByTestId('autoscale-min').fill('0');
    await page.getByTestId('autoscale-max').fill('2');
    await page.getByTestId('autoscale-target').fill('4');
    await page.getByTestId('autoscale-idle').fill('3');
    await page.getByTestId('autoscale-save').click();
    await waitForText(page.getByTestId('scaling-mode'), '在 0–2 个副本之间自动伸缩');
    await page.locator('[data-testid="history-line"][data-kind="autoscale_set"]').waitFor();
    await page.getByTestId('scaling-asleep').waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="history-line"][data-kind="scaled_to_zero"]').waitFor();
    // The next call wakes it; the page shows the cold start.
    const res = await caller.post(`/v1/endpoints/${slug}/predict`, { headers: { Authorization: `Bearer ${secret}` }, data: { inputs: ['还可以'] } });
    assert.equal(res.status(), 200, await res.text());
    await waitForText(page.getByTestId('scaling-cold-start'), '最近一次冷启动耗时');
    await assertAccessibleBasics(page);
    await screenshot(page, '18-autoscale');
  });
});
