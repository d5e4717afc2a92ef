/**
 * The board in a real browser (issue 18): headless Debian chromium (playwright-core, no browser
 * download) opens the sample's BoardModule at /admin/queues with basic-auth credentials, sees the
 * queue's counts, opens a dead job, clicks Retry, and the job runs. Screenshots: test/.artifacts/.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { chromium, type Browser, type Page } from 'playwright-core';
import { WorkQueue } from '../../lib/index.js';
import type { BoardAppConfig } from '../fixtures/board-app.js';
import { aptInstall } from '../../tools/redis-server.js';
import { uniqueName } from '../support/keys.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../.artifacts/', import.meta.url));
const USER = 'admin';
const PASSWORD = 'board-test-password';
const config: BoardAppConfig = {
  redisUrl: '',
  prefix: uniqueName('board'),
  queue: 'reports',
  credentials: `${USER}:${PASSWORD}`,
  failingKey: uniqueName('board-failing'),
};

let redis: RedisHandle;
let client: Redis;
let child: ChildProcess | undefined;
let childOutput = '';
let base: string;
let queue: WorkQueue;
let browser: Browser;

/** Starts test/fixtures/board-app.ts in plain Node; resolves its URL once it listens. */
function startBoardApp(): Promise<string> {
  const proc = spawn(
    process.execPath,
    [
      '--import',
      pathToFileURL(`${ROOT}scripts/register-ts.mjs`).href,
      `${ROOT}test/fixtures/board-app.ts`,
      JSON.stringify(config),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child = proc;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`board app did not listen within 30 s:\n${childOutput}`)),
      30_000,
    );
    const onData = (chunk: Buffer) => {
      childOutput += chunk.toString();
      const m = /listening (\S+)/.exec(childOutput);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`board app exited (${code}):\n${childOutput}`));
    });
  });
}

