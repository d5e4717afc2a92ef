// Writes the layers section of docs/internals/architecture.md (between its `layers:begin` and
// `layers:end` markers) from scripts/layers.cjs: a Mermaid diagram and a table.
// `node scripts/layers-doc.mjs` rewrites it; `--check` exits 1 when the page is out of date
// (test/unit/layers.test.ts runs the same comparison).
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const { LAYERS } = require('./layers.cjs');
export const PAGE = fileURLToPath(new URL('../docs/internals/architecture.md', import.meta.url));
const BEGIN = '<!-- layers:begin (generated from scripts/layers.cjs by scripts/layers-doc.mjs) -->';
const END = '<!-- layers:end -->';

/** The generated section, markers included. */
export function layersSection() {
  const id = (i) => `L${i}`;
  const label = (l) => `${l.name}<br/>${l.paths.map((p) => p.replace(/^lib\//, '')).join(' ')}`;
  const diagram = [
    '```mermaid',
    'flowchart BT',
    ...LAYERS.map((l, i) => `  ${id(i)}["${label(l)}"]`),
    ...LAYERS.slice(1).map((_, i) => `  ${id(i + 1)} --> ${id(i)}`),
    '```',
  ];
  const table = [
    '| layer (bottom first) | paths | owns |',
    '| --- | --- | --- |',
    ...LAYERS.map(
      (l) => `| ${l.name} | ${l.paths.map((p) => `\`${p}\``).join(', ')} | ${l.owns} |`,
    ),
  ];
  return [BEGIN, ...diagram, '', ...table, END].join('\n');
}

/** The page with its layers section as generated. */
export function expectedPage(page = readFileSync(PAGE, 'utf8')) {
  const a = page.indexOf(BEGIN);
  const b = page.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${PAGE}: no ${BEGIN} … ${END} section`);
  return page.slice(0, a) + layersSection() + page.slice(b + END.length);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const page = readFileSync(PAGE, 'utf8');
  const want = expectedPage(page);
  if (process.argv.includes('--check')) {
    if (want !== page) {
      console.error(`${PAGE} is out of date: run node scripts/layers-doc.mjs`);
      process.exit(1);
    }
  } else {
    writeFileSync(PAGE, want);
  }
}
