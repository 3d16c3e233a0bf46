//! Story: Paddock runs on a machine where no Docker engine answers. The environment pages say so
//! plainly and offer no action that cannot work, and the rest of the dashboard is unaffected.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startServer } from '../support/server.js';
import { launchBrowser, newPerson, screenshot } from '../support/browser.js';
import { assertAccessibleBasics } from '../support/checks.js';
import { EnvironmentFormPage, EnvironmentsListPage } from '../pages/environments.js';
import { MembersPage } from '../pages/workspaces.js';
import { Shell } from '../pages/shell.js';
import { createWorkspace, signUp } from '../pages/flows.js';

describe('without Docker the dashboard says so and keeps working', () => {
  let server;
  let browser;
  let person;
  let workspaceId;

  before(async () => {
    // A socket path where nothing listens: the server starts with environments disabled.
    server = await startServer({ env: { PADDOCK_DOCKER_HOST: 'unix:///nonexistent/paddock-e2e-docker.sock' } });
    browser = await launchBrowser();
    person = await newPerson(browser, server.baseURL);
    await signUp(person.page, 'nadia');
    workspaceId = await createWorkspace(person.page, 'No Docker');
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('the environments page shows a banner and a disabled "new" button', async () => {
    const { page } = person;
    const list = new EnvironmentsListPage(page);
    await list.goto(workspaceId);
    await list.dockerBanner.waitFor();
    await list.empty.waitFor();
    assert.ok(await list.newButton.isDisabled(), 'creating is not offered');
    await assertAccessibleBasics(page);
    await screenshot(page, '07-no-docker');
  });

  test('the form cannot be sent either', async () => {
    const { page } = person;
    const form = new EnvironmentFormPage(page);
    await form.gotoNew(workspaceId);
    await page.getByTestId('docker-unavailable').waitFor();
    assert.ok(await form.submitButton.isDisabled());
  });

  test('everything else works', async () => {
    const { page } = person;
    const members = new MembersPage(page);
    await members.goto(workspaceId);
    await members.row('nadia').waitFor();
    await new Shell(page).openSection('activity');
    await page.locator('[data-testid="activity-row"][data-action="workspace.create"]').waitFor();
    assert.deepEqual(person.problems, []);
  });
});
