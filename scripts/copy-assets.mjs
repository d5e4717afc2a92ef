// Copies non-TypeScript runtime assets (the Lua scripts) next to both compiled outputs:
// lib/**/*.lua -> dist/lib/**/*.lua (ESM build) and dist/cjs/lib/**/*.lua (CommonJS build),
// preserving folders. A missing lib/ folder, or one without .lua files, is not an error.
import { copyFile, mkdir, readdir } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const srcDir = join(root, 'lib');
const outDirs = [join(root, 'dist', 'lib'), join(root, 'dist', 'cjs', 'lib')];

/** Every .lua file under dir, recursively. */
async function luaFiles(dir) {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (err && typeof err === 'object' && 'code' in err && err.code === 'ENOENT') return [];
    throw err;
  }
  const found = [];
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) found.push(...(await luaFiles(path)));
    else if (e.isFile() && e.name.endsWith('.lua')) found.push(path);
  }
  return found;
}

const files = await luaFiles(srcDir);
for (const outDir of outDirs) {
  for (const file of files) {
    const target = join(outDir, relative(srcDir, file));
    await mkdir(dirname(target), { recursive: true });
    await copyFile(file, target);
  }
}
console.log(
  `copy-assets: copied ${files.length} .lua file(s) into ${outDirs.map((d) => relative(root, d)).join(' and ')}`,
);
