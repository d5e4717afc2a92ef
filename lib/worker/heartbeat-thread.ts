// The process's one heartbeat thread (node:worker_threads), shared by every Worker of every queue:
// one Redis connection inside it per distinct connection configuration, one timer per worker.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker as Thread } from 'node:worker_threads';

/**
 * How the thread finds ioredis. lib/ never asks for its own module URL (the CommonJS build has no such thing), so it
 * cannot resolve from its own location; it resolves 'ioredis' the way the application does: from
 * the application's entry script (`process.argv[1]`), else from the working directory. An app
 * whose ioredis is nowhere on disk (a single-file bundle) gets no thread: its Workers beat from
 * the main thread, and say so once each through their 'error' outlet.
 */
function ioredisPath(): string {
  const bases = [process.argv[1], join(process.cwd(), 'noop.js')].filter(
    (b): b is string => typeof b === 'string' && b !== '',
  );
  const problems: string[] = [];
  for (const base of bases) {
    try {
      return createRequire(base).resolve('ioredis');
    } catch (e) {
      problems.push(`from ${base}: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  throw new Error(`heartbeat thread: cannot resolve ioredis (${problems.join('; ')})`);
}

// Runs in the thread (CommonJS, evaluated from this string so it works from source and dist alike).
// Messages in: conn (open a connection), add (beat a worker), remove, drop (close a connection),
// stop. Out: beat (a worker's first beat landed), removed (no beat of it can land any more).
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const ioredis = require(workerData.ioredisPath);
const conns = new Map();
const beats = new Map();
const removing = new Set();
const bounded = (p, ms) => Promise.race([p, new Promise((r) => setTimeout(r, ms).unref())]);
const quit = (c) =>
  bounded(c.quit(), 1000).catch(() => {}).finally(() => c.disconnect());
// The client's functions do not cross into the thread: ours reconnect within a second (a beat
// must land on a restarted or newly promoted master before the heartbeat timeout), and a beat
// refused by a node that is a replica now reconnects (asking the sentinels for the master again).
const fallbacks = {
  retryStrategy: (times) => Math.min(50 * times, 1000),
  reconnectOnError: (e) => /^READONLY\\b/.test(e.message),
};
const handlers = {
  conn(m) {
    const c = m.cluster
      ? new ioredis.Cluster(m.nodes, { ...m.options, lazyConnect: false })
      : new ioredis.Redis({ ...fallbacks, ...m.options, lazyConnect: false, maxRetriesPerRequest: 1 });
    c.on('error', () => {});
    // A Sentinel client's failover detector closes with each connection (lib/redis/connection.ts).
    if (!m.cluster) c.on('close', () => {
      const k = c.connector;
      const d = k && k.failoverDetector;
      if (!d) return;
      k.failoverDetector = null;
      if (!d.isDisconnected) d.cleanup();
    });
    c.defineCommand('wqHeartbeat', { lua: workerData.lua });
    conns.set(m.conn, c);
  },
  add(m) {
    const c = conns.get(m.conn);
    const b = { stopped: false, first: true, inflight: undefined, timer: undefined };
    const beat = () => {
      // One beat at a time: a slow or unreachable Redis gets no pile of them.
      if (b.stopped || b.inflight) return;
      b.inflight = c.wqHeartbeat(m.keys.length, ...m.keys, ...m.args).then(
        () => {
          if (b.first && !b.stopped) parentPort.postMessage({ t: 'beat', id: m.id });
          b.first = false;
        },
        () => {},
      ).finally(() => { b.inflight = undefined; });
    };
    b.timer = setInterval(beat, m.intervalMs);
    beats.set(m.id, b);
    beat();
  },
  remove(m) {
    const b = beats.get(m.id);
    beats.delete(m.id);
    if (b) { b.stopped = true; clearInterval(b.timer); }
    const p = bounded(b && b.inflight, 1000).then(() => {
      removing.delete(p);
      parentPort.postMessage({ t: 'removed', id: m.id });
    });
    removing.add(p);
  },
  drop(m) {
    const c = conns.get(m.conn);
    conns.delete(m.conn);
    if (c) void quit(c);
  },
  stop() {
    Promise.all([...removing])
      .then(() => Promise.all([...conns.values()].map(quit)))
      .finally(() => parentPort.close());
  },
};
parentPort.on('message', (m) => handlers[m.t](m));
`;

/** A connection configuration, as the thread receives it; `key` tells configurations apart. */
export interface ConnectionSpec {
  readonly key: string;
  readonly cluster: boolean;
  readonly nodes: unknown;
  readonly options: unknown;
}

export interface ThreadMember {
  /** Beat every `intervalMs` (the first at once); `onFirstBeat` once the first one landed. */
  beat(
    keys: string[],
    args: (string | number)[],
    intervalMs: number,
    onFirstBeat: () => void,
  ): void;
  /** Start the thread if none runs or starts (a member joined with `deferStart`). */
  boot(): void;
  /** Stop beating; resolves once no beat of this member can land any more (bounded). */
  leave(): Promise<void>;
}

type Message = Record<string, unknown> & { t: string };

interface Member {
  readonly conn: string;
  onFirstBeat?: () => void;
  onRemoved?: () => void;
  /** The thread told to remove it (undefined: told through the queue, or no thread). */
  removedBy?: Thread;
  readonly onFailure: (e: unknown) => void;
}

/** The thread while it runs, the workers it serves and their connections. */
class HeartbeatThread {
  private thread: Thread | undefined;
  /** Messages for a thread not spawned yet (held by `hold`). */
  private queued: Message[] = [];
  private readonly members = new Map<number, Member>();
  /** Connection key → members using it. */
  private readonly conns = new Map<string, number>();
  private nextId = 1;
  private broken: unknown;
  private ioredisPath: string | undefined;
  private held: Promise<void> | undefined;
  /** A spawn waits for `held`. */
  private starting = false;
  /** Threads started and not yet exited (a stopping one included). */
  alive = 0;

  constructor(private readonly lua: string) {}

  /**
   * A new member. The thread starts now if none runs, unless `deferStart`: then at the member's
   * `boot()` (or another member's start).
   */
  join(spec: ConnectionSpec, onFailure: (e: unknown) => void, deferStart = false): ThreadMember {
    if (this.broken !== undefined) throw this.broken;
    // Where a thread to start finds ioredis: resolved now (the thread may start later), from
    // the app's entry as it is now.
    try {
      if (!this.thread) this.ioredisPath = ioredisPath();
    } catch (e) {
      this.broken = e;
      throw e;
    }
    const id = this.nextId++;
    const member: Member = { conn: spec.key, onFailure };
    this.members.set(id, member);
    const users = this.conns.get(spec.key) ?? 0;
    this.conns.set(spec.key, users + 1);
    if (users === 0) this.send({ t: 'conn', conn: spec.key, ...spec, key: undefined });
    if (!deferStart) {
      this.boot();
      // The thread could not start (spawn failed at once): the caller beats from the main thread.
      if (!this.members.has(id)) throw this.broken;
    }
    let left: Promise<void> | undefined;
    return {
      beat: (keys, args, intervalMs, onFirstBeat) => {
        if (!this.members.has(id)) return;
        member.onFirstBeat = onFirstBeat;
        this.send({ t: 'add', id, conn: spec.key, keys, args, intervalMs });
      },
      boot: () => {
        if (this.members.has(id) && !member.onRemoved) this.boot();
      },
      leave: () => (left ??= this.leave(id)),
    };
  }

  private boot(): void {
    if (!this.thread && !this.starting) this.spawn();
  }

  private leave(id: number): Promise<void> {
    const member = this.members.get(id);
    if (!member) return Promise.resolve();
    const done = new Promise<void>((resolve) => {
      const timer = setTimeout(finish, 2_000);
      timer.unref();
      function finish() {
        clearTimeout(timer);
        resolve();
      }
      member.onRemoved = finish;
    });
    member.removedBy = this.thread;
    this.send({ t: 'remove', id });
    const users = this.conns.get(member.conn)! - 1;
    if (users === 0) {
      this.conns.delete(member.conn);
      this.send({ t: 'drop', conn: member.conn });
    } else {
      this.conns.set(member.conn, users);
    }
    // The member stays until the thread confirms its removal (or the thread goes).
    void done.then(() => this.members.delete(id));
    if ([...this.members.values()].every((m) => m.onRemoved)) this.stop();
    return done;
  }

  private send(m: Message): void {
    if (this.thread) this.thread.postMessage(m);
    else this.queued.push(m);
  }

  private spawn(): void {
    const start = () => {
      this.starting = false;
      // Nothing to serve any more (all left while held, or the thread failed): no thread.
      if (this.queued.length === 0 || this.thread) return;
      let thread: Thread;
      try {
        thread = new Thread(THREAD_CODE, {
          eval: true,
          // Not the app's --require/--import preloads (TS loaders, tracers): the thread needs
          // none, and they would slow its start.
          execArgv: [],
          workerData: { ioredisPath: this.ioredisPath, lua: this.lua },
        });
      } catch (e) {
        this.fail(e);
        return;
      }
      thread.unref();
      this.alive++;
      this.thread = thread;
      thread.on('message', (m: { t: string; id: number }) => {
        const member = this.members.get(m.id);
        if (m.t === 'beat') member?.onFirstBeat?.();
        else if (m.t === 'removed') member?.onRemoved?.();
      });
      // A death is not a failure to start: the members may start a new thread (heartbeat.ts).
      thread.on('error', (e) => {
        if (this.thread === thread) this.fail(e, false);
      });
      thread.once('exit', (code) => {
        this.alive--;
        if (this.thread === thread)
          this.fail(new Error(`heartbeat thread exited (${code})`), false);
        // Whoever still waits on this thread waits no more.
        for (const m of this.members.values()) if (m.removedBy === thread) m.onRemoved?.();
      });
      for (const m of this.queued.splice(0)) thread.postMessage(m);
    };
    if (this.held) {
      this.starting = true;
      void this.held.then(start);
    } else start();
  }

  /** The last member left: the thread closes its connections and ends. */
  private stop(): void {
    if (this.thread) this.thread.postMessage({ t: 'stop' });
    else for (const m of this.members.values()) if (!m.removedBy) m.onRemoved?.();
    this.thread = undefined;
    this.queued = [];
  }

  /**
   * The thread could not start (`permanent`: no thread will start in this process) or died:
   * every member is told, and beats from the main thread until it joins a new one.
   */
  private fail(e: unknown, permanent = true): void {
    if (permanent) this.broken = e;
    this.thread = undefined;
    this.queued = [];
    const members = [...this.members.values()];
    this.members.clear();
    this.conns.clear();
    for (const m of members) {
      m.onRemoved?.();
      if (!m.onRemoved) m.onFailure(e);
    }
  }

  stats(): { threads: number; workers: number; connections: number } {
    return { threads: this.alive, workers: this.members.size, connections: this.conns.size };
  }

  /** Tests: end the running thread as a crash would (its members are told it died). */
  kill(): Promise<number> | undefined {
    return this.thread?.terminate();
  }

  /** Tests: no thread starts until `until` resolves (the workers beat from the main thread). */
  hold(until: Promise<void>): void {
    this.held = until.finally(() => {
      this.held = undefined;
    });
  }
}

let shared: HeartbeatThread | undefined;

/** The process's heartbeat thread, running `lua` (the assembled heartbeat script). */
export function heartbeatThread(lua: string): HeartbeatThread {
  shared ??= new HeartbeatThread(lua);
  return shared;
}

export type { HeartbeatThread };
