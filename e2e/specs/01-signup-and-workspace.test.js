//! Story: the first person on a fresh instance signs up, is told what is wrong with a bad password
//! (in Chinese, next to the field, without a reload), creates a workspace and looks around every
//! section. Also proves hydration: client-side navigation keeps a marker planted on `window`.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startStory } from '../support/story.js';
import { hydrated, plantMarker, readMarker, screenshot, visit, withPerson } from '../support/browser.js';
import { assertAccessibleBasics, assertNoHorizontalOverflow, waitForText } from '../support/checks.js';
import { SignUpPage } from '../pages/auth.js';
import { NewWorkspacePage } from '../pages/workspaces.js';
import { Shell } from '../pages/shell.js';
import { PASSWORD } from '../pages/flows.js';

const SECTIONS = [
  ['environments', '环境'],
  ['datasets', '数据集'],
  ['jobs', '任务'],
  ['models', '模型'],
  ['endpoints', '服务端点'],
  ['members', '成员'],
  ['activity', '动态'],
  ['settings', '设置'],
];

describe('a new team signs up and creates a workspace', () => {
  // The first person arrives signed out: signing up is this story's first step.
  const story = startStory();
  let workspaceId;

  test('a signed-out visitor is sent to sign in, in Simplified Chinese', async () => {
    const { page } = story.owner;
    await page.goto('/');
    assert.match(page.url(), /\/signin$/);
    await hydrated(page);
    assert.equal(await page.getAttribute('html', 'lang'), 'zh');
    await waitForText(page.getByTestId('page-title'), '登录 Paddock');
    await assertAccessibleBasics(page);
    await screenshot(page, '01-signin');
  });

  test('a bad password is explained next to its field without a reload', async () => {
    const { page } = story.owner;
    const marker = await plantMarker(page);
    await page.getByTestId('go-signup').click();
    await page.waitForURL(/\/signup$/);
    const signup = new SignUpPage(page);
    await signup.submit('alice', 'short');
    await waitForText(signup.fieldError('password'), '密码至少需要 10 个字符');
    assert.equal(await signup.password.getAttribute('aria-invalid'), 'true');
    assert.equal((await signup.fieldError('username').textContent()).trim(), '', 'the username is fine');
    assert.match(page.url(), /\/signup$/);
    assert.equal(await readMarker(page), marker, 'the page was not reloaded');
    await assertAccessibleBasics(page);
    await screenshot(page, '01-signup-error');
  });

  test('signing up leads to workspace creation', async () => {
    const { page } = story.owner;
    const signup = new SignUpPage(page);
    await signup.submit('alice', PASSWORD);
    await page.waitForURL(/\/workspaces\/new$/);
    await page.getByTestId('no-workspaces').waitFor();
    await waitForText(new Shell(page).accountName, 'alice');
    await assertAccessibleBasics(page);
    await screenshot(page, '01-new-workspace');
  });

  test('an empty workspace name is refused next to the field', async () => {
    const { page } = story.owner;
    const form = new NewWorkspacePage(page);
    await form.name.fill('   ');
    await page.getByTestId('create-workspace-submit').click();
    await waitForText(form.nameError, '请使用 1–64 个字符');
    assert.match(page.url(), /\/workspaces\/new$/);
  });

  test('creating a workspace opens it, with its owner role and empty sections', async () => {
    const { page } = story.owner;
    await new NewWorkspacePage(page).create('中文 NLP 团队');
    const shell = new Shell(page);
    await waitForText(shell.workspaceName, '中文 NLP 团队');
    workspaceId = shell.workspaceId();
    assert.equal(await shell.roleBadge.getAttribute('data-role'), 'owner');
    assert.equal(await shell.readOnlyBadge.count(), 0, 'owners are not read-only');
    await page.getByTestId('empty-environments').waitFor();
    await waitForText(page.getByTestId('current-workspace'), '中文 NLP 团队');
    await screenshot(page, '01-environments');
  });

  test('every section is reachable from the side navigation without a reload', async () => {
    const { page } = story.owner;
    const shell = new Shell(page);
    const marker = await plantMarker(page);
    for (const [section, title] of SECTIONS) {
      await shell.openSection(section);
      await waitForText(shell.pageTitle, title);
      assert.equal(await shell.navLink(section).getAttribute('aria-current'), 'page');
      await assertAccessibleBasics(page);
      await screenshot(page, `01-section-${section}`);
    }
    assert.equal(await readMarker(page), marker, 'navigation happened in the page, not by reloading it');
    // The activity page lists the creation of the workspace.
    await shell.openSection('activity');
    await page.locator('[data-testid="activity-row"][data-action="workspace.create"]').waitFor();
  });

  test('renaming the workspace updates the heading and the switcher in place', async () => {
    const { page } = story.owner;
    const shell = new Shell(page);
    await shell.openSection('settings');
    const marker = await plantMarker(page);
    await page.getByTestId('rename-name').fill('中文 NLP 实验室');
    await page.getByTestId('rename-submit').click();
    await page.getByTestId('rename-done').waitFor();
    await waitForText(shell.workspaceName, '中文 NLP 实验室');
    await waitForText(page.getByTestId('current-workspace'), '中文 NLP 实验室');
    assert.equal(await readMarker(page), marker, 'the page was not reloaded');
    await screenshot(page, '01-settings-renamed');
    // Deleting stays off until the workspace's name is typed exactly (and off again when it is not).
    const name = (await page.locator('label[for="delete-confirm"] strong').textContent()).trim();
    const confirm = page.getByTestId('delete-confirm');
    assert.ok(await page.getByTestId('delete-submit').isDisabled(), 'off before the name is typed');
    await confirm.fill(name.slice(0, -1));
    await page.locator('[data-testid="delete-submit"][disabled]').waitFor();
    await confirm.fill(name);
    await page.locator('[data-testid="delete-submit"]:not([disabled])').waitFor();
    await confirm.fill('');
    await page.locator('[data-testid="delete-submit"][disabled]').waitFor();
  });

  test('the first account administers the instance', async () => {
    const { page } = story.owner;
    await page.getByTestId('account-toggle').click();
    await page.getByTestId('admin-link').click();
    await page.waitForURL(/\/admin$/);
    await page.getByTestId('user-row-alice').waitFor();
    assert.equal(await page.getByTestId('signup-state').getAttribute('data-enabled'), 'true');
    // Pickled model weights are refused until an admin allows them, and the switch goes both ways.
    const pickled = page.getByTestId('pickled-state');
    assert.equal(await pickled.getAttribute('data-allowed'), 'false');
    await hydrated(page);
    await page.getByTestId('pickled-toggle').click();
    await page.locator('[data-testid="pickled-state"][data-allowed="true"]').waitFor();
    await page.getByTestId('pickled-toggle').click();
    await page.locator('[data-testid="pickled-state"][data-allowed="false"]').waitFor();
    await assertAccessibleBasics(page);
    await screenshot(page, '01-admin');
  });

  test('a personal API token is shown once after creation', async () => {
    const { page } = story.owner;
    await visit(page, '/settings/tokens');
    await page.getByTestId('tokens-empty').waitFor();
    await page.getByTestId('token-name').fill('ci-pipeline');
    await page.getByTestId('token-submit').click();
    const secret = (await page.getByTestId('new-token-secret').textContent()).trim();
    assert.ok(secret.length >= 20, `a long secret (got ${secret.length} characters)`);
    await page.getByTestId('token-row-ci-pipeline').waitFor();
    // Read and write, expiring in 90 days, unless chosen otherwise.
    assert.equal((await page.getByTestId('token-scope-ci-pipeline').textContent()).trim(), '读写');
    await page.getByTestId('token-name').fill('grafana');
    await page.getByTestId('token-scope').selectOption('read');
    await page.getByTestId('token-expiry').selectOption('0');
    await page.getByTestId('token-submit').click();
    await page.getByTestId('token-row-grafana').waitFor();
    assert.equal((await page.getByTestId('token-scope-grafana').textContent()).trim(), '只读');
    await assertAccessibleBasics(page);
    await screenshot(page, '01-tokens');
  });

  test('the dashboard fits a 375 px wide phone', async () => {
    await withPerson(await story.ownerOnPhone(), async (page) => {
      for (const section of ['environments', 'members', 'activity']) {
        await visit(page, `/w/${workspaceId}/${section}`);
        await new Shell(page).pageTitle.waitFor();
        await assertNoHorizontalOverflow(page);
        await screenshot(page, `01-phone-${section}`);
      }
    });
  });

  test('no wasm panic or hydration error happened', () => {
    assert.deepEqual(story.owner.problems, []);
  });
});
