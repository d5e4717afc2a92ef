/**
 * The assembled scripts, run on a client: by EVALSHA, falling back to EVAL on NOSCRIPT (a Redis
 * that never ran the script, or lost it: SCRIPT FLUSH, a restart, a Cluster node or a promoted
 * replica that never ran it). Each script's arguments are typed by its `--! argv:` header
 * (`ScriptArgs`, generated into sources.generated.ts). Pipelines queue scripts as ioredis
 * commands (`wq_<name>`, defined with `defineCommand`).
 *
 * A script's SHA1 is generated with the sources (scripts/embed-lua.mjs), and its assembly made
 * once per process, only when its text is sent: a new client costs nothing, a process assembles
 * only the scripts it sends, and none against a Redis that has them (a cold start). EVALSHA
 * first (not ioredis' EVAL at a script's first use on each connection): a worker's new
 * connection does not send every script's text (complete_and_lease: ~70 KB) to a Redis that
 * has it already.
 */
import { createHash } from 'node:crypto';
import { Command, type ChainableCommander, type Cluster, type Redis } from 'ioredis';
import type { KeyOwner, QueueKeys } from '../redis/queue-keys.js';
import { script, scriptKeys, scriptShape, type ScriptName } from './assemble.js';
import { SCRIPT_SHAS } from './assembled.generated.js';
import type { Arg } from './header.js';
import type { ScriptArgs } from './sources.generated.js';

export type { Arg, ScriptArgs };

/** A script command: its KEYS (from ScriptKeys), then its arguments. */
type ScriptCommand = (...keysThenArgs: Arg[]) => Promise<unknown>;

/** The script commands of a pipeline (they queue). */
type ScriptCommands = {
  readonly [N in ScriptName as `wq_${N}`]: ScriptCommand;
};

/** A client scripts run on. */
export type ScriptClient = Redis | Cluster;

/** A script as sent: its text, SHA1, and KEYS count (undefined: numkeys comes first). */
interface Loaded {
  readonly lua: string;
  readonly sha: string;
  readonly numberOfKeys: number | undefined;
}

const loaded = new Map<ScriptName, Loaded>();

const checked = new Set<ScriptName>();
/**
 * Script `name`'s text, checked once against its generated SHA1: a stale generated file (a
 * checkout where `npm run lua` was not run after a change) fails loudly instead of calling a
 * script Redis may still have from before.
 */
function checkedText(name: ScriptName): string {
  const lua = script(name).lua;
  if (!checked.has(name)) {
    if (createHash('sha1').update(lua).digest('hex') !== SCRIPT_SHAS[name])
      throw new Error(`lib/scripts/assembled.generated.ts is stale (${name}): run \`npm run lua\``);
    checked.add(name);
  }
  return lua;
}

/**
 * Script `name` as sent: its SHA1 generated with the sources (assembled.generated.ts), its
 * text read only to send it whole, when Redis answers NOSCRIPT or for a pipeline (assembled
 * then, unless generated too: `script`).
 */
export function loadedScript(name: ScriptName): Loaded {
  let l = loaded.get(name);
  if (!l) {
    const s = scriptShape(name);
    // A script with a variable number of keys (add) takes numkeys first in its arguments.
    const variable = s.keys.includes('pending*') || s.perQueue;
    l = {
      get lua() {
        return checkedText(name);
      },
      sha: SCRIPT_SHAS[name],
      numberOfKeys: variable
        ? undefined
        : s.passed.reduce((n, k) => n + (k === 'pending' ? 10 : 1), s.byName ? 1 : 0),
    };
    loaded.set(name, l);
  }
  return l;
}

/** The client (scripts are run by `callScript`; kept for its callers' types). */
export function defineScripts(client: Redis | Cluster): ScriptClient {
  return client;
}

type Evaluator = (script: string, ...keysThenArgs: Array<Arg | readonly Arg[]>) => Promise<unknown>;
type Evaluators = Record<'evalsha' | 'evalshaBuffer' | 'eval' | 'evalBuffer', Evaluator>;

/** The ioredis options that change how a command is made (then the client's methods make it). */
interface CommandShaping {
  keyPrefix?: string;
  enableAutoPipelining?: boolean;
  showFriendlyErrorStack?: boolean;
  redisOptions?: { keyPrefix?: string };
}

/**
 * Send EVALSHA / EVAL (`command`) of script text or SHA `first` with `numberOfKeys` (undefined:
 * it leads `keys`), `keys` and `args`, as ioredis' `client.evalsha(…)` would, but with the
 * command's arguments in one array made here: ioredis flattens a command's arguments with
 * Array.prototype.flat, ~0.3 µs per argument on Node 20 (3.5 µs for a plain add's 12), more than
 * the rest of making the command. A client whose options shape commands (a key prefix,
 * auto-pipelining, friendly error stacks) gets its own method.
 */
function send(
  client: ScriptClient,
  command: 'evalsha' | 'eval',
  first: string,
  numberOfKeys: number | undefined,
  keys: readonly Arg[],
  args: readonly Arg[],
  buffers: boolean,
): Promise<unknown> {
  const o = client.options as CommandShaping;
  if (
    o.keyPrefix ||
    o.redisOptions?.keyPrefix ||
    o.enableAutoPipelining ||
    o.showFriendlyErrorStack
  ) {
    const c = client as unknown as Evaluators;
    const rest = numberOfKeys === undefined ? [keys, args] : [numberOfKeys, keys, args];
    return (buffers ? c[`${command}Buffer`] : c[command]).call(client, first, ...rest);
  }
  const flat: Arg[] = [first];
  if (numberOfKeys !== undefined) flat.push(numberOfKeys);
  for (let i = 0; i < keys.length; i++) flat.push(keys[i]!);
  for (let i = 0; i < args.length; i++) flat.push(args[i]!);
  const cmd = new Command(command, [], { replyEncoding: buffers ? null : 'utf8' });
  cmd.args = flat;
  // (As ioredis does when it makes the command: numbers to strings, Buffers set buffer mode.)
  cmd.stringifyArguments();
  return client.sendCommand(cmd) as Promise<unknown>;
}

