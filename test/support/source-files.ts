// The TypeScript files below a folder of the repository (for the tests that read the sources).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every .ts file below `dir`, as paths joined onto `dir`. */
export function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? tsFiles(join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [join(dir, e.name)]
        : [],
  );
}
