// The layers of the code, bottom first: a module may import from its own layer and the layers
// below it, never from one above. `.dependency-cruiser.cjs` turns this table into rules (checked by
// `npm run lint`), and docs/internals/architecture.md shows it as a diagram that
// test/unit/layers.test.ts keeps in sync with this table and with the folders of lib/.
'use strict';

/** @type {{ name: string, paths: string[], owns: string }[]} */
const LAYERS = [
  {
    name: 'base',
    paths: ['lib/errors.ts', 'lib/util/', 'lib/types/'],
    owns: 'typed errors, small helpers, the public types (types only)',
  },
  {
    name: 'config',
    paths: ['lib/options.ts', 'lib/option-checks.ts'],
    owns: 'queue options: defaults and checks',
  },
  {
    name: 'redis',
    paths: ['lib/keys.ts', 'lib/redis/', 'lib/scripts/'],
    owns: 'the key table, bounded commands and connections, the Lua scripts',
  },
  {
    name: 'job',
    paths: ['lib/job/'],
    owns: 'the stored job format: payload codec, add options, replies into jobs',
  },
  {
    name: 'events & schedule specs',
    paths: ['lib/events/', 'lib/schedules/'],
    owns: 'the event log reader (QueueEvents), cron and every next times',
  },
  { name: 'queue', paths: ['lib/queue/'], owns: 'WorkQueue and its parts' },
  {
    name: 'sandbox',
    paths: ['lib/sandbox/'],
    owns: 'sandboxed handlers: the pool of threads or processes, and the code run inside them',
  },
  { name: 'worker', paths: ['lib/worker/'], owns: 'Worker and its parts' },
  {
    name: 'core entries',
    paths: ['lib/index.ts', 'lib/internal.ts'],
    owns: 'nestjs-work-queue/core (index.ts), and internal.ts: the one entry for src/',
  },
  { name: 'nest', paths: ['src/'], owns: 'the Nest module and its optional integrations' },
  { name: 'sample', paths: ['sample/'], owns: 'the runnable Nest app' },
];

/** The regular expression (dependency-cruiser's `path`) that matches a layer's paths. */
function layerPattern(layer) {
  return `^(${layer.paths.map((p) => p.replace(/[.]/g, '\\.') + (p.endsWith('/') ? '' : '$')).join('|')})`;
}

module.exports = { LAYERS, layerPattern };
