//! Story: a server on the login node of a Slurm cluster (the two-node test cluster `scripts/slurm.sh`
//! starts, which `make test` brings up), in Chinese — the admin page shows the cluster as its scheduler
//! sees it (the partition this server's jobs go to, both nodes with their GPUs) and that its nodes read
//! and write this server's data directory (the shared-directory check); the job form offers the
//! cluster with its free GPUs and, once it is chosen, its partitions; a job sent to the `short`
//! partition is queued and placed by Slurm, runs, and its page says where (the cluster, the partition,
//! Slurm's job id, and what Slurm says of it) and its checkpoint is evaluated there; its checkpoint
//! deploys with replicas on the cluster, which the endpoint page names, and the playground answers
//! through them, its replicas in the partition picked in the deploy form; on the admin page the
//! shared-directory check runs again at a click, and the workspace is charged to an account of its own;
//! a second cluster is registered from the admin page's form (after a refusal, said in Chinese, that
//! keeps what was typed) and removed again; a job across both nodes trains as one run of two ranks,
//! each saying in the log where it runs.

import { describe, test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { startStory } from '../support/story.js';
import { screenshot, visit } from '../support/browser.js';
import { assertNotEnglish, assertPageNotEnglish, waitForText } from '../support/checks.js';
import { EvaluationsPanel, JobFormPage } from '../pages/jobs.js';
import { DeployDialog } from '../pages/endpoints.js';
import { addSampleDataset, createWorkspace, signUp } from '../pages/flows.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const SLURM_CONF = process.env.PADDOCK_TEST_SLURM_CONF || path.resolve(here, '..', '..', 'target', 'slurm', 'slurm.conf');
/** Names from the test cluster and this story, which show in Latin letters. */
const NAMES = ['liwei', 'slurm', 'gpu', 'short', 'node', 'snownlp', 'sample', 'on_cluster', 'negative', 'positive'];
/** The model shapes (ERNIE 3.0's names for them): names too. */
const PRESETS = ['base', 'medium', 'mini', 'micro', 'nano', 'tiny'];

const run = promisify(execFile);
/** Runs one of the test cluster's tools, as a user of the cluster would. */
async function slurm(tool, args) {
  const { stdout } = await run(tool, args, { env: { ...process.env, SLURM_CONF } });
  return stdout.trim();
}
/** Submits a batch job of someone else's; its Slurm id. */
async function sbatch(args) {
  return (await slurm('sbatch', ['--parsable', ...args])).split(';')[0];
}

/** The clusters card's words but what Slurm says (states, node lists, time limits: shown as code) and
 *  what was typed into its fields. */
async function clustersCard(page) {
  return page.getByTestId('clusters').evaluate((card) => {
    const copy = card.cloneNode(true);
    copy.querySelectorAll('code, input').forEach((e) => e.remove());
    copy.querySelectorAll('th, td, p, h2, h3, h4').forEach((e) => e.append(' '));
    return copy.textContent;
  });
}

describe('a Slurm cluster in the browser: its nodes on the admin page, a job placed there', () => {
  before(() => {
    assert.ok(existsSync(SLURM_CONF), `${SLURM_CONF} is missing: start the test cluster with scripts/slurm.sh`);
  });
  // One CPU and 1000 MB a job, so that each test node (2 CPUs, 4000 MB) could hold two.
  const story = startStory({
    env: { PADDOCK_SLURM_CONF: SLURM_CONF, PADDOCK_SLURM_CPUS: '1', PADDOCK_SLURM_MEMORY_MB: '1000' },
  });
  let workspaceId;
  let datasetId;

  test("the admin page shows the cluster's partition and both nodes with their GPUs", async () => {
    const { page } = story.owner;
    await signUp(page, 'liwei');
    await visit(page, '/admin');
    const cluster = page.locator('[data-testid="cluster"][data-name="slurm"]');
    await cluster.waitFor();
    const partition = cluster.locator('[data-testid="cluster-partition"][data-name="gpu"]');
    await partition.getByTestId('cluster-partition-ours').waitFor();
    await waitForText(partition.getByTestId('cluster-partition-gpus'), '/ 4');
    for (const name of ['node1', 'node2']) {
      const node = cluster.locator(`[data-testid="cluster-node"][data-name="${name}"]`);
      assert.equal(await node.getAttribute('data-up'), 'true', name);
      await waitForText(node.getByTestId('cluster-node-gpus'), '/2');
    }
    // The shared-directory check the server ran at start: both partitions' nodes read and write its
    // data directory (the page is read again until the check has finished).
    const shared = cluster.getByTestId('cluster-shared-dir');
    for (let i = 0; i < 60 && (await shared.getAttribute('data-ok')) !== 'true'; i++) {
      await page.waitForTimeout(1000);
      await visit(page, '/admin');
    }
    assert.equal(await shared.getAttribute('data-ok'), 'true');
    const checked = cluster.locator('[data-testid="cluster-shared-dir-partition"][data-ok="true"]');
    assert.equal(await checked.count(), 2, 'gpu and short');
    // Each checked node's NVIDIA driver, as its check job read it: none on the test cluster.
    const drivers = cluster.getByTestId('cluster-node-driver');
    assert.equal(await drivers.count(), 2);
    for (const driver of await drivers.all()) {
      assert.equal(await driver.getAttribute('data-driver'), '');
      await waitForText(driver, '没有 NVIDIA 驱动');
    }
    // The card in Chinese; what Slurm says (states, node lists, time limits) is shown as code.
    assertNotEnglish(await clustersCard(page), NAMES, 'the clusters card');
    await screenshot(page, '12-cluster');
  });

  test('the job form offers the cluster; a job sent there runs on one of its nodes', async () => {
    const { page } = story.owner;
    await visit(page, '/workspaces/new');
    workspaceId = await createWorkspace(page, '集群组');
    datasetId = await addSampleDataset(page, workspaceId);
    const form = new JobFormPage(page);
    await form.goto(workspaceId, `?dataset=${datasetId}`);
    const option = page.locator('[data-testid="job-cluster"] option[data-cluster="slurm"]');
    await option.waitFor({ state: 'attached' });
    assert.match(await option.textContent(), /集群 slurm · 分区 gpu · 空闲 GPU 4\/4/);
    await assertPageNotEnglish(page, [...NAMES, ...PRESETS]);
    assert.equal(await page.getByTestId('job-partition').count(), 0, 'no partition to pick on this server');
    await form.fill({ cluster: 'slurm' });
    // The cluster's partitions, once it is chosen: its default first.
    const partitions = page.locator('[data-testid="job-partition"] option');
    await partitions.nth(2).waitFor({ state: 'attached' });
    assert.deepEqual(await partitions.allTextContents(), ['默认（gpu）', 'gpu · 空闲 GPU 4/4', 'short · 空闲 GPU 2/2']);
    await form.fill({ partition: 'short', name: 'on_cluster', preset: 'tiny', 'max-seq-len': 32, 'batch-size': 16, 'max-steps': 6, 'eval-every-steps': 6 });
    // Another user's job holds all of `short`'s one node: ours waits in Slurm's queue, and Paddock
    // says it waits for the cluster rather than calling it running, on its page and in the list.
    const blocker = await sbatch(['--partition=short', '--cpus-per-task=2', '--mem=100', '--output=/dev/null', '--wrap=sleep 600']);
    let job;
    try {
      job = await form.create();
      await waitForText(page.getByTestId('job-cluster'), 'slurm');
      await waitForText(page.getByTestId('job-placement'), '在集群的队列中等待节点');
      const waitingPage = new URL(page.url()).pathname;
      await visit(page, `/w/${workspaceId}/jobs`);
      const waiting = page.locator('[data-testid^="job-row-"][data-name="on_cluster"]');
      await waitForText(waiting.getByTestId('job-cluster-waiting'), '等待集群开始运行');
      await visit(page, waitingPage);
    } finally {
      await slurm('scancel', [blocker]);
    }
    await job.waitForStatus('succeeded');
    // Slurm's job id, as its tools would show it.
    assert.match(await page.getByTestId('job-cluster').textContent(), /slurm · 分区 short · 作业 \d+/);
    // One row says where it runs (not a "local process" beside the cluster), and the jobs list agrees.
    assert.match(await page.getByTestId('job-runs-on').textContent(), /^集群 slurm · 分区 short · 作业 \d+$/);
    // `short` has node2 alone.
    await waitForText(page.getByTestId('job-placement'), 'node2');
    await job.checkpointRows.first().waitFor();
    await assertPageNotEnglish(page, [...NAMES, ...PRESETS]);
    // Its checkpoint evaluated on the cluster too.
    const evaluations = new EvaluationsPanel(page);
    await evaluations.form.getByTestId('evaluate-cluster').selectOption('slurm');
    await evaluations.evaluate(datasetId);
    await evaluations.row('succeeded').waitFor({ timeout: 120_000 });
    // The jobs list says the same; then back to the job, whose checkpoint the next step deploys.
    const jobPage = new URL(page.url()).pathname;
    await visit(page, `/w/${workspaceId}/jobs`);
    const row = page.locator('[data-testid^="job-row-"][data-name="on_cluster"]');
    assert.equal((await row.getByTestId('job-runs-on').textContent()).trim(), '集群 slurm');
    await visit(page, jobPage);
  });

  test("its checkpoint deploys onto the cluster: the endpoint names it, each replica its Slurm job, and it answers", async () => {
    const { page } = story.owner;
    const deploy = new DeployDialog(page);
    await deploy.open();
    const option = page.locator('[data-testid="deploy-cluster"] option[data-cluster="slurm"]');
    await option.waitFor({ state: 'attached' });
    await deploy.input('cluster').selectOption('slurm');
    // Its replicas go to the partition picked here, as a job's do.
    const partitions = deploy.input('partition').locator('option');
    await partitions.nth(2).waitFor({ state: 'attached' });
    await deploy.input('partition').selectOption('short');
    const endpoint = await deploy.deploy();
    await endpoint.waitForStatus('ready');
    await waitForText(page.getByTestId('endpoint-cluster'), '集群 slurm · 分区 short');
    assert.match(await endpoint.replicaRows.first().getByTestId('replica-cluster-job').textContent(), /作业 \d+/);
    await endpoint.predict(['这家店的服务很好', '太差了']);
    await endpoint.results.nth(1).waitFor();
    await assertPageNotEnglish(page, [...NAMES, ...PRESETS]);
    await screenshot(page, '12-endpoint-on-cluster');
    // Undeployed, its replicas' batch jobs end with it.
    await endpoint.confirm('undeploy');
    await endpoint.waitForStatus('stopped', 60_000);
  });

  test("on the admin page the shared directory is checked again, and a workspace is charged to its own account", async () => {
    const { page } = story.owner;
    await visit(page, '/admin');
    const cluster = page.locator('[data-testid="cluster"][data-name="slurm"]');
    // A batch job on each partition, then the card is read again.
    await Promise.all([
      page.waitForResponse((r) => r.url().includes('/rpc/check_cluster'), { timeout: 120_000 }),
      cluster.getByTestId('cluster-shared-dir-recheck').click(),
    ]);
    await cluster.locator('[data-testid="cluster-shared-dir"][data-ok="true"]').waitFor();
    const row = cluster.locator('[data-testid="cluster-account"][data-workspace="集群组"]');
    await row.getByTestId('cluster-account-account').fill('team-a');
    await row.getByTestId('cluster-account-qos').fill('normal');
    await Promise.all([
      page.waitForResponse((r) => r.url().includes('/rpc/set_cluster_account')),
      row.getByTestId('cluster-account-save').click(),
    ]);
    await visit(page, '/admin');
    assert.equal(await row.getByTestId('cluster-account-account').inputValue(), 'team-a');
    assert.equal(await row.getByTestId('cluster-account-qos').inputValue(), 'normal');
    // A name Slurm would not take is refused, and said in Chinese.
    await row.getByTestId('cluster-account-account').fill('team a;');
    await row.getByTestId('cluster-account-save').click();
    await page.locator('[data-testid="cluster-accounts"] [role="alert"]').waitFor();
    assertNotEnglish(await clustersCard(page), [...NAMES, 'team'], 'the clusters card');
    await screenshot(page, '12-cluster-accounts');
  });

  test('an admin registers a second cluster from the form, after a refusal said in Chinese, and removes it', async () => {
    const { page } = story.owner;
    await visit(page, '/admin');
    const form = page.getByTestId('register-cluster-form');
    // The server's SSH public key, for a login node reached over SSH.
    assert.match(await page.getByTestId('cluster-ssh-key').textContent(), /^ssh-ed25519 /);
    await form.getByTestId('cluster-name').fill('Lab 1');
    await form.getByTestId('cluster-slurm-conf').fill('slurm.conf');
    await Promise.all([
      page.waitForResponse((r) => r.url().includes('/rpc/register_cluster')),
      form.getByTestId('cluster-register').click(),
    ]);
    for (const field of ['cluster-name', 'cluster-slurm-conf']) {
      const error = page.getByTestId(`${field}-error`);
      await error.filter({ hasText: /\S/ }).waitFor();
      assertNotEnglish(await error.textContent(), [], `the error under ${field}`);
    }
    // What was typed stays, to be corrected.
    assert.equal(await form.getByTestId('cluster-name').inputValue(), 'Lab 1');
    await form.getByTestId('cluster-name').fill('lab');
    await form.getByTestId('cluster-slurm-conf').fill(SLURM_CONF);
    await form.getByTestId('cluster-partition').fill('short');
    await form.getByTestId('cluster-cpus').fill('1');
    await form.getByTestId('cluster-memory').fill('1000');
    // The stand-ins switch is folded under "only for a test cluster", out of a real registration's way.
    assert.equal(await form.getByTestId('cluster-stand-ins').isVisible(), false);
    await form.getByTestId('cluster-test-options').locator('summary').click();
    await form.getByTestId('cluster-stand-ins').check();
    await Promise.all([
      page.waitForResponse((r) => r.url().includes('/rpc/register_cluster')),
      form.getByTestId('cluster-register').click(),
    ]);
    const lab = page.locator('[data-testid="cluster"][data-name="lab"]');
    await lab.waitFor();
    assert.equal(await lab.getAttribute('data-registered'), 'true');
    await lab.locator('[data-testid="cluster-partition"][data-name="short"] [data-testid="cluster-partition-ours"]').waitFor();
    // The cluster from the server's settings has no remove button; this one has.
    const own = page.locator('[data-testid="cluster"][data-name="slurm"]');
    assert.equal(await own.getByTestId('cluster-remove').count(), 0);
    assertNotEnglish(await clustersCard(page), [...NAMES, 'lab'], 'the clusters card with two clusters');
    await screenshot(page, '12-cluster-registered');
    await Promise.all([
      page.waitForResponse((r) => r.url().includes('/rpc/remove_cluster')),
      lab.getByTestId('cluster-remove').click(),
    ]);
    await lab.waitFor({ state: 'detached' });
  });

  test('a job across both nodes of the cluster trains as one run, each rank saying where it runs', async () => {
    const { page } = story.owner;
    const form = new JobFormPage(page);
    await form.goto(workspaceId, `?dataset=${datasetId}`);
    await form.fill({ cluster: 'slurm' });
    await form.fill({ partition: 'gpu', nodes: 2, name: 'two_nodes', preset: 'tiny', 'max-seq-len': 32, 'batch-size': 16, 'max-steps': 6, 'eval-every-steps': 6 });
    const job = await form.create();
    await job.waitForStatus('succeeded');
    assert.equal((await page.getByTestId('job-nodes').textContent()).trim(), '2');
    await waitForText(page.getByTestId('job-placement'), 'node[1-2]');
    await waitForText(job.log, 'rank 1 of 2 on node');
    await waitForText(job.log, 'rank 0 of 2 on node');
    await assertPageNotEnglish(page, [...NAMES, ...PRESETS, 'two_nodes']);
  });

  test('no wasm panic or hydration error happened', () => {
    assert.deepEqual(story.owner.problems, []);
  });
});
