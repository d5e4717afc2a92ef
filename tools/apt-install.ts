/**
 * The project's own runs (the test suite, `npm start`) install what they need on a fresh
 * Debian-like machine: redis-server (for the Redis launcher, src/testing/redis-launcher.ts) and
 * chromium (the dashboard test). The package never installs anything: this is not shipped.
 *
 * No relative imports, so that Jest's globalSetup can require it as CommonJS.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';

function executable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * On a fresh Debian-like machine where we run as root and apt-get exists, install a Debian
 * package (saying so). Anywhere else, do nothing: the caller explains the options. Set
 * WQ_NO_APT_INSTALL=1 to never do it.
 */
export function aptInstall(pkg: string, log: (line: string) => void): void {
  if (process.env.WQ_NO_APT_INSTALL === '1' || process.getuid?.() !== 0) return;
  const aptGet = ['/usr/bin/apt-get', '/bin/apt-get'].find(executable);
  if (!aptGet) return;
  log(`[setup] ${pkg} not found: installing the Debian package with apt-get (running as root)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', pkg],
  ]) {
    const r = spawnSync(aptGet, args, {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 600_000,
    });
    if (r.status !== 0) {
      log(`[setup] apt-get ${args[0]} failed (exit ${r.status ?? r.signal})`);
      return;
    }
  }
}

/** `aptInstall('redis-server')`: the `install` step of `acquireSharedRedis`. */
export function installRedisServer(log: (line: string) => void): void {
  aptInstall('redis-server', log);
}
