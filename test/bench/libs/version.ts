import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * The installed version of package `name`, resolved the way `from` (a file URL or path)
 * would resolve it. '?' when it cannot be found.
 */
export function packageVersion(name: string, from: string = import.meta.url): string {
  try {
    const require = createRequire(from);
    let dir = path.dirname(require.resolve(name));
    for (;;) {
      const file = path.join(dir, 'package.json');
      if (existsSync(file)) {
        const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
        if (pkg.name === name) return pkg.version ?? '?';
      }
      const up = path.dirname(dir);
      if (up === dir) return '?';
      dir = up;
    }
  } catch {
    return '?';
  }
}

/** Version of this repository's package (nestjs-work-queue). */
export function ownVersion(): string {
  const file = new URL('../../../package.json', import.meta.url);
  const pkg = JSON.parse(readFileSync(file, 'utf8')) as { version?: string };
  return pkg.version ?? '?';
}
