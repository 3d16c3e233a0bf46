//! Story: an owner creates a small busybox environment in the browser, watches its image build and
//! lock appear, starts it, works in its terminal as the non-root user (underscores, Chinese, copy and
//! paste as in a desktop terminal), sees its usage, stops and deletes it; a viewer sees the same
//! environment without any control; a bad spec is refused at its field and creates nothing; the admin
//! sees which base images are here and loads one from an archive. Runs against the real Docker daemon;
//! every container of this server is removed at the end, also when a step fails.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { startStory } from '../support/story.js';
import { hydrated, plantMarker, readMarker, screenshot, visit, withPerson } from '../support/browser.js';
import { assertAccessibleBasics, assertNoHorizontalOverflow, waitForText } from '../support/checks.js';
import { instanceContainers, instanceLabel, removeInstanceObjects } from '../support/docker.js';
import { EnvironmentFormPage, EnvironmentPage, EnvironmentsListPage } from '../pages/environments.js';
import { Shell } from '../pages/shell.js';
import { signIn } from '../pages/flows.js';

const run = promisify(execFile);

const NAME = 'busybox-small';
/** A secret variable's value: it reaches the container, and no page ever shows it. */
const SECRET = 'hf_e2e_SECRET_value_42';

describe('an environment from spec to terminal and back', () => {
  const story = startStory({ owner: 'olivia', workspace: '容器团队' });
  let instance;
  let environmentId;

  before(async () => {
    instance = await instanceLabel(story.server.dataDir);
    // Victor comes back later, in a browser of his own, to look without touching.
    await (await story.colleague('victor', 'viewer')).context.close();
  });

  // After the story's own clean-up (the server is stopped by then, so nothing starts a container again).
  after(async () => {
    if (instance) await removeInstanceObjects(instance);
  });

  test('an editor finds the way to a new environment', async () => {
    const { page } = story.owner;
    const list = new EnvironmentsListPage(page);
    await list.goto(story.workspaceId);
    await list.empty.waitFor();
    assert.equal(await list.dockerBanner.count(), 0, 'Docker is available here');
    await list.newButton.click();
    await page.waitForURL(/\/environments\/new$/);
    const form = new EnvironmentFormPage(page);
    // The local busybox base is the default, and the catalog says what each base needs.
    assert.equal(await form.input('base-image').inputValue(), 'paddock/base:busybox');
    await assertAccessibleBasics(page);
    await screenshot(page, '06-new-environment');
  });

  test('memory "lots" is refused at the memory field, without a reload, and creates nothing', async () => {
    const { page } = story.owner;
    const form = new EnvironmentFormPage(page);
    const marker = await plantMarker(page);
    await form.fill({ name: 'too-vague', cpus: '0.5', memory: 'lots', 'shm-size': '16m' });
    await form.submit();
    await waitForText(form.fieldError('memory'), '"lots" is not a size');
    assert.equal(await form.input('memory').getAttribute('aria-invalid'), 'true');
    assert.equal((await form.fieldError('name').textContent()).trim(), '', 'the name is fine');
    await waitForText(form.formError, 'memory:');
    assert.equal(await form.formError.getAttribute('data-code'), 'spec_invalid');
    assert.match(page.url(), /\/environments\/new$/);
    assert.equal(await readMarker(page), marker, 'the page was not reloaded');
    await screenshot(page, '06-bad-spec');

    // 99 GPUs on this host: refused at the GPU choice (by the preflight, with the server's reason).
    await form.fill({ memory: '64m' });
    await page.getByTestId('env-gpus-count').check();
    await form.fill({ 'gpu-count': '99' });
    await form.submit();
    await waitForText(form.fieldError('gpus'), /\S/);
    assert.equal((await form.fieldError('memory').textContent()).trim(), '', 'memory is fine now');
    // A CPU count that is not a number never leaves the browser.
    await page.getByTestId('env-gpus-none').check();
    await form.fill({ cpus: 'two' });
    await form.submit();
    await waitForText(form.fieldError('cpus'), '“two”');
    assert.equal((await form.fieldError('gpus').textContent()).trim(), '');
    assert.match(page.url(), /\/environments\/new$/);

    const list = new EnvironmentsListPage(page);
    await list.goto(story.workspaceId);
    await list.empty.waitFor();
    assert.equal(await list.row('too-vague').count(), 0);
  });

  test('creating it shows the build log and then the lock', async () => {
    const { page } = story.owner;
    const form = new EnvironmentFormPage(page);
    await form.gotoNew(story.workspaceId);
    await form.fill({ name: NAME, cpus: '0.5', memory: '64m', 'shm-size': '16m', secrets: `HF_TOKEN=${SECRET}` });
    await form.submit();
    const env = new EnvironmentPage(page);
    environmentId = await env.opened();
    await waitForText(page.getByTestId('page-title'), NAME);
    await env.waitForBuild('built');
    await waitForText(env.buildLog, /\S/);
    const imageId = (await env.imageId.textContent()).trim();
    assert.match(imageId, /^sha256:[0-9a-f]{64}$/, 'the lock is an image ID');
    assert.match((await env.specHash.textContent()).trim(), /^[0-9a-f]{64}$/);
    assert.match((await env.buildHash.textContent()).trim(), /^[0-9a-f]{64}$/);
    await env.dockerfile.locator('summary').click();
    await waitForText(env.dockerfile, 'FROM');
    await waitForText(page.getByTestId('spec-resources'), '64m');
    await assertAccessibleBasics(page);
    await screenshot(page, '06-built');
  });

  test('a forced rebuild shows the Docker build log and keeps the lock', async () => {
    const { page } = story.owner;
    const env = new EnvironmentPage(page);
    const before = (await env.imageId.textContent()).trim();
    await env.button('rebuild').click();
    // Queued (the page asks again every 2 s), then built again; the log of this build is Docker's own.
    await page.locator('[data-testid="env-build-status"]:not([data-status="built"])').waitFor();
    await env.waitForBuild('built');
    await waitForText(env.buildLog, 'Step');
    await page.locator('[data-testid="build-log-state"][data-streaming="false"]').waitFor({ state: 'attached' });
    assert.equal((await env.imageId.textContent()).trim(), before, 'the same spec builds the same image');
    assert.equal(await page.getByTestId('env-previous-image-id').count(), 0, 'the lock did not move');
  });

  test('editing the spec saves version 2, which reuses the image', async () => {
    const { page } = story.owner;
    const env = new EnvironmentPage(page);
    const imageId = (await env.imageId.textContent()).trim();
    await env.button('edit').click();
    await page.waitForURL(/\/environments\/\d+\/edit$/);
    const form = new EnvironmentFormPage(page);
    assert.equal(await form.input('memory').inputValue(), '64m', 'the form starts from the current spec');
    assert.equal(await form.input('cpus').inputValue(), '0.5');
    await form.fill({ memory: '96m' });
    await form.submit();
    await page.waitForURL(new RegExp(`/environments/${environmentId}$`));
    await waitForText(page.getByTestId('env-version'), '2');
    await page.getByTestId('env-version-1').waitFor();
    await env.waitForBuild('built');
    // Memory is a limit of the container, not part of the image: the lock stays.
    assert.equal((await env.imageId.textContent()).trim(), imageId);
    await waitForText(page.getByTestId('spec-resources'), '96m');
    await screenshot(page, '06-version-2');
  });

  test('Start runs the container and shows its usage', async () => {
    const { page } = story.owner;
    const env = new EnvironmentPage(page);
    await env.button('up').click();
    await env.waitForStatus('running');
    await env.stats.waitFor();
    await waitForText(page.getByTestId('stats-memory'), '/ 96.0 MiB');
    assert.match((await page.getByTestId('stats-cpu').textContent()).trim(), /^\d+(\.\d)? %$/);
    assert.match((await page.getByTestId('stats-pids').textContent()).trim(), /^\d+$/);
    await page.locator('[data-testid="env-event"][data-kind="up"]').first().waitFor();
    await screenshot(page, '06-running');
    // Statuses are translated like everything else.
    await new Shell(page).langSwitch.click();
    await waitForText(env.status, 'Running');
    await new Shell(page).langSwitch.click();
    await waitForText(env.status, '运行中');
  });

  test('the environment page fits a 375 px wide phone', async () => {
    await withPerson(await story.ownerOnPhone(), async (page) => {
      for (const path of [`environments/${environmentId}`, 'environments', 'environments/new']) {
        await visit(page, `/w/${story.workspaceId}/${path}`);
        await page.getByTestId('page-title').waitFor();
        await assertNoHorizontalOverflow(page);
      }
      const env = new EnvironmentPage(page);
      await env.goto(story.workspaceId, environmentId);
      await env.stats.waitFor();
      await screenshot(page, '06-phone-environment');
    });
  });

  test('the terminal is a shell of the non-root user', async () => {
    const { page } = story.owner;
    const env = new EnvironmentPage(page);
    await env.openTerminal();
    await env.runInTerminal('id -u', '1000');
    await env.runInTerminal('echo $((6*7))', '42');
    // The shell sees the size xterm.js fitted to the page, and follows when the page narrows.
    const wide = await env.terminalCells();
    assert.equal(await env.readFromTerminal('stty size', /^\d+ \d+$/), `${wide.rows} ${wide.cols}`);
    await page.setViewportSize({ width: 960, height: 860 });
    await page.waitForFunction((cols) => document.querySelector('[data-testid="terminal"]').term.cols < cols, wide.cols);
    const narrow = await env.terminalCells();
    assert.equal(await env.readFromTerminal('stty size', /^\d+ \d+$/), `${narrow.rows} ${narrow.cols}`);
    await page.setViewportSize({ width: 1280, height: 860 });
    await assertAccessibleBasics(page);
    await screenshot(page, '06-terminal');
  });

  test('the terminal shows underscores and wide characters, and copies and pastes as a desktop one does', async () => {
    const { context, page } = story.owner;
    const env = new EnvironmentPage(page);
    await env.runInTerminal('echo "a b c"', 'a b c');
    await env.runInTerminal('echo a_b_c', 'a_b_c');
    // The two rows differ only in their underscores: were those cut off, the rows would look the same.
    const rows = env.terminal.locator('.xterm-rows > div');
    const texts = await env.terminalLines();
    const [spaced, underscored] = [texts.lastIndexOf('a b c'), texts.lastIndexOf('a_b_c')];
    const [a, b] = [await rows.nth(spaced).screenshot(), await rows.nth(underscored).screenshot()];
    assert.equal(a.length > 0 && b.length > 0, true);
    assert.notDeepEqual(a, b, 'the underscores are drawn');

    // Chinese takes two cells a character, as in a desktop terminal (printed from its UTF-8 bytes, so
    // that the shell's line editor is not what is tested).
    await env.runInTerminal("printf '\\344\\270\\255\\346\\226\\207ab\\n'", '中文ab');
    const cells = await env.terminal.evaluate((el) => {
      const buffer = el.term.buffer.active;
      for (let y = buffer.length - 1; y >= 0; y--) {
        const line = buffer.getLine(y);
        if (line.translateToString(true) === '中文ab') return [0, 2, 4].map((x) => [line.getCell(x).getChars(), line.getCell(x).getWidth()]);
      }
      return null;
    });
    assert.deepEqual(cells, [['中', 2], ['文', 2], ['a', 1]]);

    // Ctrl+C copies a selection (and is the interrupt without one); Ctrl+V pastes.
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: story.server.baseURL });
    await env.terminal.evaluate((el) => {
      const buffer = el.term.buffer.active;
      for (let y = buffer.length - 1; y >= 0; y--) {
        if (buffer.getLine(y).translateToString(true) === 'a_b_c') { el.term.select(0, y, 5); return; }
      }
    });
    await page.keyboard.press('Control+c');
    await page.waitForFunction(async () => (await navigator.clipboard.readText()) === 'a_b_c');
    await page.keyboard.type('sleep 600');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Control+c');
    await env.runInTerminal('echo interrupted', 'interrupted', 10_000);
    await page.evaluate(() => navigator.clipboard.writeText('echo pasted_ok'));
    await page.keyboard.press('Control+v');
    // The clipboard answers asynchronously: Enter only once the pasted line is on the prompt.
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="terminal"] .xterm-rows > div')]
      .some((row) => row.textContent.replace(/\u00a0/g, ' ').includes('echo pasted_ok')));
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="terminal"] .xterm-rows > div')]
      .some((row) => row.textContent.replace(/\u00a0/g, ' ').trim() === 'pasted_ok'));
  });

  test('Restart ends the open shell; a new terminal works again', async () => {
    const { page } = story.owner;
    const env = new EnvironmentPage(page);
    await env.button('restart').click();
    await page.locator('[data-testid="env-event"][data-kind="restart"]').first().waitFor({ timeout: 60_000 });
    await env.waitForStatus('running');
    // The shell died with the old process tree; the element says so instead of hanging.
    await page.locator('[data-testid="terminal"]:is([data-state="closed"], [data-state="exited"])').waitFor();
    await page.getByTestId('terminal-close').click();
    await env.openTerminal();
    await env.runInTerminal('echo again', 'again');
  });

  test('a viewer sees the environment but no control, form or terminal', async () => {
    await withPerson(await story.person(), async (page) => {
      await signIn(page, 'victor', new RegExp(`/w/${story.workspaceId}/environments$`));
      await hydrated(page);
      const list = new EnvironmentsListPage(page);
      await list.row(NAME).waitFor();
      await list.editorOnlyNote.waitFor();
      assert.equal(await list.newButton.count(), 0, 'no "new environment" button');
      await list.open(NAME);
      const env = new EnvironmentPage(page);
      await env.waitForStatus('running');
      await env.imageId.waitFor();
      assert.equal(await env.actions.count(), 0, 'no lifecycle buttons');
      assert.equal(await env.button('up').count(), 0);
      assert.equal(await env.button('edit').count(), 0);
      assert.equal(await env.terminalOpen.count(), 0, 'no terminal');
      await env.stats.waitFor();
      // The secret's name, never its value.
      await waitForText(page.getByTestId('spec-secret-names'), 'HF_TOKEN');
      assert.ok(!(await page.content()).includes(SECRET), 'the viewer saw the secret');
      await screenshot(page, '06-viewer');
      // The edit page itself refuses, and the form is not there.
      await visit(page, `/w/${story.workspaceId}/environments/${environmentId}/edit`);
      await page.getByTestId('environments-editor-only').waitFor();
      assert.equal(await page.getByTestId('environment-form').count(), 0);
    });
  });

  test('Stop removes the container; Delete removes the environment', async () => {
    const { page } = story.owner;
    const env = new EnvironmentPage(page);
    await env.button('down').click();
    await env.waitForStatus('stopped');
    assert.equal(await env.terminal.count(), 0, 'the terminal closed with the container');
    assert.equal(await env.stats.count(), 0);
    await screenshot(page, '06-stopped');
    await env.delete();
    await new EnvironmentsListPage(page).empty.waitFor();
    assert.deepEqual(await instanceContainers(instance), [], 'no container of this server is left');
  });

  test('an admin sees which base images are here and loads one from a docker save archive', async () => {
    const { page } = story.owner;
    // An archive of a tag this daemon does not have: the busybox base, saved under another name.
    const tag = `paddock-e2e/loaded-${process.pid}:1`;
    const dir = await mkdtemp(path.join(tmpdir(), 'paddock-e2e-image-'));
    const archive = path.join(dir, 'image.tar');
    await run('docker', ['tag', 'paddock/base:busybox', tag]);
    await run('docker', ['save', tag, '-o', archive]);
    await run('docker', ['image', 'rm', tag]);
    try {
      await visit(page, '/admin');
      await page.locator('[data-testid="catalog-image"][data-reference="paddock/base:busybox"][data-present="true"]').waitFor();
      await hydrated(page);
      await page.getByTestId('image-file').setInputFiles(archive);
      await page.getByTestId('image-load').click();
      await waitForText(page.getByTestId('images-loaded'), tag);
      await run('docker', ['image', 'inspect', tag]);
      await assertAccessibleBasics(page);
      await screenshot(page, '06-admin-images');
    } finally {
      await run('docker', ['image', 'rm', '-f', tag]).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('no wasm panic or hydration error happened', () => {
    assert.deepEqual(story.owner.problems, []);
  });
});
