//! What a spec that runs environments needs from the real Docker daemon: the server's instance label
//! (each test server has a fresh data directory, so a random one, kept in its database) and a clean-up
//! of every container and volume carrying it, for the `after` hook — a failed spec must not leave
//! containers behind either.

import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The `paddock.instance` label of the server whose data directory is `dataDir`. Read with Python's
 *  sqlite3 module (Python is already needed by `make setup`; node 20 has no SQLite). */
export async function instanceLabel(dataDir) {
  const { stdout } = await run('python3', [
    '-c',
    'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT instance FROM instance_identity WHERE id = 1").fetchone()[0])',
    path.join(dataDir, 'paddock.db'),
  ]);
  return stdout.trim();
}

/** IDs of this instance's containers (running or not). */
export async function instanceContainers(instance) {
  const { stdout } = await run('docker', ['ps', '-aq', '--filter', `label=paddock.instance=${instance}`]);
  return stdout.split('\n').filter(Boolean);
}

/** Removes this instance's containers and volumes; returns how many containers were still there. */
export async function removeInstanceObjects(instance) {
  const containers = await instanceContainers(instance);
  if (containers.length) await run('docker', ['rm', '-f', '-v', ...containers]);
  const { stdout } = await run('docker', ['volume', 'ls', '-q', '--filter', `label=paddock.instance=${instance}`]);
  const volumes = stdout.split('\n').filter(Boolean);
  if (volumes.length) await run('docker', ['volume', 'rm', '-f', ...volumes]);
  const networks = (await run('docker', ['network', 'ls', '-q', '--filter', `label=paddock.instance=${instance}`])).stdout
    .split('\n')
    .filter(Boolean);
  if (networks.length) await run('docker', ['network', 'rm', ...networks]);
  return containers.length;
}
