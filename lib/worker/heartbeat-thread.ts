// The process's one heartbeat thread (node:worker_threads), shared by every Worker of every queue:
// one Redis connection inside it per distinct connection configuration, one timer per worker.
// What runs inside it: heartbeat-thread-code.ts.
import { createHash } from 'node:crypto';
import { Worker as Thread } from 'node:worker_threads';
import { THREAD_CODE } from './heartbeat-thread-code.js';
import { ioredisPath, plainOptions, type ConnectionSpec } from './heartbeat-thread-connections.js';

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
  private held: Promise<void> | undefined;
  /** A spawn waits for `held`. */
  private starting = false;
  /** The thread's end, once its last member left (see stopSoon). */
  private lingering: NodeJS.Timeout | undefined;
  private readonly onMessage = (m: { t: string; id: number }) => {
    const member = this.members.get(m.id);
    if (m.t === 'beat') member?.onFirstBeat?.();
    else if (m.t === 'removed') member?.onRemoved?.();
  };
  /** Threads started and not yet exited (a stopping one included). */
  alive = 0;
  /** Threads started since the process started. */
  spawned = 0;

  private readonly sha: string;

  constructor(private readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  /**
   * A new member. The thread starts now if none runs, unless `deferStart`: then at the member's
   * `boot()` (or another member's start).
   */
  join(spec: ConnectionSpec, onFailure: (e: unknown) => void, deferStart = false): ThreadMember {
    if (this.broken !== undefined) throw this.broken;
    // Where the thread finds ioredis, for a connection its plain client cannot make: resolved
    // now, from the app's entry as it is now (the connection may open later).
    const plain = plainOptions(spec);
    const ioredis = plain ? undefined : ioredisPath();
    const id = this.nextId++;
    const member: Member = { conn: spec.key, onFailure };
    this.members.set(id, member);
    if (this.lingering) {
      // It stays: its port counts again (a listener added anew refs it, see stopSoon).
      clearTimeout(this.lingering);
      this.lingering = undefined;
      this.thread?.off('message', this.onMessage).on('message', this.onMessage);
    }
    const users = this.conns.get(spec.key) ?? 0;
    this.conns.set(spec.key, users + 1);
    if (users === 0)
      this.send({
        t: 'conn',
        conn: spec.key,
        ...spec,
        key: undefined,
        plain,
        ioredisPath: ioredis,
      });
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
    void done.then(() => {
      this.members.delete(id);
      // Lingering with no member left: the thread keeps no process alive meanwhile.
      if (this.members.size === 0 && this.lingering) this.thread?.unref();
    });
    if ([...this.members.values()].every((m) => m.onRemoved)) this.stopSoon();
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
          workerData: { lua: this.lua, sha: this.sha },
          // A small young generation: the thread allocates little, and each semi-space page
          // it never touches is memory the process does not hold. A bound on the old one
          // (far above what it needs, ioredis loaded included) starts its heap smaller too.
          resourceLimits: {
            maxYoungGenerationSizeMb: YOUNG_GENERATION_MB,
            maxOldGenerationSizeMb: OLD_GENERATION_MB,
          },
        });
      } catch (e) {
        this.fail(e);
        return;
      }
      thread.unref();
      this.alive++;
      this.spawned++;
      this.thread = thread;
      // (Its 'message' listener refs the thread's port: it keeps the process alive while
      // members are served; see stopSoon.)
      thread.on('message', this.onMessage);
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

  /**
   * The last member left: the thread ends after LINGER_MS, unless a member joined meanwhile (a
   * Worker closed and another started, e.g. a restart: a thread costs ~0.1 s of CPU to start).
   * It holds no connection meanwhile (each went with its last member) and, once its members'
   * removals are confirmed, keeps no process alive (unref: its port no longer counts).
   */
  private stopSoon(): void {
    clearTimeout(this.lingering);
    if (!this.thread) {
      this.stop();
      return;
    }
    this.lingering = setTimeout(() => {
      this.lingering = undefined;
      if ([...this.members.values()].every((m) => m.onRemoved)) this.stop();
    }, LINGER_MS);
    this.lingering.unref();
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

/** How long the thread outlives its last member, in ms (see stopSoon). */
const LINGER_MS = 2_000;
/** The thread's young generation (V8 semi-spaces), in MB: its beats allocate next to nothing. */
const YOUNG_GENERATION_MB = 1;
/**
 * The thread's old generation bound, in MB: a plain connection's thread holds ~1 MB, one that
 * loaded ioredis (Cluster, Sentinel) ~20 MB. Any explicit bound makes V8 size the heap from it
 * rather than from the machine's memory: ~0.7 MB less RSS (measured on Node 20).
 */
const OLD_GENERATION_MB = 128;

let shared: HeartbeatThread | undefined;

/** The process's heartbeat thread, running `lua` (the assembled heartbeat script). */
export function heartbeatThread(lua: string): HeartbeatThread {
  shared ??= new HeartbeatThread(lua);
  return shared;
}

export type { HeartbeatThread };
