//! Story: a company's admin connects Paddock to its OpenID provider and to its LDAP directory from the
//! admin page; people then sign in through the provider's own pages and through the directory, and
//! land in the workspace their group maps to with that role. Leaving the group takes the workspace
//! away at the next sign-in; a bad or expired ID token, a replayed sign-in, a provider that is down, a
//! wrong directory password and a filter injection are each refused in Chinese, audited, and create
//! nothing. The OpenID provider is the npm package `oidc-provider` (e2e/idp/server.mjs), the
//! directory Debian's slapd (scripts/ldap.sh).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startStory } from '../support/story.js';
import { screenshot, visit, withPerson } from '../support/browser.js';
import { waitForText } from '../support/checks.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const person = (login, groups) => ({ login, password: `${login} password`, email: `${login}@corp.example`, groups });

/** The test OpenID provider, for this spec's server. */
async function startIdp(redirectUri, people) {
  const child = spawn('node', [path.join(here, '..', 'idp', 'server.mjs')], {
    env: { ...process.env, CLIENT_ID: 'paddock', CLIENT_SECRET: 'idp-client-secret', REDIRECT_URIS: redirectUri, PEOPLE: JSON.stringify(people) },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const [line] = await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next().then((r) => [r.value]);
  const { issuer } = JSON.parse(line);
  const set = async (what, body) => {
    const res = await fetch(`${issuer}/__test/${what}`, { method: 'POST', body: JSON.stringify(body) });
    assert.equal(res.status, 204);
  };
  return { issuer, set, stop: () => child.kill() };
}

/** Adds LDIF entries to the test directory as its manager. */
function ldapadd(ldif) {
  execFileSync('ldapadd', ['-x', '-H', 'ldap://127.0.0.1:13389', '-D', 'cn=admin,dc=paddock,dc=test', '-w', 'manager'], { input: ldif, stdio: ['pipe', 'ignore', 'inherit'] });
}

describe('company sign-in', () => {
  const story = startStory({ owner: 'admin-zhou', workspace: '中文 NLP' });
  const tag = Math.random().toString(16).slice(2, 8);
  const uid = `chen-${tag}`;
  let idp;

  before(async () => {
    idp = await startIdp(`${story.server.baseURL}/api/v1/auth/oidc/corp-sso/callback`, [person('wang', ['nlp-team']), person('li', [])]);
    ldapadd(`dn: uid=${uid},ou=people,dc=paddock,dc=test\nobjectClass: inetOrgPerson\nuid: ${uid}\ncn: ${uid}\nsn: 陈\nmail: ${uid}@corp.example\nuserPassword: chen password\n\n`
      + `dn: cn=readers-${tag},ou=groups,dc=paddock,dc=test\nobjectClass: groupOfNames\ncn: readers-${tag}\nmember: uid=${uid},ou=people,dc=paddock,dc=test\n`);
  });
  after(() => idp?.stop());

  /** How many accounts there are (the admin's view). */
  const accounts = async () => (await (await story.owner.page.request.get('/api/v1/admin/users')).json()).length;
  /** The refusals the instance audit log holds, by code. */
  const refusals = async () => {
    const log = await (await story.owner.page.request.get('/api/v1/admin/audit')).json();
    return log.filter((e) => e.action === 'signin.refused').map((e) => JSON.parse(e.detail).code);
  };

  test('the admin adds an OpenID provider and a directory, maps their groups and tests them', async () => {
    const { page } = story.owner;
    await visit(page, '/admin');
    const form = page.getByTestId('idp-new-form');
    await form.getByTestId('idp-new-name').fill('corp-sso');
    await form.getByTestId('idp-new-display_name').fill('企业统一认证');
    await form.getByTestId('idp-new-secret').fill('idp-client-secret');
    await form.getByTestId('idp-new-issuer').fill(idp.issuer);
    await form.getByTestId('idp-new-client_id').fill('paddock');
    await form.getByTestId('idp-new-scopes').fill('profile email groups');
    await form.getByTestId('idp-new-create').click();
    const sso = page.getByTestId('idp-corp-sso');
    await sso.waitFor();
    assert.equal(await sso.getByTestId('idp-callback').textContent(), '/api/v1/auth/oidc/corp-sso/callback');
    await sso.getByTestId('idp-mapping-group').fill('nlp-team');
    await sso.getByTestId('idp-mapping-target').selectOption({ label: '中文 NLP' });
    await sso.getByTestId('idp-mapping-role').selectOption('editor');
    await sso.getByTestId('idp-mapping-add').click();
    await waitForText(sso.getByTestId('idp-mapping'), '中文 NLP · 编辑者');
    await sso.getByTestId('idp-check').click();
    await waitForText(sso.getByTestId('idp-check-steps'), '读取签名密钥 成功');

    await form.getByTestId('idp-new-kind').selectOption('ldap');
    await form.getByTestId('idp-new-name').fill('corp-ldap');
    await form.getByTestId('idp-new-display_name').fill('公司目录');
    await form.getByTestId('idp-new-secret').fill('service');
    await form.getByTestId('idp-new-url').fill('ldap://127.0.0.1:13389');
    await form.getByTestId('idp-new-ca_pem').fill(readFileSync(path.join(here, '..', '..', 'target', 'ldap', 'ca.pem'), 'utf8'));
    await form.getByTestId('idp-new-bind_dn').fill('cn=paddock,ou=services,dc=paddock,dc=test');
    await form.getByTestId('idp-new-user_base').fill('ou=people,dc=paddock,dc=test');
    await form.getByTestId('idp-new-group_base').fill('ou=groups,dc=paddock,dc=test');
    await form.getByTestId('idp-new-create').click();
    const ldap = page.getByTestId('idp-corp-ldap');
    await ldap.waitFor();
    await ldap.getByTestId('idp-mapping-group').fill(`readers-${tag}`);
    await ldap.getByTestId('idp-mapping-target').selectOption({ label: '中文 NLP' });
    await ldap.getByTestId('idp-mapping-role').selectOption('viewer');
    await ldap.getByTestId('idp-mapping-add').click();
    await waitForText(ldap.getByTestId('idp-mapping'), '中文 NLP · 查看者');
    await ldap.getByTestId('idp-check-username').fill(uid);
    await ldap.getByTestId('idp-check').click();
    await waitForText(ldap.getByTestId('idp-groups'), `readers-${tag}`);
    await screenshot(page, '17-admin-providers');
  });

  test('wang signs in through the provider\'s own page and lands in his group\'s workspace as editor', async () => {
    await withPerson(await story.person(), async (page) => {
      await visit(page, '/signin');
      await page.getByTestId('provider-corp-sso').click();
      await page.getByTestId('idp-login-form').waitFor();
      await page.getByTestId('idp-login').fill('wang');
      await page.getByTestId('idp-password').fill('wrong');
      await page.getByTestId('idp-submit').click();
      await waitForText(page.getByTestId('idp-login-error'), '用户名或密码错误');
      await page.getByTestId('idp-login').fill('wang');
      await page.getByTestId('idp-password').fill('wang password');
      await page.getByTestId('idp-submit').click();
      await page.waitForURL(new RegExp(`/w/${story.workspaceId}/environments$`));
      const [ws] = await (await page.request.get('/api/v1/workspaces')).json();
      assert.deepEqual([ws.name, ws.role], ['中文 NLP', 'editor']);
      await screenshot(page, '17-wang-signed-in');
    });
  });

  test('out of the group, the next sign-in no longer opens the workspace', async () => {
    await idp.set('people', [person('wang', []), person('li', [])]);
    await withPerson(await story.person(), async (page) => {
      await visit(page, '/signin');
      await page.getByTestId('provider-corp-sso').click();
      await page.getByTestId('idp-login').fill('wang');
      await page.getByTestId('idp-password').fill('wang password');
      await page.getByTestId('idp-submit').click();
      await page.getByTestId('no-workspaces').waitFor();
      assert.deepEqual(await (await page.request.get('/api/v1/workspaces')).json(), []);
    });
    await idp.set('people', [person('wang', ['nlp-team']), person('li', [])]);
  });

  test('a bad signature, an expired token, a replayed sign-in and a provider that is down are refused in Chinese', async () => {
    const before = await accounts();
    const refusedWith = async (page, text) => {
      await page.waitForURL(/\/signin\?error=/);
      await waitForText(page.getByTestId('signin-error'), text);
    };
    const signInAsLi = async (page) => {
      await visit(page, '/signin');
      await page.getByTestId('provider-corp-sso').click();
      await page.getByTestId('idp-login').fill('li');
      await page.getByTestId('idp-password').fill('li password');
      await page.getByTestId('idp-submit').click();
    };
    for (const mode of ['bad-signature', 'expired']) {
      await idp.set('mode', { mode });
      await withPerson(await story.person(), async (page) => {
        await signInAsLi(page);
        await refusedWith(page, '身份提供方返回的身份令牌未通过校验');
        if (mode === 'expired') await screenshot(page, '17-token-refused');
      });
    }
    await idp.set('mode', { mode: 'normal' });
    assert.equal(await accounts(), before, 'a refused sign-in created an account');

    // A sign-in that went through, then its callback opened again: the state was good once.
    await withPerson(await story.person(), async (page) => {
      let callback;
      page.on('request', (r) => { if (r.url().includes('/callback?')) callback = r.url(); });
      await signInAsLi(page);
      await page.getByTestId('no-workspaces').waitFor();
      const other = await story.person();
      await withPerson(other, async (replay) => {
        await replay.goto(callback);
        await refusedWith(replay, '登录请求已失效或已被使用');
      });
    });

    await story.owner.page.request.post('/api/v1/admin/identity-providers', {
      data: { name: 'down', display_name: '停机的认证', secret: 'x', settings: { oidc: { issuer: 'http://127.0.0.1:1', client_id: 'paddock' } } },
    });
    await withPerson(await story.person(), async (page) => {
      await visit(page, '/signin');
      await page.getByTestId('provider-down').click();
      await refusedWith(page, '暂时无法连接身份提供方');
    });
    const codes = await refusals();
    for (const code of ['id_token_invalid', 'sign_in_expired', 'identity_provider_unavailable']) {
      assert.ok(codes.includes(code), `${code} audited: ${codes}`);
    }
  });

  test('through the directory: a wrong password, an unknown name and injections are refused, the right one opens the workspace read-only', async () => {
    const before = await accounts();
    await withPerson(await story.person(), async (page) => {
      await visit(page, '/signin');
      await page.getByTestId('provider-corp-ldap').click();
      await waitForText(page.getByTestId('page-title'), '使用 公司目录 登录');
      for (const [user, password] of [[uid, 'not it'], ['nobody-at-all', 'chen password'], ['*', 'chen password'], [`${uid})(uid=*`, 'chen password']]) {
        await page.getByTestId('directory-username').fill(user);
        await page.getByTestId('directory-password').fill(password);
        await page.getByTestId('directory-submit').click();
        await waitForText(page.getByTestId('form-error'), '用户名或密码错误');
      }
      assert.equal(await accounts(), before);
      await page.getByTestId('directory-username').fill(uid);
      await page.getByTestId('directory-password').fill('chen password');
      await page.getByTestId('directory-submit').click();
      await page.waitForURL(new RegExp(`/w/${story.workspaceId}/environments$`));
      const [ws] = await (await page.request.get('/api/v1/workspaces')).json();
      assert.equal(ws.role, 'viewer');
      await screenshot(page, '17-directory-signed-in');
    });
    assert.ok((await refusals()).filter((c) => c === 'invalid_credentials').length >= 4);
  });
});
