//! Steps several stories share, built from the page objects: a person signs up (and lands where a
//! new account lands), creates a workspace, signs in; an owner adds a member; the sample dataset is added.

import assert from 'node:assert/strict';
import { SignInPage, SignUpPage } from './auth.js';
import { MembersPage, NewWorkspacePage } from './workspaces.js';
import { DatasetPage, DatasetsListPage } from './datasets.js';
import { Shell } from './shell.js';

/** A password that satisfies the 10-character minimum. */
export const PASSWORD = 'correct-horse-battery';

/** Signs up and waits for the redirect that follows: `/workspaces/new` for someone without a
 *  workspace. */
export async function signUp(page, username) {
  const signup = new SignUpPage(page);
  await signup.goto();
  await signup.submit(username, PASSWORD);
  await page.waitForURL(/\/workspaces\/new$/);
}

/** Creates a workspace from `/workspaces/new`; returns its id. */
export async function createWorkspace(page, name) {
  await new NewWorkspacePage(page).create(name);
  const shell = new Shell(page);
  await assert.doesNotReject(shell.workspaceName.filter({ hasText: name }).waitFor());
  return shell.workspaceId();
}

/** Signs in and waits for `expectedUrl`: by default the first workspace's environments, where someone
 *  with a workspace lands. */
export async function signIn(page, username, expectedUrl = /\/w\/\d+\/environments$/) {
  const signin = new SignInPage(page);
  await signin.goto();
  await signin.submit(username, PASSWORD);
  await page.waitForURL(expectedUrl);
}

/** The owner (signed in on `page`) adds `username`, who has an account, to the workspace as `role`,
 *  and waits until the member list shows them. */
export async function addMember(page, workspaceId, username, role) {
  const members = new MembersPage(page);
  await members.goto(workspaceId);
  await members.add(username, role);
  await members.row(username).waitFor();
}

/** Adds the built-in sample dataset to the workspace and waits for its page; returns its id. */
export async function addSampleDataset(page, workspaceId) {
  const datasets = new DatasetsListPage(page);
  await datasets.goto(workspaceId);
  await datasets.createSample();
  const dataset = new DatasetPage(page);
  await dataset.opened();
  return dataset.id();
}
