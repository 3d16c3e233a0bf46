//! Story: an owner trains a tiny model on the sample dataset, deploys its checkpoint with the Deploy
//! button (the form comes filled in), watches the endpoint become ready after the parity gate, types a
//! Chinese complaint into the playground and sees a label with a probability per label, creates an API
//! key and calls `/v1/endpoints/<slug>/predict` over HTTP with it (and is refused without it), sees the
//! calls in the traffic numbers, scales it to two replicas and rolls out another checkpoint, and
//! undeploys and deletes it. A viewer sees the endpoint and may try it, but has no Deploy, key or
//! lifecycle control.
//!
//! Which label the tiny model gives is not asserted (it trains for seconds and is not accurate): only
//! that an answer renders with probabilities that sum to 1.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'playwright-core';

import { startStory } from '../support/story.js';
import { PHONE, screenshot, visit, withPerson } from '../support/browser.js';
import { assertAccessibleBasics, assertNoHorizontalOverflow, waitForText } from '../support/checks.js';
import { DatasetsListPage } from '../pages/datasets.js';
import { JobFormPage, JobPage } from '../pages/jobs.js';
import { DeployDialog, EndpointPage, EndpointsListPage } from '../pages/endpoints.js';
import { signIn } from '../pages/flows.js';

const COMPLAINT = '这家银行的服务态度很差，等了半小时还没人理我。';
const WORKSPACE = '客服质检';

function sum(probabilities) {
  return probabilities.reduce((total, p) => total + p, 0);
}

