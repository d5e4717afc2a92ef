// Import rules, checked by `npm run lint` (`depcruise`, type imports included): no cycles anywhere,
// no import up the layers of scripts/layers.cjs, src/ reaches the core only through
// lib/internal.ts, and optional peers only from their own sub-path.
'use strict';
const { LAYERS, layerPattern } = require('./scripts/layers.cjs');

const upRules = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-${layer.name.replace(/[^a-z]+/g, '-')}-up`,
  comment: `${layer.name} may not import from a layer above it (scripts/layers.cjs)`,
  severity: 'error',
  from: { path: layerPattern(layer) },
  to: { path: LAYERS.slice(i + 1).map(layerPattern) },
}));

/** An optional peer, importable only from its own folder of src/. */
const peer = (name, pkg, folder) => ({
  name: `optional-peer-${name}`,
  comment: `${pkg} is an optional peer: only ${folder} (its own sub-path export) may import it`,
  severity: 'error',
  from: { pathNot: `^(${folder}|test/|sample/)` },
  to: { path: `node_modules/${pkg}/` },
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no import cycle, type imports included',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...upRules,
    {
      name: 'types-are-types',
      comment: 'lib/types/ holds types only: it imports nothing at run time, and only lib/types/',
      severity: 'error',
      from: { path: '^lib/types/' },
      to: { pathNot: '^lib/types/' },
    },
    {
      name: 'types-import-types',
      severity: 'error',
      from: { path: '^lib/types/' },
      to: { dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'core-without-nest',
      comment: 'the core never imports @nestjs/*',
      severity: 'error',
      from: { path: '^lib/' },
      to: { path: 'node_modules/@nestjs/' },
    },
    {
      name: 'nest-through-internal',
      comment:
        'src/ reaches the core only through lib/internal.ts (src/index.ts re-exports lib/index.ts)',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/index\\.ts$' },
      to: { path: '^lib/', pathNot: '^lib/internal\\.ts$' },
    },
    {
      name: 'nest-index-public-core',
      severity: 'error',
      from: { path: '^src/index\\.ts$' },
      to: { path: '^lib/', pathNot: '^lib/index\\.ts$' },
    },
    {
      name: 'sample-public-entries',
      comment: 'the sample uses the package as a user does: its entry points only',
      severity: 'error',
      from: { path: '^sample/' },
      to: { path: '^(lib|src)/', pathNot: ['^src/index\\.ts$', '^src/[a-z-]+/index\\.ts$'] },
    },
    peer('terminus', '@nestjs/terminus', 'src/health/'),
    peer('prom-client', 'prom-client', 'src/metrics/'),
    peer('otel', '@opentelemetry/api', 'src/otel/'),
    peer('bull-board', '@bull-board/', 'src/bull-board/'),
    peer('testcontainers', 'testcontainers', 'src/testing/'),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.cts', '.mts', '.js', '.cjs', '.mjs'] },
  },
};
