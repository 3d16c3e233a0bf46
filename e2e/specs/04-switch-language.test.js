//! Story: a user switches the dashboard from Chinese to English. The text changes in place (a marker
//! planted on `window` survives, so the page was not reloaded), `<html lang>` follows, and the choice
//! persists across a reload because it is stored in a cookie the server reads.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startStory } from '../support/story.js';
import { hydrated, plantMarker, readMarker, screenshot, visit } from '../support/browser.js';
import { assertAccessibleBasics, waitForText } from '../support/checks.js';
import { Shell } from '../pages/shell.js';

describe('switching the language', () => {
  const story = startStory({ owner: 'lin', workspace: 'Intent' });

  test('the switch turns the page into English without reloading it', async () => {
    const { page } = story.owner;
    const shell = new Shell(page);
    await visit(page, `/w/${story.workspaceId}/members`);
    await waitForText(shell.pageTitle, '成员');
    await waitForText(shell.navLink('datasets'), '数据集');
    const marker = await plantMarker(page);

    await shell.langSwitch.click();

    await waitForText(shell.pageTitle, 'Members');
    await waitForText(shell.navLink('datasets'), 'Datasets');
    await waitForText(shell.roleBadge, 'Owner');
    await waitForText(shell.langSwitch, '中文');
    assert.equal(await page.getAttribute('html', 'lang'), 'en');
    assert.equal(await readMarker(page), marker, 'the page was not reloaded');
    assert.match(await page.title(), /^Members · Paddock$/);
    await assertAccessibleBasics(page);
    await screenshot(page, '04-members-english');
  });

  test('the choice is remembered by the server', async () => {
    const { page, context } = story.owner;
    const cookie = (await context.cookies()).find((c) => c.name === 'i18n_pref_locale');
    assert.equal(cookie?.value, 'en');
    // The server renders English straight away: check the HTML it sends, before any wasm runs.
    const html = await (await context.request.get(`/w/${story.workspaceId}/activity`)).text();
    assert.match(html, /<html[^>]*lang="en"/);
    assert.match(html, />Activity</);
    // Its rows' "kind: name" in English punctuation, not the Chinese full-width colon.
    const rows = html.split('data-testid="activity-row"').slice(1);
    assert.ok(rows.length > 0, 'the workspace has activity');
    assert.ok(rows.every((row) => !row.split('</tr>')[0].includes('：')), 'no full-width colon in English rows');
    await page.reload();
    await hydrated(page);
    await waitForText(new Shell(page).pageTitle, 'Members');
  });

  test('switching back returns to Chinese', async () => {
    const { page } = story.owner;
    const shell = new Shell(page);
    const marker = await plantMarker(page);
    await shell.langSwitch.click();
    await waitForText(shell.pageTitle, '成员');
    assert.equal(await page.getAttribute('html', 'lang'), 'zh');
    assert.equal(await readMarker(page), marker);
    await screenshot(page, '04-members-chinese');
  });

  test('errors follow the language too', async () => {
    const { page } = story.owner;
    const shell = new Shell(page);
    await shell.langSwitch.click();
    await waitForText(shell.pageTitle, 'Members');
    await page.getByTestId('add-member-username').fill('ghost');
    await page.getByTestId('add-member-submit').click();
    const error = page.getByTestId('add-member-username-error');
    await waitForText(error, 'There is no user with this name.');
    await shell.langSwitch.click();
    await waitForText(error, '没有这个用户名的用户。');
    await screenshot(page, '04-error-chinese');
  });

  test('no wasm panic or hydration error happened', () => {
    assert.deepEqual(story.owner.problems, []);
  });
});
