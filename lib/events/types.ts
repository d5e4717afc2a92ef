// The events of a queue's event log, as QueueEvents delivers them (written by the scripts:
// lib/scripts/lib/events.lua), and the options of a reader.

/** What every event carries. */
export interface EventBase {
  /** The job's public id (its caller id when it has one). */
  id: string;
  /** The stream entry the event came in (several jobs of one call share an entry). */
  eventId: string;
  /** When it happened: Redis time, ms. */
  at: number;
  /**
   * The job's group (docs/groups.md), on the events of its state changes (not on `progress`);
   * absent for an ungrouped job.
   */
  group?: string;
}

/** A job's times, as events about its runs carry them (Redis ms; absent when not known). */
export interface EventTimes {
  /** When the job was added. */
  addedAt?: number;
  /** When the lease of the attempt the event is about started. */
  startedAt?: number;
}

/** One change of one job. */
export type QueueEvent =
  /** Stored by add/addBulk, to run now. */
  | (EventBase & { kind: 'added' })
  /**
   * Stored by add/addBulk (or moved by DelayedError) with a due time in the future; a retry
   * waiting out its backoff logs `failed` (retried) instead.
   */
  | (EventBase & { kind: 'delayed' })
  /**
   * A delayed job became pending (its due time came), or a flow parent did (its children ended;
   * one with `delayMs` is 'delayed' then).
   */
  | (EventBase & { kind: 'promoted' })
  /** A flow parent was added: it waits for its children (docs/flows.md). */
  | (EventBase & { kind: 'waiting-children' })
  /**
   * Leased by a worker: by a lease call, or, for a job handed off to a parked worker, when that
   * worker adopts it (its next call; the handler may have started just before). Its `addedAt`;
   * its lease started at `at` (a hand-off: when it was added).
   */
  | (EventBase & { kind: 'active'; workerId: string; addedAt?: number })
  | (EventBase & { kind: 'progress'; progress: unknown })
  /**
   * Completed (`at` is its `finishedAt`) by worker `workerId`. `resultStored`: its result can be
   * read (getJob / waitForResult: results are stored, or the job is kept); then `result` is it
   * when it has one of at most 1 KiB of JSON (BullMQ's `returnvalue`), else `resultBytes` its
   * size (read it with getJob).
   */
  | (EventBase &
      EventTimes & {
        kind: 'completed';
        resultStored: boolean;
        workerId?: string;
        result?: unknown;
        resultBytes?: number;
      })
  /** A failed attempt by `workerId`; `retried`: it runs again (else a 'dead' event follows). */
  | (EventBase &
      EventTimes & {
        kind: 'failed';
        attempt: number;
        retried: boolean;
        error: string;
        workerId?: string;
      })
  /** Dead-lettered (`at` is its `finishedAt`): why, and its last error when that is not the reason. */
  | (EventBase & EventTimes & { kind: 'dead'; reason: string; error?: string })
  | (EventBase & { kind: 'cancelled' })
  /** A lapsed lease taken back ('lease expired' or 'worker died'): the job waits again. */
  | (EventBase & { kind: 'reclaimed'; reason: string })
  /** Given back by its worker without counting an attempt (release, reconnect), waits again. */
  | (EventBase & { kind: 'released' });

export type QueueEventKind = QueueEvent['kind'];

/** The events of a kind. */
export type QueueEventOf<K extends QueueEventKind> = Extract<QueueEvent, { kind: K }>;

/** QueueEvents as an EventEmitter: each kind by its name, every event as 'event', and errors. */
export type QueueEventsEvents = { [K in QueueEventKind]: [QueueEventOf<K>] } & {
  event: [QueueEvent];
  /** A failed read (it retries on its own) or a listener that threw. */
  error: [unknown];
};

export interface QueueEventsOptions {
  /** The queue's key prefix. Default `wq`. */
  prefix?: string;
  /**
   * Where to start: `'$'` (default) after the last event logged when the reader starts; `'0'`
   * every event the log still holds; or a stream id (e.g. an earlier reader's `lastId`) to
   * resume after it.
   */
  from?: string;
  /** How long one blocking read waits, ms. Default 5 000. */
  blockMs?: number;
  /** Bound on any other wait on Redis, ms (a read gets `blockMs` plus this). Default 5 000. */
  commandTimeoutMs?: number;
}
