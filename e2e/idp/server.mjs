// The OpenID provider the company sign-in tests sign in through: the npm package `oidc-provider`
// (OpenID-certified), on 127.0.0.1 and a free port, with one confidential client (Paddock), the
// people and groups a test gives it, and a sign-in page of its own that checks passwords.
//
// Started by a test (the API tests, the browser specs), one per test:
//   node e2e/idp/server.mjs   with environment
//     CLIENT_ID, CLIENT_SECRET, REDIRECT_URIS (comma-separated)
//     PEOPLE  JSON: [{ "login", "password", "email", "name", "groups": [..] }]  (sub = "sub-" + login)
// It prints one line, `{"issuer":"http://127.0.0.1:PORT"}`, once it listens.
//
// What a test may change while it runs (loopback only, no authentication: a test fixture):
//   POST /__test/people  JSON as PEOPLE: who exists now, in which groups
//   POST /__test/mode    {"mode": M} where M is how the token endpoint's ID token comes out:
//     normal          as oidc-provider made it
//     bad-signature   its signature bytes changed
//     expired         re-signed with the provider's key, `exp` an hour ago
//     wrong-audience  re-signed with the provider's key, `aud` another client
//     rotated         re-signed with a second key that the JWKS publishes only from now on
//                     (a relying party holding the old key set must fetch it again)
// Claims follow the standard: with an access token issued, scope claims (username, e-mail, groups)
// are at userinfo, not in the ID token (`conformIdTokenClaims`), so Paddock's userinfo fallback is
// what reads the groups.
import http from 'node:http';
import { Provider } from 'oidc-provider';
import * as jose from 'jose';

const env = process.env;
let people = JSON.parse(env.PEOPLE || '[]');
let mode = 'normal';

const alg = 'RS256';
async function key(kid) {
  const { privateKey } = await jose.generateKeyPair(alg, { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  return { ...jwk, kid, alg, use: 'sig' };
}
const first = await key('first');
const second = await key('second');
const publicOf = ({ d, p, q, dp, dq, qi, ...pub }) => pub;

const server = http.createServer();
await new Promise((resolve) => server.listen(Number(env.PORT || 0), '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: env.CLIENT_ID || 'paddock',
    client_secret: env.CLIENT_SECRET || 'paddock-secret',
    redirect_uris: (env.REDIRECT_URIS || '').split(',').filter(Boolean),
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [first] },
  cookies: { keys: ['paddock-test-idp-cookie-key'] },
  features: { devInteractions: { enabled: false } },
  claims: {
    openid: ['sub'],
    profile: ['preferred_username', 'name'],
    email: ['email', 'email_verified'],
    groups: ['groups'],
  },
  scopes: ['openid', 'profile', 'email', 'groups'],
  pkce: { required: () => true },
  ttl: { Session: 60, Interaction: 600, Grant: 600, AccessToken: 600, AuthorizationCode: 60, IdToken: 600 },
  async findAccount(ctx, sub) {
    const person = people.find((p) => `sub-${p.login}` === sub);
    if (!person) return undefined;
    return {
      accountId: sub,
      async claims() {
        return {
          sub,
          preferred_username: person.login,
          name: person.name || person.login,
          email: person.email,
          email_verified: true,
          groups: person.groups || [],
        };
      },
    };
  },
  // Consent is not what is under test: every scope asked is granted.
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid profile email groups');
    await grant.save();
    return grant;
  },
  renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = `<!doctype html><title>error</title><p data-testid="idp-error">${escape(out.error)}: ${escape(out.error_description || '')}</p>`;
  },
});
provider.proxy = false;

// The token endpoint's ID token, as the test mode wants it.
provider.use(async (ctx, next) => {
  await next();
  if (ctx.path !== '/token' || ctx.method !== 'POST' || ctx.status !== 200 || mode === 'normal') return;
  const body = typeof ctx.body === 'string' ? JSON.parse(ctx.body) : ctx.body;
  if (!body?.id_token) return;
  const claims = jose.decodeJwt(body.id_token);
  const now = Math.floor(Date.now() / 1000);
  const sign = async (payload, jwk) => new jose.SignJWT(payload)
    .setProtectedHeader({ alg, kid: jwk.kid, typ: 'JWT' })
    .sign(await jose.importJWK(jwk, alg));
  if (mode === 'bad-signature') {
    const [h, p, s] = body.id_token.split('.');
    const flipped = (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    body.id_token = [h, p, flipped].join('.');
  } else if (mode === 'expired') {
    body.id_token = await sign({ ...claims, iat: now - 7200, exp: now - 3600 }, first);
  } else if (mode === 'wrong-audience') {
    body.id_token = await sign({ ...claims, aud: 'another-client' }, first);
  } else if (mode === 'rotated') {
    body.id_token = await sign(claims, second);
  }
  ctx.body = body;
});

function escape(s) {
  return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function loginPage(uid, error) {
  return `<!doctype html><html lang="zh-CN"><head><meta charset="utf-8"><title>测试身份提供方 登录</title></head>
<body><h1>测试身份提供方</h1>
${error ? `<p data-testid="idp-login-error">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${uid}/login" data-testid="idp-login-form">
<label>用户名 <input name="login" data-testid="idp-login" autocomplete="username"></label>
<label>密码 <input name="password" type="password" data-testid="idp-password" autocomplete="current-password"></label>
<button type="submit" data-testid="idp-submit">登录</button>
</form></body></html>`;
}

async function readForm(req) {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  return new URLSearchParams(raw);
}

async function readJson(req) {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  return JSON.parse(raw || '{}');
}

const callback = provider.callback();
server.on('request', async (req, res) => {
  try {
    const url = new URL(req.url, issuer);
    if (req.method === 'POST' && url.pathname === '/__test/people') {
      people = await readJson(req);
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/__test/mode') {
      ({ mode } = await readJson(req));
      res.writeHead(204).end();
      return;
    }
    // The key set: the second key too once keys have "rotated".
    if (req.method === 'GET' && url.pathname === '/jwks') {
      const keys = [publicOf(first), ...(mode === 'rotated' ? [publicOf(second)] : [])];
      res.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(JSON.stringify({ keys }));
      return;
    }
    const login = url.pathname.match(/^\/interaction\/([^/]+)(\/login)?$/);
    if (login) {
      const details = await provider.interactionDetails(req, res);
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(loginPage(details.uid));
        return;
      }
      const form = await readForm(req);
      const person = people.find((p) => p.login === form.get('login') && p.password === form.get('password'));
      if (!person) {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(loginPage(details.uid, '用户名或密码错误'));
        return;
      }
      await provider.interactionFinished(req, res, { login: { accountId: `sub-${person.login}` } }, { mergeWithLastSubmission: false });
      return;
    }
    callback(req, res);
  } catch (e) {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(String(e));
  }
});

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
