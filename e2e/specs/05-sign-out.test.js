//! Story: a user signs out. They land on the sign-in page, and the dashboard is closed to them again:
//! the server itself answers a redirect to `/signin` (not only the browser code), which remembers the
//! page asked for, and signing in opens that page (never another site).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startStory } from '../support/story.js';
import { screenshot, visit } from '../support/browser.js';
import { waitForText } from '../support/checks.js';
import { SignInPage } from '../pages/auth.js';
import { Shell } from '../pages/shell.js';
import { PASSWORD, signIn } from '../pages/flows.js';

describe('signing out', () => {
  const story = startStory({ owner: 'mei', workspace: 'NER' });

  test('signing out leads to the sign-in page', async () => {
    const { page } = story.owner;
    await visit(page, `/w/${story.workspaceId}/members`);
    await new Shell(page).signOut();
    await waitForText(page.getByTestId('page-title'), '登录 Paddock');
    await screenshot(page, '05-signed-out');
  });

  test('the server now redirects dashboard pages to sign in', async () => {
    const { context, page } = story.owner;
    const res = await context.request.get(`/w/${story.workspaceId}/members`, { maxRedirects: 0 });
    assert.ok([302, 303, 307].includes(res.status()), `a redirect (got ${res.status()})`);
    // The redirect remembers the page, so that signing in comes back to it.
    const next = `next=%2Fw%2F${story.workspaceId}%2Fmembers`;
    assert.match(res.headers().location ?? '', new RegExp(`/signin\\?${next}$`));
    await page.goto(`/w/${story.workspaceId}/members`);
    assert.match(page.url(), new RegExp(`/signin\\?${next}$`));
  });

  test('a wrong password is refused with a message for the whole form', async () => {
    const { page } = story.owner;
    const signin = new SignInPage(page);
    await signin.goto();
    await signin.submit('mei', 'not-the-password');
    await waitForText(signin.formError, '用户名或密码错误');
    assert.match(page.url(), /\/signin$/);
    await screenshot(page, '05-signin-error');
  });

  test('a link followed while signed out opens once signed in; a foreign next goes home', async () => {
    const { page } = story.owner;
    await page.goto(`/w/${story.workspaceId}/members?tab=all`);
    const signin = new SignInPage(page);
    await signin.submit('mei', PASSWORD);
    await page.waitForURL(new RegExp(`/w/${story.workspaceId}/members\\?tab=all$`));
    await new Shell(page).signOut();
    await waitForText(page.getByTestId('page-title'), '登录 Paddock');

    await page.goto('/signin?next=%2F%2Fevil.example%2Fphish');
    await signin.submit('mei', PASSWORD);
    await page.waitForURL(/\/w\/\d+\/environments$/);
    await new Shell(page).signOut();
  });

  test('signing in again works', async () => {
    const { page } = story.owner;
    await signIn(page, 'mei');
    await waitForText(new Shell(page).workspaceName, 'NER');
  });

  test('no wasm panic or hydration error happened', () => {
    assert.deepEqual(story.owner.problems, []);
  });
});
