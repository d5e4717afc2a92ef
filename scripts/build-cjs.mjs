// The CommonJS build, made from the ESM build that tsc wrote to dist/ (so decorators and their
// metadata are compiled once, by tsc, the same way for both builds):
//
//   dist/{lib,src}/**/*.js   -> dist/cjs/{lib,src}/**/*.cjs   (@swc/core, module: commonjs)
//   dist/{lib,src}/**/*.d.ts -> dist/cjs/{lib,src}/**/*.d.cts (same declarations)
//
// Relative specifiers './x.js' become './x.cjs'. `import.meta.url` (which CommonJS has not) becomes
// `require("node:url").pathToFileURL(__filename).href`, `import.meta.dirname`/`.filename` become
// `__dirname`/`__filename`; any other `import.meta` fails the build. Dynamic `import()` is kept. The Lua scripts are embedded
// in the code (lib/scripts/sources.generated.ts), so both builds carry them. Run after
// `tsc -p tsconfig.build.json` (it empties dist/cjs).
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transform } from '@swc/core';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const out = join(dist, 'cjs');
const trees = ['lib', 'src'];

/** Every file under dir, recursively (none when dir does not exist). */
async function filesUnder(dir) {
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
    if (e.isDirectory()) found.push(...(await filesUnder(path)));
    else if (e.isFile()) found.push(path);
  }
  return found;
}

// './x.js' and '../y/z.js' in from '...', import('...'), require('...') and `import '...'`.
const RELATIVE_JS =
  /(\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s*)(['"])(\.{1,2}\/[^'"\n]*?)\.js\2/gm;
const toCjsSpecifiers = (text) => text.replace(RELATIVE_JS, '$1$2$3.cjs$2');

function replaceImportMeta(code, file) {
  const replaced = code
    .replace(/\bimport\.meta\.url\b/g, 'require("node:url").pathToFileURL(__filename).href')
    .replace(/\bimport\.meta\.dirname\b/g, '__dirname')
    .replace(/\bimport\.meta\.filename\b/g, '__filename');
  if (/\bimport\.meta\b/.test(replaced)) {
    throw new Error(
      `build-cjs: ${relative(root, file)} uses import.meta beyond .url/.dirname/.filename; CommonJS has no equivalent`,
    );
  }
  return replaced;
}

await rm(out, { recursive: true, force: true });
let js = 0;
let dts = 0;
for (const tree of trees) {
  for (const file of await filesUnder(join(dist, tree))) {
    const rel = relative(dist, file);
    if (file.endsWith('.d.ts')) {
      const target = join(out, rel.replace(/\.d\.ts$/, '.d.cts'));
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, toCjsSpecifiers(await readFile(file, 'utf8')));
      dts++;
    } else if (file.endsWith('.js')) {
      // (Without tsc's map comment: the ESM build's maps, which embed their sources, do not
      // describe this output.)
      const source = replaceImportMeta(toCjsSpecifiers(await readFile(file, 'utf8')), file).replace(
        /\n\/\/# sourceMappingURL=\S+\s*$/,
        '\n',
      );
      const { code } = await transform(source, {
        filename: rel,
        swcrc: false,
        configFile: false,
        sourceMaps: false,
        jsc: { target: 'es2022', parser: { syntax: 'ecmascript' }, keepClassNames: true },
        // `import()` stays `import()`: a sandbox loads its handler module, ESM or CommonJS, with it.
        module: { type: 'commonjs', importInterop: 'node', strict: true, ignoreDynamic: true },
      });
      const target = join(out, rel.replace(/\.js$/, '.cjs'));
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, code);
      js++;
    }
  }
}
if (js === 0) throw new Error('build-cjs: no .js files under dist/lib or dist/src; run tsc first');
console.log(`build-cjs: wrote ${js} .cjs and ${dts} .d.cts file(s) to ${relative(root, out)}`);
