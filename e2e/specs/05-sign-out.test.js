//! Story: a user signs out. They land on the sign-in page, and the dashboard is closed to them again:
//! the server itself answers a redirect to `/signin` (not only the browser code).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startServer } from '../support/server.js';
import { hydrated, launchBrowser, newPerson, screenshot } from '../support/browser.js';
import { waitForText } from '../support/checks.js';
import { SignInPage } from '../pages/auth.js';
import { Shell } from '../pages/shell.js';
import { createWorkspace, signIn, signUp } from '../pages/flows.js';

describe('signing out', () => {
  let server;
  let browser;
  let person;
  let workspaceId;

  before(async () => {
    server = await startServer();
    browser = await launchBrowser();
    person = await newPerson(browser, server.baseURL);
    await signUp(person.page, 'mei');
    workspaceId = await createWorkspace(person.page, 'NER');
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('signing out leads to the sign-in page', async () => {
    const { page } = person;
    await page.goto(`/w/${workspaceId}/members`);
    await hydrated(page);
    await new Shell(page).signOut();
    await waitForText(page.getByTestId('page-title'), '登录 Paddock');
    await screenshot(page, '05-signed-out');
  });

  test('the server now redirects dashboard pages to sign in', async () => {
    const { context, page } = person;
    const res = await context.request.get(`/w/${workspaceId}/members`, { maxRedirects: 0 });
    assert.ok([302, 303, 307].includes(res.status()), `a redirect (got ${res.status()})`);
    assert.match(res.headers().location ?? '', /\/signin$/);
    await page.goto(`/w/${workspaceId}/members`);
    assert.match(page.url(), /\/signin$/);
  });

  test('a wrong password is refused with a message for the whole form', async () => {
    const { page } = person;
    const signin = new SignInPage(page);
    await signin.goto();
    await signin.submit('mei', 'not-the-password');
    await waitForText(signin.formError, '用户名或密码错误');
    assert.match(page.url(), /\/signin$/);
    await screenshot(page, '05-signin-error');
  });

  test('signing in again works', async () => {
    const { page } = person;
    await signIn(page, 'mei');
    await waitForText(new Shell(page).workspaceName, 'NER');
  });

  test('no wasm panic or hydration error happened', () => {
    assert.deepEqual(person.problems, []);
  });
});
