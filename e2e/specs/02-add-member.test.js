//! Story: an owner adds a colleague who has just signed up (in their own browser) to the workspace as
//! a viewer. A mistyped username is refused next to the username field; the addition shows up in the
//! member list and in the workspace's activity log.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startServer } from '../support/server.js';
import { launchBrowser, newPerson, plantMarker, readMarker, screenshot } from '../support/browser.js';
import { assertAccessibleBasics, waitForText } from '../support/checks.js';
import { MembersPage } from '../pages/workspaces.js';
import { Shell } from '../pages/shell.js';
import { createWorkspace, signUp } from '../pages/flows.js';

describe('an owner adds a second user as viewer', () => {
  let server;
  let browser;
  let owner;
  let colleague;
  let workspaceId;

  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
    owner = await newPerson(browser, server.baseURL);
    colleague = await newPerson(browser, server.baseURL);
    await signUp(owner.page, 'olivia');
    workspaceId = await createWorkspace(owner.page, 'Sentiment');
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('the colleague signs up in a separate browser', async () => {
    await signUp(colleague.page, 'victor');
    await waitForText(new Shell(colleague.page).accountName, 'victor');
  });

  test('the owner sees the member form and only themself in the list', async () => {
    const members = new MembersPage(owner.page);
    await members.goto(workspaceId);
    await members.addForm.waitFor();
    await members.row('olivia').waitFor();
    assert.equal(await members.table.locator('tbody tr').count(), 1);
    await assertAccessibleBasics(owner.page);
    await screenshot(owner.page, '02-members-owner');
  });

  test('an unknown username is refused next to the field', async () => {
    const members = new MembersPage(owner.page);
    const marker = await plantMarker(owner.page);
    await members.add('nobody-here', 'viewer');
    await waitForText(members.usernameError, '没有这个用户名的用户');
    assert.equal(await owner.page.getByTestId('add-member-username').getAttribute('aria-invalid'), 'true');
    assert.equal(await readMarker(owner.page), marker, 'the error appeared without a reload');
    await screenshot(owner.page, '02-members-unknown-user');
  });

  test('adding the colleague as viewer lists them with that role', async () => {
    const members = new MembersPage(owner.page);
    await members.add('victor', 'viewer');
    await members.row('victor').waitFor();
    assert.equal(await members.roleSelect('victor').inputValue(), 'viewer');
    assert.equal((await members.usernameError.textContent()).trim(), '', 'the old error is gone');
    assert.equal(await owner.page.getByTestId('add-member-username').inputValue(), '', 'the form was cleared');
    await screenshot(owner.page, '02-members-added');
  });

  test('adding them twice is refused', async () => {
    const members = new MembersPage(owner.page);
    await members.add('victor', 'editor');
    await waitForText(members.usernameError, '该用户已经是成员');
    assert.equal(await members.roleSelect('victor').inputValue(), 'viewer', 'the role did not change');
  });

  test('the activity log records the addition', async () => {
    const shell = new Shell(owner.page);
    await shell.openSection('activity');
    const row = owner.page.locator('[data-testid="activity-row"][data-action="member.add"]');
    await waitForText(row, 'victor');
    await waitForText(row, 'olivia');
    await screenshot(owner.page, '02-activity');
  });

  test('the colleague now finds the workspace in their switcher', async () => {
    const { page } = colleague;
    await page.goto('/');
    await page.waitForURL(new RegExp(`/w/${workspaceId}/environments$`));
    await waitForText(new Shell(page).workspaceName, 'Sentiment');
  });

  test('no wasm panic or hydration error happened', () => {
    assert.deepEqual(owner.problems, []);
    assert.deepEqual(colleague.problems, []);
  });
});
