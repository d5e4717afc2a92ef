/**
 * `npm start` (sample/start.ts) as a user runs it in a terminal: it starts a private redis-server
 * (no REDIS_URL), the app serves, and a Ctrl-C (SIGINT to the terminal's foreground process
 * group) shuts the app down cleanly — its Redis is still there while the workers close — and
 * then stops that Redis.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { getFreePort, pingOnce } from '../../src/testing/redis-launcher.js';
import { waitFor } from '../support/wait.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('npm start', () => {
  it('serves on its own Redis; a Ctrl-C stops the app cleanly, then its Redis', async () => {
    const port = await getFreePort();
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), LOG_LEVEL: '' };
    delete env.REDIS_URL;
    // detached: a process group of its own, as a terminal makes for the command it runs.
    const child = spawn(
      process.execPath,
      ['--import', './scripts/register-ts.mjs', 'sample/start.ts'],
      { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    try {
      await waitFor(() => out.includes(`listening on http://localhost:${port}`) || exited(), {
        what: 'the sample to listen',
        timeoutMs: 60_000,
      });
      expect(exited()).toBe(false);
      const redisPort = Number(/local redis-server at redis:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1]);
      expect(redisPort).toBeGreaterThan(0);
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);

      // Ctrl-C: SIGINT to every process of the group.
      process.kill(-child.pid!, 'SIGINT');
      await waitFor(exited, { what: 'npm start to exit', timeoutMs: 30_000 });
      expect(child.exitCode).toBe(0);
      // The app's workers closed against a live Redis: no "no reply" nor any other error.
      expect(out).not.toMatch(/ERROR|Error|no reply/);
      expect(await pingOnce('127.0.0.1', redisPort)).toBe(false);
    } finally {
      if (!exited()) {
        // start.ts stops the app, then its Redis (out of the group); the group's kill is the last
        // resort.
        child.kill('SIGTERM');
        await waitFor(exited, { what: 'npm start to stop', timeoutMs: 30_000 }).catch(() =>
          process.kill(-child.pid!, 'SIGKILL'),
        );
      }
    }
  }, 120_000);
});
