//! Story: Paddock runs on a machine where no Docker engine answers. The environment pages say so
//! plainly and offer no action that cannot work, and the rest of the dashboard is unaffected.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startStory } from '../support/story.js';
import { screenshot } from '../support/browser.js';
import { assertAccessibleBasics } from '../support/checks.js';
import { EnvironmentFormPage, EnvironmentsListPage } from '../pages/environments.js';
import { MembersPage } from '../pages/workspaces.js';
import { Shell } from '../pages/shell.js';

describe('without Docker the dashboard says so and keeps working', () => {
  const story = startStory({
    owner: 'nadia',
    workspace: 'No Docker',
    // A socket path where nothing listens: the server starts with environments disabled.
    env: { PADDOCK_DOCKER_HOST: 'unix:///nonexistent/paddock-e2e-docker.sock' },
  });

  test('the environments page shows a banner and a disabled "new" button', async () => {
    const { page } = story.owner;
    const list = new EnvironmentsListPage(page);
    await list.goto(story.workspaceId);
    await list.dockerBanner.waitFor();
    await list.empty.waitFor();
    assert.ok(await list.newButton.isDisabled(), 'creating is not offered');
    await assertAccessibleBasics(page);
    await screenshot(page, '07-no-docker');
  });

  test('the form cannot be sent either', async () => {
    const { page } = story.owner;
    const form = new EnvironmentFormPage(page);
    await form.gotoNew(story.workspaceId);
    await page.getByTestId('docker-unavailable').waitFor();
    assert.ok(await form.submitButton.isDisabled());
  });

  test('everything else works', async () => {
    const { page } = story.owner;
    const members = new MembersPage(page);
    await members.goto(story.workspaceId);
    await members.row('nadia').waitFor();
    await new Shell(page).openSection('activity');
    await page.locator('[data-testid="activity-row"][data-action="workspace.create"]').waitFor();
    assert.deepEqual(story.owner.problems, []);
  });
});
