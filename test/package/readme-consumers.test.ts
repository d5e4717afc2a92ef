// The README's quick start and the testing examples (docs/testing.md) are the sources of the
// consumer apps that `npm run test:consumers` builds and runs: a block of README.md or of a docs/
// page preceded by `<!-- same as a b c -->` must be byte for byte each of those files.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** README.md and every docs/**\/*.md. */
function pages(dir = 'docs'): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return pages(path);
    return e.name.endsWith('.md') ? [path] : [];
  });
}
const blocks = ['README.md', ...pages()].flatMap((page) =>
  [
    ...readFileSync(join(root, page), 'utf8').matchAll(
      /^<!-- same as ([^>]+?) -->\n```(?:ts|typescript)\n([\s\S]*?)^```$/gm,
    ),
  ].map((m) => ({ files: m[1]!.split(/\s+/), code: m[2]! })),
);

describe('README and docs examples kept as consumer app sources', () => {
  it('names consumer files for the quick start and both testing variants', () => {
    const named = blocks.flatMap((b) => b.files);
    const apps = readdirSync(join(root, 'test/consumers'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(apps.length).toBeGreaterThanOrEqual(3);
    for (const app of apps) {
      for (const file of ['app.module.ts', 'main.ts', 'email.processor.spec.ts']) {
        expect(named).toContain(`test/consumers/${app}/src/${file}`);
      }
    }
  });

  it('has each such block equal to every file it names', () => {
    const mismatched: string[] = [];
    for (const { files, code } of blocks) {
      for (const file of files) {
        const path = join(root, file);
        if (!existsSync(path) || readFileSync(path, 'utf8') !== code) mismatched.push(file);
      }
    }
    expect(mismatched).toEqual([]);
  });
});
