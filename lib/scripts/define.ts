/**
 * The assembled scripts as commands of a client (`wq_<name>`, and `wq_<name>Buffer` for replies
 * as Buffers): ioredis runs them by EVALSHA with a fallback to EVAL. Each script's arguments are
 * typed by its `--! argv:` header (`ScriptArgs`, generated into sources.generated.ts).
 */
import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import type { KeyOwner, QueueKeys } from '../keys.js';
import { script, scriptKeys, SCRIPT_NAMES, type ScriptName } from './assemble.js';
import type { Arg } from './header.js';
import type { ScriptArgs } from './sources.generated.js';

export type { Arg, ScriptArgs };

/** A script command: its KEYS (from ScriptKeys), then its arguments. */
type ScriptCommand = (...keysThenArgs: Arg[]) => Promise<unknown>;

/** The script commands of a client (or of a pipeline: they queue instead). */
export type ScriptCommands = {
  readonly [N in ScriptName as `wq_${N}` | `wq_${N}Buffer`]: ScriptCommand;
};

/** A client with every script defined on it. */
export type ScriptClient = (Redis | Cluster) & ScriptCommands;

const defined = new WeakSet<object>();

/** Define every script on the client (once per client). */
export function defineScripts(client: Redis | Cluster): ScriptClient {
  if (!defined.has(client)) {
    for (const name of SCRIPT_NAMES) {
      const s = script(name);
      // A script with a variable number of keys (add) takes numkeys first in its arguments.
      const variable = s.keys.includes('pending*') || s.perQueue;
      client.defineCommand(`wq_${name}`, {
        numberOfKeys: variable
          ? undefined
          : s.keys.reduce((n, k) => n + (k === 'pending' ? 10 : 1), 0),
        lua: s.lua,
      });
    }
    defined.add(client);
  }
  return client as ScriptClient;
}

/**
 * Run script `name` on a client with the scripts defined: `keys` from ScriptKeys.of, then the
 * script's arguments, typed by its header; `buffers`: replies as Buffers.
 */
export function callScript<N extends ScriptName>(
  client: ScriptClient,
  name: N,
  keys: readonly Arg[],
  args: Readonly<ScriptArgs[N]>,
  buffers = false,
): Promise<unknown> {
  return client[`wq_${name}${buffers ? 'Buffer' : ''}`](...keys, ...(args as readonly Arg[]));
}

/** Queue script `name` in a pipeline of such a client (its reply comes with the pipeline's). */
export function queueScript<N extends ScriptName>(
  pipeline: ChainableCommander,
  name: N,
  keys: readonly Arg[],
  args: Readonly<ScriptArgs[N]>,
): void {
  (pipeline as unknown as ScriptCommands)[`wq_${name}`].call(
    pipeline,
    ...keys,
    ...(args as readonly Arg[]),
  );
}

/**
 * The KEYS of each script for one queue, built once per (script, worker or session, priorities):
 * the hot path passes a ready array. A script with a variable number of keys (add) is called with
 * numkeys first: included here. A script that logs events (declares the `eventLog` key) gets the
 * event log's cap as its first ARGV (taken off by its prelude): included here too.
 */
export class ScriptKeys {
  private readonly memo = new Map<string, readonly Arg[]>();
  /** `eventCap`: the event log's approximate cap, 0 = events off. */
  constructor(
    private readonly keys: QueueKeys,
    private readonly eventCap = 0,
  ) {}

  /** `pending`: the priorities (digits) whose lists a `pending*` script gets, in that order. */
  of(name: ScriptName, owner: KeyOwner & { pending?: string } = {}): readonly Arg[] {
    const id = `${name}\0${owner.workerId ?? ''}\0${owner.session ?? ''}\0${owner.pending ?? ''}`;
    let k = this.memo.get(id);
    if (!k) {
      const s = script(name);
      // Worker '0' is "no worker": its lease set and hand-off list stay empty.
      const fixed = scriptKeys(s, this.keys, { ...owner, workerId: owner.workerId ?? '0' });
      if (s.keys.includes('pending*')) {
        const lists = Array.from(owner.pending ?? '', (p) => this.keys.pending(Number(p)));
        k = [fixed.length + lists.length, ...fixed, ...lists];
      } else {
        k = fixed;
      }
      if (s.keys.includes('eventLog')) k = [...k, this.eventCap];
      // Entries are few (per worker, per session and priority mix); bound the map anyway.
      if (this.memo.size > 10_000) this.memo.clear();
      this.memo.set(id, k);
    }
    return k;
  }
}
