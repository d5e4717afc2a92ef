// Jest's globalSetup/globalTeardown are loaded with Node's CommonJS `require` (through a pirates
// hook that compiles TypeScript), not through Jest's ESM runtime, so `moduleNameMapper` does not
// apply there: a relative `./x.js` import of a TypeScript source would not resolve. This maps
// such a request to the `.ts` file next to it when no `.js` file exists. Imported first by
// global-setup.cts (imports run in order), so the launcher can use ordinary `.js` imports.
import Module from 'node:module';

type Resolve = (request: string, ...rest: unknown[]) => string;
const loader = Module as unknown as { _resolveFilename: Resolve };
const resolve = loader._resolveFilename;

loader._resolveFilename = function resolveTs(this: unknown, request, ...rest) {
  try {
    return resolve.call(this, request, ...rest);
  } catch (err) {
    if (!request.startsWith('.') || !request.endsWith('.js')) throw err;
    return resolve.call(this, `${request.slice(0, -'.js'.length)}.ts`, ...rest);
  }
};
