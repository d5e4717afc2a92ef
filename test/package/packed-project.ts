// The package as a user gets it: built, packed with `npm pack`, unpacked into a fresh project
// (a temp dir) and loaded from plain Node. package.test.ts packs it once (packProject() in its
// beforeAll) and runs the cases of the *.cases.ts files next to it against that one project.
// Dependencies are linked from this repository's node_modules (no network): ioredis and croner for
// the core entry; the cases link the peers they need as they go.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../', import.meta.url));
export const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  dependencies?: Record<string, string>;
  peerDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The consumer project the package is unpacked into: set by packProject(), read by the cases. */
export let project: string;

export function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    stdio: 'pipe',
    timeout: 120_000,
    env: { ...process.env, ...env },
  });
}

/** Make `name` resolvable from the project by linking this repository's copy. */
export function link(name: string): void {
  const target = join(project, 'node_modules', name);
  if (existsSync(target)) return;
  mkdirSync(dirname(target), { recursive: true });
  symlinkSync(join(root, 'node_modules', name), target, 'dir');
}

export function node(
  code: string,
  type: 'module' | 'commonjs' = 'module',
  flags: string[] = [],
): string {
  return run(process.execPath, [...flags, '--input-type=' + type, '-e', code], project);
}

/** Runs tsc on `files` (written to `dir` under the project) with these compiler options. */
export function typeCheck(
  dir: string,
  packageType: 'module' | 'commonjs',
  compilerOptions: Record<string, unknown>,
  files: Record<string, string>,
): string {
  const at = join(project, dir);
  mkdirSync(at, { recursive: true });
  writeFileSync(join(at, 'package.json'), JSON.stringify({ private: true, type: packageType }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(at, name), text);
  writeFileSync(
    join(at, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: 'es2022',
        noEmit: true,
        skipLibCheck: true,
        experimentalDecorators: true,
        types: [],
        ...compilerOptions,
      },
      files: Object.keys(files),
    }),
  );
  try {
    run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', at], at);
    return '';
  } catch (e) {
    return String((e as { stdout?: string }).stdout ?? e);
  }
}

/** Packs the package (building it first) and unpacks it into a new project. */
export function packProject(): void {
  project = mkdtempSync(join(tmpdir(), 'wq-pkg-'));
  // `npm pack` runs `prepack` (the build) first.
  const tarball = run('npm', ['pack', '--silent', '--pack-destination', project], root)
    .trim()
    .split('\n')
    .pop()!;
  const into = join(project, 'node_modules', pkg.name);
  mkdirSync(into, { recursive: true });
  run('tar', ['-xzf', join(project, tarball), '-C', into, '--strip-components=1'], project);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', type: 'module', private: true }),
  );
  link('ioredis');
  for (const dep of Object.keys(pkg.dependencies ?? {})) link(dep);
}

/** Removes the project. */
export function removeProject(): void {
  if (project) rmSync(project, { recursive: true, force: true });
}
