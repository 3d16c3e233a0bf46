//! The stage of one story: registers the `before` and `after` hooks every spec needs — a fresh server,
//! a browser, the story's first person and, when the story starts from a team, their account and
//! workspace — so that a spec's body is its steps. A spec that needs more (a Docker label, an HTTP
//! client of its own) adds hooks of its own after these: node runs `before` hooks, and `after` hooks,
//! in the order they were registered.

import { after, afterEach, before } from 'node:test';

import { startServer } from './server.js';
import { launchBrowser, newPerson, PHONE } from './browser.js';
import { addMember, createWorkspace, signUp } from '../pages/flows.js';

/** How much of the server's log a failed step shows. */
const SERVER_LOG_LINES = 60;

/**
 * Call inside `describe`. Options: `owner` and `workspace`, the username the first person signs up
 * with and the workspace they create (leave both out for a story that starts signed out); `env`,
 * extra environment variables for the server (see `startServer`).
 *
 * Returns the story, filled in by its `before` hook: `server`, `browser`, `owner` (the first person,
 * `{ context, page, problems }`) and `workspaceId`. The `after` hook reports the owner's page problems
 * as a diagnostic (the specs assert them too) and stops the browser and the server, also when a step
 * failed. A step that fails has the end of the server's log attached: on a CI machine, where nothing
 * else of the run is kept, it is what says what the server was doing.
 */
export function startStory({ owner, workspace, env } = {}) {
  const story = {
    /** One more person: a fresh context (their own cookies); `size` e.g. `PHONE`. */
    person(size) { return newPerson(this.browser, this.server.baseURL, size); },

    /** The owner again on a phone: a phone-sized context holding the owner's cookies. */
    async ownerOnPhone() {
      const phone = await this.person(PHONE);
      await phone.context.addCookies(await this.owner.context.cookies());
      return phone;
    },

    /** A colleague signs up in a browser of their own and the owner adds them to the workspace as
     *  `role`; returns the colleague, signed in. */
    async colleague(username, role = 'viewer') {
      const colleague = await this.person();
      await signUp(colleague.page, username);
      await addMember(this.owner.page, this.workspaceId, username, role);
      return colleague;
    },
  };

  before(async () => {
    story.server = await startServer({ env });
    story.browser = await launchBrowser();
    story.owner = await story.person();
    if (owner) {
      await signUp(story.owner.page, owner);
      story.workspaceId = await createWorkspace(story.owner.page, workspace);
    }
  });

  afterEach((t) => {
    if (t.passed || !story.server) return;
    // One diagnostic a line: the TAP reporter CI uses would escape the newlines of one.
    t.diagnostic(`the server's last ${SERVER_LOG_LINES} log lines:`);
    for (const line of story.server.log().trimEnd().split('\n').slice(-SERVER_LOG_LINES)) t.diagnostic(line);
  });

  after(async (t) => {
    // A suite's context has no `diagnostic` before Node 22: there the problems go to stderr, where
    // the run's output keeps them, instead of failing the suite with a TypeError that hides them.
    if (story.owner?.problems.length) {
      const problems = story.owner.problems.join('\n');
      if (typeof t?.diagnostic === 'function') t.diagnostic(problems);
      else console.error(`browser problems:\n${problems}`);
    }
    await story.browser?.close();
    await story.server?.stop();
  });

  return story;
}
