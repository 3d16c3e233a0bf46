//! Story: a viewer signs in and sees the workspace read-only — a "read-only" badge, no member form,
//! no role or remove controls, and a note instead of the owner's settings.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startStory } from '../support/story.js';
import { screenshot } from '../support/browser.js';
import { assertAccessibleBasics, waitForText } from '../support/checks.js';
import { MembersPage } from '../pages/workspaces.js';
import { Shell } from '../pages/shell.js';
import { signIn } from '../pages/flows.js';

describe('a viewer sees the read-only UI', () => {
  const story = startStory({ owner: 'olivia', workspace: 'Sentiment' });
  let viewer;

  before(async () => {
    // Victor was added as a viewer; the owner leaves, and he comes back in a browser of his own.
    await (await story.colleague('victor', 'viewer')).context.close();
    await story.owner.context.close();
    viewer = await story.person();
  });

  test('signing in opens the shared workspace with a read-only badge', async () => {
    const { page } = viewer;
    await signIn(page, 'victor', new RegExp(`/w/${story.workspaceId}/environments$`));
    const shell = new Shell(page);
    await waitForText(shell.workspaceName, 'Sentiment');
    assert.equal(await shell.roleBadge.getAttribute('data-role'), 'viewer');
    await waitForText(shell.readOnlyBadge, '只读');
    await screenshot(page, '03-viewer-environments');
  });

  test('the members page has no controls, and says why', async () => {
    const { page } = viewer;
    const shell = new Shell(page);
    await shell.openSection('members');
    const members = new MembersPage(page);
    await members.row('olivia').waitFor();
    await members.row('victor').waitFor();
    await members.ownerOnlyNote.waitFor();
    assert.equal(await members.addForm.count(), 0, 'no add-member form');
    assert.equal(await page.locator('[data-testid^="role-select-"]').count(), 0, 'no role selects');
    assert.equal(await page.locator('[data-testid^="remove-"]').count(), 0, 'no remove buttons');
    assert.ok(await shell.readOnlyBadge.isVisible(), 'the read-only badge stays visible');
    await assertAccessibleBasics(page);
    await screenshot(page, '03-viewer-members');
  });

  test('the settings page shows a note instead of the owner forms', async () => {
    const { page } = viewer;
    await new Shell(page).openSection('settings');
    await page.getByTestId('settings-owner-only').waitFor();
    assert.equal(await page.getByTestId('rename-form').count(), 0);
    assert.equal(await page.getByTestId('delete-form').count(), 0);
    await screenshot(page, '03-viewer-settings');
  });

  test('a viewer is not an admin', async () => {
    const { page } = viewer;
    await page.getByTestId('account-toggle').click();
    await page.getByTestId('tokens-link').waitFor();
    assert.equal(await page.getByTestId('admin-link').count(), 0);
    // Typed by hand, the admin page answers 403, in Chinese, and holds none of the instance's settings.
    const response = await page.goto('/admin');
    assert.equal(response.status(), 403);
    const html = await response.text();
    assert.ok(!html.includes('data-testid="signup-state"') && !html.includes('data-testid="clusters"'), html);
    await waitForText(page.getByTestId('forbidden'), '管理员');
    await page.goBack();
  });

  test('no wasm panic or hydration error happened', () => {
    assert.deepEqual(viewer.problems, []);
  });
});
