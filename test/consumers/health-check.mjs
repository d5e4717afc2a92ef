// The last step of test/consumers/run.mjs for an app: its built server (node dist/main.js) is
// started, answers GET /health with its one worker, and stops on SIGTERM, each within a bound.
/* global fetch, AbortSignal */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { children, exited, fail, freePort, waitFor, work } from './runner.mjs';

export async function startAndCheckHealth(app, cwd, env) {
  const port = await freePort();
  const log = join(work, `${app}.start.log`);
  const fd = openSync(log, 'w');
  const child = spawn('node', ['dist/main.js'], {
    cwd,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  children.add(child);
  const started = Date.now();
  try {
    const body = await waitFor(`${app}: GET /health of node dist/main.js`, 60_000, async () => {
      if (child.exitCode !== null) {
        console.error(readFileSync(log, 'utf8'));
        fail(`${app}: node dist/main.js exited with code ${child.exitCode} before /health was up`);
      }
      const res = await fetch(`http://127.0.0.1:${port}/health`, {
        signal: AbortSignal.timeout(2_000),
      });
      if (res.status !== 200) return undefined;
      return res.json();
    });
    if (body.status !== 'ok' || body.info?.queues?.queues?.emails?.workers !== 1) {
      fail(`${app}: unexpected /health body ${JSON.stringify(body)}`);
    }
    const version = spawnSync('node', ['--version'], {
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    console.log(
      `${app}: node ${version.stdout.trim()} dist/main.js: GET /health -> 200 ${JSON.stringify(body.info.queues.queues)}`,
    );
  } finally {
    child.kill('SIGTERM');
    if (!(await exited(child, 15_000))) {
      child.kill('SIGKILL');
      await exited(child, 5_000);
      children.delete(child);
      console.error(readFileSync(log, 'utf8'));
      fail(`${app}: node dist/main.js did not exit within 15 s of SIGTERM`);
    }
    children.delete(child);
  }
  return (Date.now() - started) / 1000;
}
