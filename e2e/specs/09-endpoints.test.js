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

import { startServer } from '../support/server.js';
import { hydrated, launchBrowser, newPerson, screenshot } from '../support/browser.js';
import { assertAccessibleBasics, assertNoHorizontalOverflow, waitForText } from '../support/checks.js';
import { DatasetsListPage, DatasetPage } from '../pages/datasets.js';
import { JobFormPage, JobPage } from '../pages/jobs.js';
import { DeployDialog, EndpointPage, EndpointsListPage } from '../pages/endpoints.js';
import { createWorkspace, signUp } from '../pages/flows.js';
import { MembersPage } from '../pages/workspaces.js';

const COMPLAINT = '这家银行的服务态度很差，等了半小时还没人理我。';

function sum(probabilities) {
  return probabilities.reduce((total, p) => total + p, 0);
}

describe('a checkpoint deployed with one click answers in the playground and over HTTP', () => {
  let server;
  let browser;
  let owner;
  let api;
  let workspaceId;
  let jobId;
  let endpointId;
  let slug;
  let secret;

  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
    owner = await newPerson(browser, server.baseURL);
    // A client with no cookies and no browser headers: what an application calling the endpoint is.
    api = await request.newContext({ baseURL: server.baseURL });
    await signUp(owner.page, 'erin');
    workspaceId = await createWorkspace(owner.page, '客服质检');
  });

  after(async (t) => {
    if (owner?.problems.length) t.diagnostic(owner.problems.join('\n'));
    await api?.dispose();
    await browser?.close();
    await server?.stop();
  });

  test('the endpoints page starts empty and points at the models', async () => {
    const { page } = owner;
    const list = new EndpointsListPage(page);
    await list.goto(workspaceId);
    await list.empty.waitFor();
    await page.getByTestId('endpoints-go-models').waitFor();
    await assertAccessibleBasics(page);
    await screenshot(page, '09-endpoints-empty');
  });

  test('a tiny job on the sample dataset writes a checkpoint', async () => {
    const { page } = owner;
    const datasets = new DatasetsListPage(page);
    await datasets.goto(workspaceId);
    await datasets.sampleButton.click();
    await page.waitForURL(/\/datasets\/\d+$/);
    const datasetId = new DatasetPage(page).id();

    const form = new JobFormPage(page);
    await form.goto(workspaceId, `?dataset=${datasetId}`);
    await form.fill({
      name: 'tiny-sentiment',
      preset: 'tiny',
      'max-seq-len': 32,
      'batch-size': 16,
      'max-steps': 24,
      'eval-every-steps': 12,
    });
    await form.submit();
    await page.waitForURL(/\/jobs\/\d+$/);
    const job = new JobPage(page);
    jobId = job.id();
    await job.waitForStatus('succeeded');
    await job.checkpointRows.first().waitFor();
  });

  test('Deploy on the checkpoint opens a filled-in form and leads to the endpoint, which becomes ready', async () => {
    const { page } = owner;
    const deploy = new DeployDialog(page);
    await deploy.open();
    assert.equal(await deploy.input('name').inputValue(), 'tiny-sentiment', 'named after the job');
    assert.equal(await deploy.input('replicas').inputValue(), '1');
    assert.equal(await deploy.input('device').inputValue(), 'cpu');
    assert.equal(await deploy.input('precision').inputValue(), 'fp32', 'float32 unless asked otherwise');
    assert.equal(await deploy.input('max-batch-tokens').inputValue(), '8192', 'the server defaults, under Advanced');
    await assertAccessibleBasics(page);
    await screenshot(page, '09-deploy-form');
    await deploy.submit();
    await page.waitForURL(/\/endpoints\/\d+$/);
    const endpoint = new EndpointPage(page);
    endpointId = endpoint.id();
    await waitForText(page.getByTestId('page-title'), 'tiny-sentiment');
    // The page follows the deployment by itself (no reload) until the parity gate has passed.
    await endpoint.waitForStatus('ready');
    await waitForText(endpoint.replicas, '1 / 1');
    assert.equal(await endpoint.parity.getAttribute('data-passed'), 'true');
    assert.equal(await endpoint.replicaRows.count(), 1);
    assert.equal(await endpoint.replicaRows.first().getAttribute('data-status'), 'ready');
    await waitForText(page.getByTestId('endpoint-job'), 'tiny-sentiment');
    await waitForText(page.getByTestId('endpoint-precision'), 'fp32');
    slug = await endpoint.slug();
    assert.match(slug, /^tiny-sentiment-[0-9a-f]{4}$/, 'the slug comes from the name');
    await assertAccessibleBasics(page);
    await screenshot(page, '09-endpoint-ready');
  });

  test('the playground shows a label and a probability per label for a Chinese complaint', async () => {
    const { page } = owner;
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
    const { page } = owner;
    const endpoint = new EndpointPage(page);
    secret = await endpoint.createKey('app', 120);
    assert.ok(secret.length > 16, 'a secret is shown once');
    // The copy button puts it on the clipboard (and says so).
    await owner.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.baseURL });
    await page.getByTestId('new-key-copy').click();
    await page.locator('[data-testid="new-key-copy"][data-state="copied"]').waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
    await waitForText(page.getByTestId('key-row-app'), '120');
    // The examples now carry the real address and the new key.
    const curl = await endpoint.curl.textContent();
    assert.ok(curl.includes(`${server.baseURL}/v1/endpoints/${slug}/predict`), curl);
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
    for (const p of body.predictions) {
      assert.equal(typeof p.label, 'string');
      assert.ok(Math.abs(sum(p.probabilities) - 1) < 1e-3, JSON.stringify(p));
    }
    const single = await api.post(url, { headers: { Authorization: `Bearer ${secret}` }, data: { text: COMPLAINT } });
    assert.equal(single.status(), 200, await single.text());

    const anonymous = await api.post(url, { data: { inputs: [COMPLAINT] } });
    assert.equal(anonymous.status(), 401);
    const wrong = await api.post(url, { headers: { Authorization: 'Bearer pdk_ep_not_a_key' }, data: { inputs: [COMPLAINT] } });
    assert.equal(wrong.status(), 401);

    // The page's polling picks the calls up: the playground's and the two keyed ones.
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="metric-requests"]')?.textContent) >= 3);
    await page.getByTestId('batch-histogram').waitFor();
    await screenshot(page, '09-keys-and-traffic');
  });

  test('the list shows the endpoint with its status, replicas and lineage', async () => {
    const { page } = owner;
    const list = new EndpointsListPage(page);
    await list.goto(workspaceId);
    const row = list.row(slug);
    await row.waitFor();
    assert.equal(await row.getByTestId('endpoint-status').getAttribute('data-status'), 'ready');
    await waitForText(row.getByTestId('endpoint-replicas'), '1 / 1');
    assert.equal(await row.getByTestId('endpoint-job').getAttribute('href'), `/w/${workspaceId}/jobs/${jobId}`);
    await row.getByTestId('endpoint-link').click();
    await page.waitForURL(new RegExp(`/endpoints/${endpointId}$`));
    await new EndpointPage(page).whenLive();
    await assertAccessibleBasics(page);
    await screenshot(page, '09-endpoints');
  });

  test('a viewer sees the endpoint and tries it, but has no deploy, key or lifecycle control', async () => {
    const viewer = await newPerson(browser, server.baseURL);
    await signUp(viewer.page, 'vic');
    const members = new MembersPage(owner.page);
    await members.goto(workspaceId);
    await members.add('vic', 'viewer');
    await members.row('vic').waitFor();

    const { page } = viewer;
    await page.goto(`/w/${workspaceId}/jobs/${jobId}`);
    await hydrated(page);
    await new JobPage(page).checkpointRows.first().waitFor();
    assert.equal(await page.getByTestId('checkpoint-deploy').count(), 0, 'no Deploy on checkpoints');

    const endpoint = new EndpointPage(page);
    await endpoint.goto(workspaceId, endpointId);
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
    assert.deepEqual(viewer.problems, []);
    await viewer.context.close();
  });

  test('the endpoint page fits a phone', async () => {
    const phone = await newPerson(browser, server.baseURL, { width: 375, height: 740 });
    await phone.page.goto('/signin');
    await phone.page.getByTestId('signin-username').fill('erin');
    await phone.page.getByTestId('signin-password').fill('correct-horse-battery');
    await phone.page.getByTestId('signin-submit').click();
    await phone.page.waitForURL(/\/w\/\d+\//);
    const endpoint = new EndpointPage(phone.page);
    await endpoint.goto(workspaceId, endpointId);
    await endpoint.waitForStatus('ready');
    await screenshot(phone.page, '09-phone-endpoint');
    await assertNoHorizontalOverflow(phone.page);
    assert.deepEqual(phone.problems, []);
    await phone.context.close();
  });

  test('an editor scales the endpoint to two replicas, then rolls out another checkpoint', async () => {
    const { page } = owner;
    const endpoint = new EndpointPage(page);
    await endpoint.goto(workspaceId, endpointId);
    await endpoint.waitForStatus('ready');
    const message = page.getByTestId('endpoint-message');

    await page.getByTestId('scale-replicas').fill('2');
    await page.getByTestId('scale-submit').click();
    // Under way, the status says so; done, both replicas are ready and the message is gone.
    await endpoint.replicas.filter({ hasText: '2 / 2' }).waitFor({ timeout: 240_000 });
    await message.waitFor({ state: 'detached', timeout: 240_000 });
    assert.equal(await endpoint.replicaRows.count(), 2);

    const checkpoint = page.getByTestId('endpoint-checkpoint');
    const from = (await checkpoint.textContent()).match(/#(\d+)/)[1];
    const choices = await page.getByTestId('rollout-checkpoint').locator('option').evaluateAll((os) => os.map((o) => o.value));
    const to = choices.find((id) => id !== from);
    assert.ok(to, `another checkpoint to roll out: ${choices}`);
    await page.getByTestId('rollout-checkpoint').selectOption(to);
    await page.getByTestId('rollout-submit').click();
    await checkpoint.filter({ hasText: new RegExp(`#${to}\\b`) }).waitFor({ timeout: 240_000 });
    await message.waitFor({ state: 'detached', timeout: 240_000 });
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
    const { page } = owner;
    const endpoint = new EndpointPage(page);
    await endpoint.goto(workspaceId, endpointId);
    await endpoint.button('undeploy').click();
    await endpoint.waitForStatus('stopped', 30_000);
    assert.equal(await page.getByTestId('playground-submit').isDisabled(), true, 'the playground waits for a ready endpoint');
    const res = await api.post(`/v1/endpoints/${slug}/predict`, {
      headers: { Authorization: `Bearer ${secret}` },
      data: { inputs: [COMPLAINT] },
    });
    assert.equal(res.status(), 503);
    await screenshot(page, '09-stopped');

    await endpoint.button('delete').click();
    await endpoint.button('delete-yes').click();
    await page.waitForURL(new RegExp(`/w/${workspaceId}/endpoints$`));
    await new EndpointsListPage(page).empty.waitFor();
    assert.deepEqual(owner.problems, [], 'no wasm panic or hydration error');
  });
});
