// What test/consumers/run.mjs shares with its helpers: the temp dir, the processes started (all
// killed on a failure), the timings, and commands and waits that are all bounded. A failure
// (fail()) cleans up and exits non-zero; WQ_CONSUMERS_KEEP=1 keeps the temp dir.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const MINUTE = 60_000;

export const work = mkdtempSync(join(tmpdir(), 'wq-consumers-'));
/** The processes started (the apps' servers), killed by cleanup(). */
export const children = new Set();
/** [what, seconds] rows, printed at the end. */
export const timings = [];
let redis;

export function fail(message) {
  console.error(`\ntest:consumers: FAILED: ${message}`);
  cleanup();
  process.exit(1);
}

export function cleanup() {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  if (redis) redis.kill('SIGKILL');
  if (process.env.WQ_CONSUMERS_KEEP === '1') console.log(`test:consumers: kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

process.on('SIGINT', () => fail('interrupted'));
process.on('SIGTERM', () => fail('terminated'));

/** Runs a command to completion within timeoutMs; output to the terminal or to a log file. */
export function run(what, cmd, args, { cwd, env = {}, timeoutMs, log }) {
  const started = Date.now();
  let fd;
  if (log) fd = openSync(log, 'w');
  const res = spawnSync(cmd, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: log ? ['ignore', fd, fd] : 'inherit',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
  });
  if (fd !== undefined) closeSync(fd);
  const seconds = (Date.now() - started) / 1000;
  if (res.status !== 0) {
    if (log) console.error(readFileSync(log, 'utf8').split('\n').slice(-60).join('\n'));
    const why = res.error
      ? res.error.code === 'ETIMEDOUT'
        ? `timed out after ${timeoutMs / 1000} s`
        : res.error.message
      : res.signal
        ? `killed by ${res.signal}`
        : `exit code ${res.status}`;
    fail(`${what}: \`${cmd} ${args.join(' ')}\` ${why}`);
  }
  return seconds;
}

export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls fn every 250 ms until it returns a truthy value or deadlineMs passes. */
export async function waitFor(what, deadlineMs, fn) {
  const until = Date.now() + deadlineMs;
  let last;
  while (Date.now() < until) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (e) {
      last = e;
    }
    await sleep(250);
  }
  fail(`${what}: not within ${deadlineMs / 1000} s${last ? ` (last error: ${last.message})` : ''}`);
}

export function exited(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((r) => {
    const timer = setTimeout(() => r(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      r(true);
    });
  });
}

export async function startRedis() {
  const port = await freePort();
  redis = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { cwd: work, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  redis.on('error', (e) =>
    fail(`redis-server: ${e.message} (install it: apt-get install redis-server)`),
  );
  await waitFor('redis-server answering PING', 10_000, () => {
    const res = spawnSync('redis-cli', ['-p', String(port), 'ping'], {
      encoding: 'utf8',
      timeout: 2_000,
    });
    return res.stdout?.trim() === 'PONG';
  });
  return port;
}
