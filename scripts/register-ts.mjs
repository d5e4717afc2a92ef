// Lets plain `node` run this repository's TypeScript (sample app, test child processes,
// benchmarks) without a build: `node --import ./scripts/register-ts.mjs file.ts`.
// Dev-only: it compiles with @swc/core (legacy decorators + decorator metadata, as Nest needs).
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);
