// Copies non-TypeScript runtime assets (Lua scripts) next to the compiled output.
// lib/scripts/*.lua -> dist/lib/scripts/*.lua. A missing source folder is not an error.
import { copyFile, mkdir, readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const srcDir = join(root, 'lib', 'scripts');
const outDir = join(root, 'dist', 'lib', 'scripts');

let entries;
try {
  entries = await readdir(srcDir, { withFileTypes: true });
} catch (err) {
  if (err && typeof err === 'object' && 'code' in err && err.code === 'ENOENT') {
    console.log(`copy-assets: ${srcDir} does not exist, nothing to copy`);
    process.exit(0);
  }
  throw err;
}

const lua = entries.filter((e) => e.isFile() && e.name.endsWith('.lua')).map((e) => e.name);
await mkdir(outDir, { recursive: true });
for (const name of lua) {
  await copyFile(join(srcDir, name), join(outDir, name));
}
console.log(`copy-assets: copied ${lua.length} .lua file(s) to ${outDir}`);
