/**
 * `npm start`: run the sample app with a Redis.
 *
 * Uses REDIS_URL when set; otherwise a Docker engine (testcontainers) when one is reachable;
 * otherwise a private local redis-server on a free port with its data in a temp dir (installed
 * with apt-get first when missing and we are root on a Debian-like machine) — the launcher of
 * the testing kit (src/testing/redis-launcher.ts, behind `startTestRedis()`), which the test
 * harness uses too, with the apt-get step of tools/redis-server.ts. The app runs in a child
 * process; signals are forwarded to it, and the private Redis (in a process group of its own,
 * out of a terminal's Ctrl-C) is stopped once the app has shut down.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { acquireSharedRedis, RedisUnavailableError } from '../tools/redis-server.js';

const root = fileURLToPath(new URL('..', import.meta.url));

let app: ChildProcess | undefined = undefined;
// Signals go to the app, which shuts down gracefully. Before it runs there is nothing to shut
// down: this process exits, and the launcher's exit hook stops a Redis it started meanwhile.
// (SIGHUP: a closed terminal; left to its default, it would end this process without stopping
// its Redis.)
const stop = (signal: NodeJS.Signals) => (app ? app.kill(signal) : process.exit(130));
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const) {
  process.on(signal, () => stop(signal));
}

// Stopped with its parent too: under `npm start`, npm and its shell exit on a SIGTERM without
// passing it on, which would leave the app and its Redis running.
const parent = process.ppid;
const orphaned = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(orphaned);
  stop('SIGTERM');
}, 500);
orphaned.unref();

let redis;
try {
  // Its own process group: a Ctrl-C in the terminal reaches this process and the app (which
  // shuts down, workers finishing their jobs), not the Redis the app still talks to meanwhile.
  redis = await acquireSharedRedis({ log: (line) => console.log(line), ownProcessGroup: true });
} catch (e) {
  if (e instanceof RedisUnavailableError) {
    console.error(`Cannot start the sample: ${e.message}`);
    process.exit(1);
  }
  throw e;
}

app = spawn(process.execPath, ['--import', './scripts/register-ts.mjs', 'sample/main.ts'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, REDIS_URL: redis.url, SAMPLE_LAUNCHER_PID: String(process.pid) },
});

app.on('exit', (code, signal) => {
  void redis.dispose().finally(() => process.exit(code ?? (signal ? 0 : 1)));
});
