//! Story: a newcomer types the README's first command, `make run`, and opens the dashboard. This spec runs
//! that very command (on a free port and a fresh data directory), so the path it takes — the setup check,
//! the build of the server and the release site, `paddock serve` — cannot break without `make test`
//! failing. `make test` has just built everything, and `make run` shares its target directory, so the
//! command must compile nothing: a rebuild here would mean a newcomer compiles the workspace twice.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { hydrated, launchBrowser, newPerson, screenshot } from '../support/browser.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Generous: `make run` checks the setup and asks cargo whether anything changed before serving. */
const LISTEN_LIMIT_MS = 300_000;

describe('make run serves the dashboard', () => {
  let make;
  let dataDir;
  let output = '';
  let baseURL;
  let browser;

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'paddock-make-run-'));
    // Its own process group, so that stopping it stops make and the server it started.
    make = spawn('make', ['--no-print-directory', 'run', 'PADDOCK_BIND=127.0.0.1:0', `PADDOCK_DATA_DIR=${dataDir}`], {
      cwd: repoRoot,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, RUST_LOG: 'warn' },
    });
    make.stdout.on('data', (chunk) => { output += chunk; });
    make.stderr.on('data', (chunk) => { output += chunk; });
    baseURL = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`make run did not serve within ${LISTEN_LIMIT_MS} ms:\n${output}`)), LISTEN_LIMIT_MS);
      const poll = setInterval(() => {
        const m = output.match(/listening on (http:\/\/[^\s]+)/);
        if (m) { clearTimeout(timer); clearInterval(poll); resolve(m[1].replace(/\/$/, '')); }
      }, 100);
      make.on('exit', (code) => {
        clearTimeout(timer); clearInterval(poll);
        reject(new Error(`make run exited with ${code} before serving:\n${output}`));
      });
    });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    if (make && make.exitCode === null) {
      const exited = new Promise((resolve) => make.once('exit', resolve));
      process.kill(-make.pid, 'SIGTERM');
      await exited;
    }
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  test('it compiled nothing: make test built what make run serves', () => {
    assert.doesNotMatch(output, /^\s*Compiling /m, output);
  });

  test('/healthz answers', async () => {
    const res = await fetch(`${baseURL}/healthz`);
    assert.equal(res.status, 200);
  });

  test('the first page hydrates with the release bundle it serves', async () => {
    const wasm = await fetch(`${baseURL}/pkg/paddock.wasm`);
    assert.equal(wasm.status, 200);
    assert.equal(wasm.headers.get('content-type'), 'application/wasm');
    // Compressed ahead of time (brotli for browsers, which ask for it; gzip for the rest), and kept by
    // the browser as long as it asks again first (the file names do not change between versions):
    // the answer is then a 304 without a body. Only headers are read below: the bodies stay packed.
    const bundle = (encoding) => fetch(`${baseURL}/pkg/paddock.wasm`, { headers: { 'accept-encoding': encoding } });
    const [br, gzip, plain] = await Promise.all(['br', 'gzip', 'identity'].map(bundle));
    assert.equal(br.headers.get('content-encoding'), 'br');
    assert.equal(gzip.headers.get('content-encoding'), 'gzip');
    assert.equal(plain.headers.get('content-encoding'), null);
    assert.equal(br.headers.get('cache-control'), 'no-cache');
    const [packed, bytes] = [br, plain].map((res) => Number(res.headers.get('content-length')));
    assert.ok(packed > 0 && packed * 2 < bytes, `brotli ${packed} bytes of ${bytes}`);
    // Every variant carries the original's date, so a revalidation in any encoding is a 304.
    assert.equal(gzip.headers.get('last-modified'), br.headers.get('last-modified'));
    for (const encoding of ['br', 'gzip']) {
      const headers = { 'accept-encoding': encoding, 'if-modified-since': br.headers.get('last-modified') };
      assert.equal((await fetch(`${baseURL}/pkg/paddock.wasm`, { headers })).status, 304, encoding);
    }
    const css = await fetch(`${baseURL}/pkg/paddock.css`, { headers: { 'accept-encoding': 'br' } });
    assert.equal(css.status, 200);
    assert.equal(css.headers.get('content-encoding'), 'br');
    const { page } = await newPerson(browser, baseURL);
    const loaded = [];
    page.on('response', (res) => loaded.push(new URL(res.url()).pathname));
    await page.goto(`${baseURL}/`);
    await hydrated(page);
    assert.ok(loaded.includes('/pkg/paddock.wasm'), `the page loaded the bundle: ${loaded.join(', ')}`);
    await screenshot(page, '00-make-run');
  });
});