/**
 * What a client learned of its Redis' script cache: how many NOSCRIPT answers it got (`lost`),
 * and for each script the value of `lost` when it last ran by its text (its text is in the
 * cache since). Only for a client that got a NOSCRIPT answer.
 */
interface ScriptCache {
  lost: number;
  readonly sent: Map<ScriptName, number>;
}
const caches = new WeakMap<ScriptClient, ScriptCache>();

/**
 * Run script `name` on a client: `keys` from ScriptKeys.of, then the script's arguments, typed
 * by its header; `buffers`: replies as Buffers. A NOSCRIPT refusal did not run the script: it
 * is sent again, with its text. Once a client got one (a Redis that restarted, was flushed or
 * failed over to a replica: it lost every script, not one), each other script goes with its
 * text at once the first time after (a worker's first lease after its registration: no round
 * trip for another NOSCRIPT).
 */
export function callScript<N extends ScriptName>(
  client: ScriptClient,
  name: N,
  keys: readonly Arg[],
  args: Readonly<ScriptArgs[N]>,
  buffers = false,
): Promise<unknown> {
  const s = loadedScript(name);
  const a = args as readonly Arg[];
  const cache = caches.get(client);
  if (cache !== undefined && (cache.sent.get(name) ?? -1) < cache.lost) {
    return sendText(client, cache, name, s, keys, a, buffers);
  }
  return send(client, 'evalsha', s.sha, s.numberOfKeys, keys, a, buffers).catch((e: unknown) => {
    if (!(e instanceof Error) || !e.message.startsWith('NOSCRIPT')) throw e;
    if (quitting(client)) throw new Error(`Connection is closed. (${name}: not sent again)`);
    let c = caches.get(client);
    if (c === undefined) caches.set(client, (c = { lost: 0, sent: new Map() }));
    c.lost++;
    return sendText(client, c, name, s, keys, a, buffers);
  });
}

/** EVAL of the script's text; once it ran, the cache has it. */
function sendText(
  client: ScriptClient,
  cache: ScriptCache,
  name: ScriptName,
  s: Loaded,
  keys: readonly Arg[],
  args: readonly Arg[],
  buffers: boolean,
): Promise<unknown> {
  const lost = cache.lost;
  return send(client, 'eval', s.lua, s.numberOfKeys, keys, args, buffers).then((reply) => {
    if ((cache.sent.get(name) ?? -1) < lost) cache.sent.set(name, lost);
    return reply;
  });
}

/**
 * Whether the client was told to close (its QUIT is written, or `disconnect()` was called). No
 * script is sent again then: a command written after QUIT makes Redis reset the connection, and
 * the reset drops the replies not read yet — the QUIT's among them, so the caller's `quit()`
 * fails with "Connection is closed." (ioredis' own flag: private in its typings).
 */
function quitting(client: ScriptClient): boolean {
  return (client as unknown as { manuallyClosing?: boolean }).manuallyClosing === true;
}

/** A client or pipeline as `defineCommand` leaves it. */
type Definable = Record<string, unknown> & {
  defineCommand(name: string, d: { numberOfKeys?: number; lua: string }): void;
};

/** Queue script `name` in a pipeline of such a client (its reply comes with the pipeline's). */
export function queueScript<N extends ScriptName>(
  pipeline: ChainableCommander,
  name: N,
  keys: readonly Arg[],
  args: Readonly<ScriptArgs[N]>,
): void {
  const p = pipeline as unknown as Definable & { redis: Definable };
  const command = `wq_${name}`;
  if (typeof p[command] !== 'function') {
    // ioredis' script command (EVALSHA, EVAL on NOSCRIPT, per Cluster node too). A pipeline
    // copies its client's commands when it is made: defined on the client, then copied.
    if (typeof p.redis[command] !== 'function') {
      const s = loadedScript(name);
      p.redis.defineCommand(command, { numberOfKeys: s.numberOfKeys, lua: s.lua });
    }
    p[command] = p.redis[command];
  }
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
    // A call's own key (a cancel's answer, a registration's id): made for it, not kept.
    const own = owner.ackId !== undefined || owner.registration !== undefined;
    let k = own ? undefined : this.memo.get(id);
    if (!k) {
      const s = scriptShape(name);
      // Worker '0' is "no worker": its lease set and hand-off list stay empty.
      const fixed = scriptKeys(s, this.keys, {
        ...owner,
        workerId: owner.workerId ?? '0',
        registration: owner.registration ?? '0',
      });
      if (s.keys.includes('pending*')) {
        const lists = Array.from(owner.pending ?? '', (p) => this.keys.pending(Number(p)));
        k = [fixed.length + lists.length, ...fixed, ...lists];
      } else {
        k = fixed;
      }
      if (s.keys.includes('eventLog')) k = [...k, this.eventCap];
      // Entries are few (per worker, per session and priority mix); bound the map anyway.
      if (this.memo.size > 10_000) this.memo.clear();
      if (!own) this.memo.set(id, k);
    }
    return k;
  }
}
