import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';

/** Every script, by file name (lib/scripts/<name>.lua). */
export const SCRIPT_NAMES = [
  'add',
  'lease',
  'complete',
  'fail',
  'release',
  'extend',
  'cancel',
  'progress',
  'clean',
  'reclaim_worker',
  'worker',
  'counts',
  'get',
  'dead',
  'repair',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** KEYS every script takes: the 26 fixed keys plus the calling worker's lease set. */
export const NUMBER_OF_KEYS = 27;

const dir = new URL('./scripts/', import.meta.url);

let sources: Map<ScriptName, string> | undefined;

/** The Lua source of each script, with the shared prelude inlined. */
export function scriptSources(): Map<ScriptName, string> {
  if (!sources) {
    const common = readFileSync(new URL('_common.lua', dir), 'utf8');
    sources = new Map(
      SCRIPT_NAMES.map((name) => [
        name,
        `${common}\n-- ${name}.lua\n${readFileSync(new URL(`${name}.lua`, dir), 'utf8')}`,
      ]),
    );
  }
  return sources;
}

type Arg = string | number | Buffer;
type ScriptFn = (...args: Arg[]) => Promise<unknown>;

/** The commands `defineCommand` adds to a client, as `wq_<name>` and `wq_<name>Buffer`. */
export type ScriptClient = (Redis | Cluster) & Record<string, ScriptFn>;

const defined = new WeakSet<object>();

/** Define every script on the client (ioredis does EVALSHA with a fallback to EVAL). */
export function defineScripts(client: Redis | Cluster): ScriptClient {
  if (!defined.has(client)) {
    for (const [name, lua] of scriptSources()) {
      client.defineCommand(`wq_${name}`, { numberOfKeys: NUMBER_OF_KEYS, lua });
    }
    defined.add(client);
  }
  return client as ScriptClient;
}