beforeAll(async () => {
  // Like redis-server: on a fresh Debian machine (root, apt-get) the suite installs chromium.
  if (!existsSync(CHROMIUM) && !process.env.CHROMIUM_PATH) aptInstall('chromium', console.log);
  if (!existsSync(CHROMIUM))
    throw new Error(
      `chromium not found at ${CHROMIUM}: install the Debian package (apt-get install -y chromium) or set CHROMIUM_PATH`,
    );
  mkdirSync(ARTIFACTS, { recursive: true });
  redis = await startRedis();
  config.redisUrl = redis.url;
  client = new Redis(redis.url);
  await client.set(config.failingKey, '1');
  queue = new WorkQueue(client, config.queue, { prefix: config.prefix, logger: false });
  base = await startBoardApp();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 600_000);

afterAll(async () => {
  await browser?.close();
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
  client?.disconnect();
  await redis?.dispose();
});

async function boardPage(): Promise<Page> {
  const context = await browser.newContext({
    httpCredentials: { username: USER, password: PASSWORD },
    viewport: { width: 1280, height: 720 },
  });
  return context.newPage();
}

describe('the board in chromium', () => {
  it('is refused without credentials', async () => {
    const res = await fetch(`${base}/admin/queues`);
    expect(res.status).toBe(401);
    const api = await fetch(`${base}/admin/queues/api/queues`);
    expect(api.status).toBe(401);
  });

  it('shows the counts, opens a dead job, Retry runs it', async () => {
    const { id: deadId } = await queue.add({ month: '2025-01' }, { name: 'monthly-report' });
    await waitFor(async () => (await queue.getJob(deadId))?.state === 'dead', {
      what: 'the job dead-lettered',
    });
    await queue.addBulk([
      { data: { month: '2025-02' }, opts: { name: 'monthly-report', delayMs: 3_600_000 } },
      { data: { month: '2025-03' }, opts: { name: 'monthly-report', delayMs: 3_600_000 } },
    ]);
    const page = await boardPage();

    // The overview: the queue with its counts (delayed 2, failed 1).
    await page.goto(`${base}/admin/queues/queue/${config.queue}`);
    const tab = (label: string) => page.locator(`a[href$="?status=${label}"]:has(span[data-text])`);
    await tab('failed')
      .waitFor({ timeout: 15_000 })
      .catch(async (e: unknown) => {
        await page.screenshot({ path: `${ARTIFACTS}board-failure.png` });
        throw new Error(`no Failed tab (see test/.artifacts/board-failure.png): ${String(e)}`);
      });
    await expect(tab('failed').textContent()).resolves.toMatch(/failed\s*1/i);
    await expect(tab('delayed').textContent()).resolves.toMatch(/delayed\s*2/i);
    await page.screenshot({ path: `${ARTIFACTS}board-queue.png` });

    // The dead job: its name, error and data are shown.
    await tab('failed').click();
    await page.getByText('report service down').first().waitFor({ timeout: 10_000 });
    await page.getByText('monthly-report').first().waitFor();
    await page.screenshot({ path: `${ARTIFACTS}board-dead-job.png` });

    // Retry (the refresh icon, whose tooltip says "Retry") with the handler fixed.
    await client.del(config.failingKey);
    const retry = page.locator('ul[class*="jobActions"] button:has(svg.lucide-refresh-cw)').first();
    await retry.hover();
    await page.getByText('Retry', { exact: true }).first().waitFor({ timeout: 10_000 });
    await retry.click();
    await page.getByRole('button', { name: 'Confirm' }).click({ timeout: 10_000 });

    // The job ran (checked through the API), and the board shows no failed job any more.
    const done = await waitFor(
      async () => {
        const info = await queue.getJob(deadId);
        return info?.state === 'completed' ? info : undefined;
      },
      { timeoutMs: 15_000, what: 'the retried job completed' },
    ).catch(async (e: unknown) => {
      await page.screenshot({ path: `${ARTIFACTS}board-failure.png` });
      throw new Error(
        `${String(e)}; job now: ${JSON.stringify(await queue.getJob(deadId))}; app: ${childOutput}`,
      );
    });
    expect(done.result).toBe(`sent ${deadId}`);
    expect((await queue.counts()).dead).toBe(0);
    // The board polls: the dead job leaves the list and the Failed tab loses its count.
    await page
      .getByText('report service down')
      .first()
      .waitFor({ state: 'detached', timeout: 15_000 });
    let text: string | null = null;
    await waitFor(
      async () => /^\W*failed\s*0?$/i.test((text = await tab('failed').textContent()) ?? ''),
      { timeoutMs: 15_000, what: 'the Failed tab without a count' },
    ).catch((e: unknown) => {
      throw new Error(`${String(e)}; the tab reads ${JSON.stringify(text)}`);
    });
    await page.screenshot({ path: `${ARTIFACTS}board-after-retry.png` });

    // The Completed tab: the job with its result, real dates (this year, not 1970), its
    // duration, and its log lines (both attempts') in the Logs tab.
    await tab('completed').click();
    await page.getByText(`sent ${deadId}`).first().waitFor({ timeout: 10_000 });
    const card = await page.locator('body').innerText();
    await page.screenshot({ path: `${ARTIFACTS}board-completed.png` });
    // The board writes a time of today as a time of day, an older one with its date first.
    expect(card).not.toMatch(/1970/);
    const at = (label: string) => new RegExp(`${label}\\s+([\\d/., ]+)?\\d{1,2}:\\d{2}:\\d{2}`);
    expect(card).toMatch(at('Added at'));
    expect(card).toMatch(at('Process started at'));
    expect(card).toMatch(at('Finished at'));
    // The duration between start and finish (the handler takes milliseconds).
    expect(card).toMatch(/\d+(\.\d+)? (milliseconds|seconds?)\s+Finished at/);
    await page.getByText('Logs', { exact: true }).first().click();
    await page.getByText(`building report ${deadId}`).first().waitFor({ timeout: 10_000 });
    await page.screenshot({ path: `${ARTIFACTS}board-logs.png` });
  }, 60_000);
});
