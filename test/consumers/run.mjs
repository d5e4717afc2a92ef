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
//
// The helpers: runner.mjs (temp dir, processes, bounded commands and waits, redis-server),
// app-node.mjs (which Node an app runs on), health-check.mjs (the built server's /health).
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pathFor } from './app-node.mjs';
import { startAndCheckHealth } from './health-check.mjs';
import { cleanup, fail, MINUTE, run, startRedis, timings, work } from './runner.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');

const apps = readdirSync(here, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
const wanted = process.argv.slice(2);
for (const name of wanted) {
  if (!apps.includes(name)) fail(`unknown app "${name}"; the apps are: ${apps.join(', ')}`);
}
const selected = wanted.length > 0 ? wanted : apps;

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
