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
  'reconcile',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

/**
 * KEYS every script but add takes: the 29 fixed keys plus the calling worker's lease set and
 * hand-off list.
 */
export const NUMBER_OF_KEYS = 31;

/** Scripts with their own KEYS layout (lib/scripts/_keys_<name>.lua), called with numkeys first. */
const OWN_LAYOUT: ReadonlySet<ScriptName> = new Set(['add']);

const dir = new URL('./scripts/', import.meta.url);

let sources: Map<ScriptName, string> | undefined;

/**
 * The Lua source of each script: its KEYS layout (_keys.lua, or _keys_<name>.lua), the shared
 * functions (_common.lua), then the script itself.
 */
export function scriptSources(): Map<ScriptName, string> {
  if (!sources) {
    const read = (file: string) => readFileSync(new URL(file, dir), 'utf8');
    const common = read('_common.lua');
    const keys = read('_keys.lua');
    sources = new Map(
      SCRIPT_NAMES.map((name) => [
        name,
        `${OWN_LAYOUT.has(name) ? read(`_keys_${name}.lua`) : keys}\n${common}\n-- ${name}.lua\n${read(`${name}.lua`)}`,
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
      client.defineCommand(`wq_${name}`, {
        numberOfKeys: OWN_LAYOUT.has(name) ? undefined : NUMBER_OF_KEYS,
        lua,
      });
    }
    defined.add(client);
  }
  return client as ScriptClient;
}
