// The published package: built, packed with `npm pack`, unpacked into a fresh project and
// loaded from plain Node, as a user would. Dependencies are linked from this repository's
// node_modules (no network): ioredis and croner for the core entry, the Nest peers for the others.
// It is a dual package: ESM (dist/) for `import`, CommonJS (dist/cjs/) for `require`. Real
// Nest apps (jest, vitest, nest build) install it in test/consumers/ (npm run test:consumers).
// This file packs it once (the build: the expensive part) and runs every case against that
// project. The cases live in the *.cases.ts files next to it, by subject, and run in the order
// below (later ones rely on the peers earlier ones link). The declared dependencies, which need
// no build, are checked in dependencies.test.ts.
import { afterAll, beforeAll, describe } from '@jest/globals';
import { publicSurface, shippedFiles } from './contents.cases.js';
import { entryPoints } from './entries.cases.js';
import { packProject, removeProject } from './packed-project.js';
import { builtRuntime } from './runtime.cases.js';
import { consumerTypings } from './typings.cases.js';

beforeAll(packProject, 180_000);

afterAll(removeProject);

describe('the packed package', () => {
  shippedFiles();
  entryPoints();
  publicSurface();
  builtRuntime();
  consumerTypings();
});
