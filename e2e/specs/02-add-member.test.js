//! Story: an owner adds a colleague who has just signed up (in their own browser) to the workspace as
//! a viewer. A mistyped username is refused next to the username field; the addition shows up in the
//! member list, in the heading's member count and in the workspace's activity log. The account menu
//! works from the keyboard.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startStory } from '../support/story.js';
import { plantMarker, readMarker, screenshot } from '../support/browser.js';
import { assertAccessibleBasics, waitForText } from '../support/checks.js';
import { MembersPage } from '../pages/workspaces.js';
import { Shell } from '../pages/shell.js';
import { signUp } from '../pages/flows.js';

describe('an owner adds a second user as viewer', () => {
  const story = startStory({ owner: 'olivia', workspace: 'Sentiment' });
  let colleague;

  before(async () => { colleague = await story.person(); });

  test('the colleague signs up in a separate browser', async () => {
    await signUp(colleague.page, 'victor');
    await waitForText(new Shell(colleague.page).accountName, 'victor');
  });

  test('the owner sees the member form and only themself in the list', async () => {
    const { page } = story.owner;
    const members = new MembersPage(page);
    await members.goto(story.workspaceId);
    await members.addForm.waitFor();
    await members.row('olivia').waitFor();
    assert.equal(await members.table.locator('tbody tr').count(), 1);
    await assertAccessibleBasics(page);
    await screenshot(page, '02-members-owner');
  });

  test('an unknown username is refused next to the field', async () => {
    const { page } = story.owner;
    const members = new MembersPage(page);
    const marker = await plantMarker(page);
    await members.add('nobody-here', 'viewer');
    await waitForText(members.usernameError, '没有这个用户名的用户');
    assert.equal(await page.getByTestId('add-member-username').getAttribute('aria-invalid'), 'true');
    assert.equal(await readMarker(page), marker, 'the error appeared without a reload');
    await screenshot(page, '02-members-unknown-user');
  });

  test('adding the colleague as viewer lists them with that role', async () => {
    const { page } = story.owner;
    const members = new MembersPage(page);
    await members.add('victor', 'viewer');
    await members.row('victor').waitFor();
    assert.equal(await members.roleSelect('victor').inputValue(), 'viewer');
    assert.equal((await members.usernameError.textContent()).trim(), '', 'the old error is gone');
    assert.equal(await page.getByTestId('add-member-username').inputValue(), '', 'the form was cleared');
    await waitForText(page.getByTestId('workspace-members'), '2 名成员');
    await screenshot(page, '02-members-added');
  });

  test('the account menu opens, is walked and closes from the keyboard', async () => {
    const { page } = story.owner;
    const menu = page.getByTestId('account-menu');
    await page.getByTestId('account-toggle').focus();
    await page.keyboard.press('Enter');
    assert.equal(await menu.getAttribute('open'), '', 'Enter opens it');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'tokens-link');
    await page.keyboard.press('Escape');
    assert.equal(await menu.getAttribute('open'), null, 'Escape closes it');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'account-toggle', 'the focus is back on the toggle');
  });

  test('adding them twice is refused', async () => {
    const members = new MembersPage(story.owner.page);
    await members.add('victor', 'editor');
    await waitForText(members.usernameError, '该用户已经是成员');
    assert.equal(await members.roleSelect('victor').inputValue(), 'viewer', 'the role did not change');
  });

  test('the activity log records the addition', async () => {
    const { page } = story.owner;
    await new Shell(page).openSection('activity');
    const row = page.locator('[data-testid="activity-row"][data-action="member.add"]');
    await waitForText(row, 'victor');
    await waitForText(row, 'olivia');
    await screenshot(page, '02-activity');
  });

  test('the colleague now finds the workspace in their switcher', async () => {
    const { page } = colleague;
    await page.goto('/');
    await page.waitForURL(new RegExp(`/w/${story.workspaceId}/environments$`));
    await waitForText(new Shell(page).workspaceName, 'Sentiment');
  });

  test('no wasm panic or hydration error happened', () => {
    assert.deepEqual(story.owner.problems, []);
    assert.deepEqual(colleague.problems, []);
  });
});
