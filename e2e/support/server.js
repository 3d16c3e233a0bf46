//! Starts the real Paddock server for one spec: a fresh temporary data directory, a free port
//! (`--bind 127.0.0.1:0`), and the address read from the one `listening on http://...` line the
//! server prints once it accepts connections. Nothing is mocked.

import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const e2eDir = path.resolve(here, '..');

/** How long to wait for the `listening on` line: building nothing, just opening SQLite and
 *  running migrations, but on a loaded 2-core machine that can take a while. */
const STARTUP_LIMIT_MS = 120_000;

/** `env`: extra environment variables for the server (e.g. `PADDOCK_DOCKER_HOST`). */
export async function startServer({ env = {} } = {}) {
  const bin = path.resolve(e2eDir, process.env.PADDOCK_BIN ?? '../target/debug/paddock');
  const siteRoot = path.resolve(e2eDir, process.env.PADDOCK_SITE_ROOT ?? '../target/site');
  const dataDir = await mkdtemp(path.join(tmpdir(), 'paddock-e2e-'));
  const child = spawn(bin, ['serve', '--bind', '127.0.0.1:0', '--data-dir', dataDir, '--site-root', siteRoot], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'info', ...env },
  });

  let log = '';
  child.stderr.on('data', (chunk) => { log += chunk; });

  const baseURL = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      reject(new Error(`paddock did not print "listening on" within ${STARTUP_LIMIT_MS} ms\nstdout: ${out}\nstderr: ${log}`));
    }, STARTUP_LIMIT_MS);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/listening on (http:\/\/[^\s]+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1].replace(/\/$/, ''));
      }
    });
    child.on('error', (err) => { clearTimeout(timer); reject(new Error(`cannot start ${bin}: ${err.message}`)); });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`paddock exited with ${code} before listening\nstdout: ${out}\nstderr: ${log}`));
    });
  });

  return {
    baseURL,
    dataDir,
    /** The server's stderr so far, to attach to a failure. */
    log: () => log,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      // Endpoint replicas outlive their server on purpose (a restarted server re-attaches to them); a
      // story's server does not come back, so its replicas (each holds a model in memory) go with it.
      try {
        execFileSync('pkill', ['-f', `serve-model .*${dataDir}/`]);
      } catch {
        // pkill exits 1 when nothing matched.
      }
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