describe('a checkpoint deployed with one click answers in the playground and over HTTP', () => {
  const story = startStory({ owner: 'erin', workspace: WORKSPACE });
  let api;
  let jobId;
  let endpointId;
  let slug;
  let secret;

  before(async () => {
    // A client with no cookies and no browser headers: what an application calling the endpoint is.
    api = await request.newContext({ baseURL: story.server.baseURL });
  });

  after(async () => { await api?.dispose(); });

  test('the endpoints page starts empty and points at the models', async () => {
    const { page } = story.owner;
    const list = new EndpointsListPage(page);
    await list.goto(story.workspaceId);
    await list.empty.waitFor();
    await page.getByTestId('endpoints-go-models').waitFor();
    await assertAccessibleBasics(page);
    await screenshot(page, '09-endpoints-empty');
  });

  test('a tiny job on the sample dataset writes a checkpoint', async () => {
    const { page } = story.owner;
    const datasets = new DatasetsListPage(page);
    await datasets.goto(story.workspaceId);
    const datasetId = await datasets.createSample();

    const form = new JobFormPage(page);
    await form.goto(story.workspaceId, `?dataset=${datasetId}`);
    await form.fill({
      name: 'tiny-sentiment',
      preset: 'tiny',
      'max-seq-len': 32,
      'batch-size': 16,
      'max-steps': 24,
      'eval-every-steps': 12,
    });
    const job = await form.create();
    jobId = job.id();
    await job.waitForStatus('succeeded');
    await job.checkpointRows.first().waitFor();
  });

  test('Deploy on the checkpoint opens a filled-in form and leads to the endpoint, which becomes ready', async () => {
    const { page } = story.owner;
    const deploy = new DeployDialog(page);
    await deploy.open();
    assert.equal(await deploy.input('name').inputValue(), 'tiny-sentiment', 'named after the job');
    assert.equal(await deploy.input('replicas').inputValue(), '1');
    assert.equal(await deploy.input('device').inputValue(), 'cpu');
    // The precision that pays on this server: `auto` only where bf16 was measured faster here, and the
    // hint names the CPU's bfloat16 tier that the advice read (whatever CPU runs the suite).
    const advice = await (await page.request.get('/api/v1/precision-advice?work=serve')).json();
    assert.equal(await deploy.input('precision').inputValue(), advice.default, JSON.stringify(advice));
    const tierWords = { amx: 'AMX', avx512_bf16: 'AVX512-BF16', none: 'bfloat16' }[advice.cpu_bf16];
    assert.ok((await page.locator('#deploy-precision-hint').textContent()).includes(tierWords), 'the hint says why');
    assert.equal(await deploy.input('max-batch-tokens').inputValue(), '8192', 'the server defaults, under Advanced');
    await assertAccessibleBasics(page);
    await screenshot(page, '09-deploy-form');
    const endpoint = await deploy.deploy();
    endpointId = endpoint.id();
    await waitForText(page.getByTestId('page-title'), 'tiny-sentiment');
    // The page follows the deployment by itself (no reload) until the parity gate has passed.
    await endpoint.waitForStatus('ready');
    await waitForText(endpoint.replicas, '1 / 1');
    assert.equal(await endpoint.parity.getAttribute('data-passed'), 'true');
    assert.equal(await endpoint.replicaRows.count(), 1);
    assert.equal(await endpoint.replicaRows.first().getAttribute('data-status'), 'ready');
    await waitForText(page.getByTestId('endpoint-job'), 'tiny-sentiment');
    await waitForText(page.getByTestId('endpoint-precision'), advice.default === 'auto' ? 'auto' : 'fp32');
    slug = await endpoint.slug();
    assert.match(slug, /^tiny-sentiment-[0-9a-f]{4}$/, 'the slug comes from the name');
    await assertAccessibleBasics(page);
    await screenshot(page, '09-endpoint-ready');
  });

  test('the playground shows a label and a probability per label for a Chinese complaint', async () => {
    const { page } = story.owner;
    const endpoint = new EndpointPage(page);
    await endpoint.predict([COMPLAINT]);
    await endpoint.results.first().waitFor();
    assert.equal(await endpoint.results.count(), 1);
    const { label, probabilities } = await endpoint.result(0);
    assert.ok(label.length > 0, 'a label');
    assert.ok(probabilities.length >= 2, `a probability per label: ${JSON.stringify(probabilities)}`);
    assert.ok(probabilities.some((p) => p.label === label), 'the predicted label is among them');
    const total = sum(probabilities.map((p) => p.probability));
    assert.ok(Math.abs(total - 1) < 1e-3, `probabilities sum to 1, not ${total}`);
    assert.equal(
      Math.max(...probabilities.map((p) => p.probability)),
      probabilities.find((p) => p.label === label).probability,
      'the predicted label is the likeliest',
    );
    await waitForText(endpoint.results.first(), COMPLAINT);
    await screenshot(page, '09-playground');
  });

  test('a key created on the page calls the endpoint over HTTP; without it the call is refused', async () => {
    const { page } = story.owner;
    const endpoint = new EndpointPage(page);
    secret = await endpoint.createKey('app', 120);
    assert.ok(secret.length > 16, 'a secret is shown once');
    // The copy button puts it on the clipboard (and says so).
    await story.owner.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: story.server.baseURL });
    await page.getByTestId('new-key-copy').click();
    await page.locator('[data-testid="new-key-copy"][data-state="copied"]').waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
    await waitForText(page.getByTestId('key-row-app'), '120');
    // The examples now carry the real address and the new key.
    const curl = await endpoint.curl.textContent();
    assert.ok(curl.includes(`${story.server.baseURL}/v1/endpoints/${slug}/predict`), curl);
    assert.ok(curl.includes(`Authorization: Bearer ${secret}`), curl);
    assert.ok((await endpoint.python.textContent()).includes(`"Bearer ${secret}"`));

    const url = `/v1/endpoints/${slug}/predict`;
    const ok = await api.post(url, {
      headers: { Authorization: `Bearer ${secret}` },
      data: { inputs: [COMPLAINT, '质量很好，物流也快。'] },
    });
    assert.equal(ok.status(), 200, await ok.text());
    const body = await ok.json();
    assert.equal(body.predictions.length, 2);
    // Each probability is labelled by its place in `labels`.
    assert.ok(body.labels.length >= 2, JSON.stringify(body));
    for (const p of body.predictions) {
      assert.equal(typeof p.label, 'string');
      assert.ok(Math.abs(sum(p.probabilities) - 1) < 1e-3, JSON.stringify(p));
      assert.equal(p.probabilities.length, body.labels.length);
      assert.equal(body.labels[p.label_id], p.label);
    }
    const single = await api.post(url, { headers: { Authorization: `Bearer ${secret}` }, data: { text: COMPLAINT } });
    assert.equal(single.status(), 200, await single.text());

    const anonymous = await api.post(url, { data: { inputs: [COMPLAINT] } });
    assert.equal(anonymous.status(), 401);
    assert.equal((await anonymous.json()).code, 'key_missing', 'an application is told about keys, not signing in');
    const wrong = await api.post(url, { headers: { Authorization: 'Bearer pdk_ep_not_a_key' }, data: { inputs: [COMPLAINT] } });
    assert.equal(wrong.status(), 401);
    assert.equal((await wrong.json()).code, 'key_refused');

    // The page's polling picks the calls up: the playground's and the two keyed ones.
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="metric-requests"]')?.textContent) >= 3);
    await page.getByTestId('batch-histogram').waitFor();
    await screenshot(page, '09-keys-and-traffic');
  });

  test('the list shows the endpoint with its status, replicas and lineage', async () => {
    const { page } = story.owner;
    const list = new EndpointsListPage(page);
    await list.goto(story.workspaceId);
    const row = list.row(slug);
    await row.waitFor();
    assert.equal(await row.getByTestId('endpoint-status').getAttribute('data-status'), 'ready');
    await waitForText(row.getByTestId('endpoint-replicas'), '1 / 1');
    assert.equal(await row.getByTestId('endpoint-job').getAttribute('href'), `/w/${story.workspaceId}/jobs/${jobId}`);
    await row.getByTestId('endpoint-link').click();
    await page.waitForURL(new RegExp(`/endpoints/${endpointId}$`));
    await new EndpointPage(page).whenLive();
    await assertAccessibleBasics(page);
    await screenshot(page, '09-endpoints');
  });

  test('a viewer sees the endpoint and tries it, but has no deploy, key or lifecycle control', async () => {
    await withPerson(await story.colleague('vic', 'viewer'), async (page) => {
      const job = new JobPage(page);
      await job.goto(story.workspaceId, jobId);
      await job.checkpointRows.first().waitFor();
      assert.equal(await page.getByTestId('checkpoint-deploy').count(), 0, 'no Deploy on checkpoints');

      const endpoint = new EndpointPage(page);
      await endpoint.goto(story.workspaceId, endpointId);
      await endpoint.waitForStatus('ready');
      await page.getByTestId('endpoint-read-only').waitFor();
      assert.equal(await endpoint.actions.count(), 0, 'no undeploy or delete');
      assert.equal(await endpoint.manage.count(), 0, 'no scaling or roll-out');
      assert.equal(await endpoint.keyForm.count(), 0, 'no key form');
      assert.equal(await page.locator('[data-testid^="revoke-key-"]').count(), 0, 'no revoke');
      await page.getByTestId('key-row-app').waitFor();
      await endpoint.predict([COMPLAINT]);
      await endpoint.results.first().waitFor();
      await screenshot(page, '09-viewer-endpoint');
    });
  });

  test('the endpoint page fits a phone', async () => {
    await withPerson(await story.person(PHONE), async (page) => {
      await signIn(page, 'erin', /\/w\/\d+\//);
      const endpoint = new EndpointPage(page);
      await endpoint.goto(story.workspaceId, endpointId);
      await endpoint.waitForStatus('ready');
      await screenshot(page, '09-phone-endpoint');
      await assertNoHorizontalOverflow(page);
    });
  });

  test('the admin sets the caps and a GPU quota on the admin page: scaling past the replica cap is refused, raised it goes', async () => {
    const { page } = story.owner; // the first account: the instance admin
    const settings = async () => (await (await page.request.get('/api/v1/admin/settings')).json());
    await visit(page, '/admin');
    const caps = page.getByTestId('caps');
    const replicas = caps.getByTestId('cap-max_replicas');
    assert.equal(await replicas.inputValue(), String((await settings()).max_replicas));
    // A value the server refuses is said in Chinese and stays as typed.
    await replicas.fill('0');
    await caps.getByTestId('caps-save').click();
    await waitForText(caps, '1 到 10000 之间的整数');
    assert.equal(await replicas.inputValue(), '0');
    await replicas.fill('1');
    await caps.getByTestId('caps-save').click();
    await page.waitForFunction(() => !document.querySelector('[data-testid="caps"] .notice'));
    for (let i = 0; (await settings()).max_replicas !== 1; i++) {
      assert.ok(i < 50, 'the cap was saved');
      await page.waitForTimeout(100);
    }

    // The workspace's GPU quota, beside the GPUs it holds; an impossible one is refused in Chinese.
    const quota = page.locator(`[data-testid="gpu-quota"][data-workspace="${WORKSPACE}"]`);
    assert.equal(await quota.getByTestId('gpu-quota-held').textContent(), '0');
    await quota.getByTestId('gpu-quota-max').fill('5000');
    await quota.getByTestId('gpu-quota-save').click();
    await waitForText(page.getByTestId('gpu-quotas'), 'GPU 配额最多为 1024');
    await quota.getByTestId('gpu-quota-max').fill('2');
    await quota.getByTestId('gpu-quota-save').click();
    await page.waitForFunction(() => !document.querySelector('[data-testid="gpu-quotas"] .notice'));
    const quotas = await (await page.request.get('/api/v1/admin/gpu-quotas')).json();
    assert.equal(quotas.find((q) => q.workspace === WORKSPACE)?.max_gpus, 2, JSON.stringify(quotas));
    await screenshot(page, '09-admin-limits');

    // The next request past the cap: two replicas of this endpoint.
    const endpoint = new EndpointPage(page);
    await endpoint.goto(story.workspaceId, endpointId);
    await page.getByTestId('scale-replicas').fill('2');
    await page.getByTestId('scale-submit').click();
    await waitForText(page.locator('main'), '已达到上限');
    await visit(page, '/admin');
    await replicas.fill('4');
    await caps.getByTestId('caps-save').click();
    for (let i = 0; (await settings()).max_replicas !== 4; i++) {
      assert.ok(i < 50, 'the cap was raised');
      await page.waitForTimeout(100);
    }
  });

  test('an editor scales the endpoint to two replicas, then rolls out another checkpoint', async () => {
    const { page } = story.owner;
    const endpoint = new EndpointPage(page);
    await endpoint.goto(story.workspaceId, endpointId);
    await endpoint.waitForStatus('ready');
    const change = page.getByTestId('endpoint-change');

    await page.getByTestId('scale-replicas').fill('2');
    await page.getByTestId('scale-submit').click();
    // Under way, the status says so in the page's language (the answer to the change carries it);
    // done, both replicas are ready and the line is gone.
    await change.filter({ hasText: '副本数正在从 1 调整为 2' }).waitFor();
    await endpoint.replicas.filter({ hasText: '2 / 2' }).waitFor({ timeout: 240_000 });
    await change.waitFor({ state: 'detached', timeout: 240_000 });
    assert.equal(await page.getByTestId('endpoint-message').count(), 0, 'the change went without a problem');
    assert.equal(await endpoint.replicaRows.count(), 2);

    const checkpoint = page.getByTestId('endpoint-checkpoint');
    const from = (await checkpoint.textContent()).match(/#(\d+)/)[1];
    const choices = await page.getByTestId('rollout-checkpoint').locator('option').evaluateAll((os) => os.map((o) => o.value));
    const to = choices.find((id) => id !== from);
    assert.ok(to, `another checkpoint to roll out: ${choices}`);
    await page.getByTestId('rollout-checkpoint').selectOption(to);
    await page.getByTestId('rollout-submit').click();
    await change.filter({ hasText: `正在换用检查点 #${to}` }).waitFor();
    await checkpoint.filter({ hasText: new RegExp(`#${to}\\b`) }).waitFor({ timeout: 240_000 });
    await change.waitFor({ state: 'detached', timeout: 240_000 });
    await endpoint.waitForStatus('ready');
    await waitForText(endpoint.replicas, '2 / 2');
    const res = await api.post(`/v1/endpoints/${slug}/predict`, {
      headers: { Authorization: `Bearer ${secret}` },
      data: { inputs: [COMPLAINT] },
    });
    assert.equal(res.status(), 200, await res.text());
    await screenshot(page, '09-rolled-out');
  });

  test('undeployed, the endpoint answers 503 to its key; deleted, it is gone from the list', async () => {
    const { page } = story.owner;
    const endpoint = new EndpointPage(page);
    await endpoint.goto(story.workspaceId, endpointId);
    // Stopping a live endpoint asks first; the way back leaves it serving.
    await endpoint.button('undeploy').click();
    await endpoint.button('undeploy-cancel').click();
    assert.equal(await endpoint.button('undeploy-confirm').count(), 0);
    assert.equal(await endpoint.status.getAttribute('data-status'), 'ready');
    const question = await endpoint.confirm('undeploy');
    assert.match(question, /503/, 'the question says what callers will get');
    await endpoint.waitForStatus('stopped', 30_000);
    assert.equal(await page.getByTestId('playground-submit').isDisabled(), true, 'the playground waits for a ready endpoint');
    const res = await api.post(`/v1/endpoints/${slug}/predict`, {
      headers: { Authorization: `Bearer ${secret}` },
      data: { inputs: [COMPLAINT] },
    });
    assert.equal(res.status(), 503);
    await screenshot(page, '09-stopped');

    await endpoint.delete();
    assert.match(page.url(), new RegExp(`/w/${story.workspaceId}/endpoints$`));
    await new EndpointsListPage(page).empty.waitFor();
    assert.deepEqual(story.owner.problems, [], 'no wasm panic or hydration error');
  });
});
