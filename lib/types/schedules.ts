/** Types of schedules (`WorkQueue.upsertSchedule`, lib/schedules/). */
import type { BackoffOptions } from './job.js';

/** When a schedule ticks and for how long (see `WorkQueue.upsertSchedule`). */
export interface ScheduleTiming {
  /** No tick before this time (inclusive; an `every` schedule ticks at startAt + k * every). */
  startAt?: Date | number;
  /** No tick after this time (inclusive). */
  endAt?: Date | number;
  /** At most this many ticks, counted from the last change of the schedule. */
  limit?: number;
  /**
   * Ticks that could not fire in time (every instance was down): 'once' (default) fires the
   * latest one made before the outage, once, then continues on schedule; 'skip' drops them.
   */
  missed?: 'once' | 'skip';
  /**
   * A tick promoted this long after its time has missed it. Default 1 000 ms, or two default
   * clean intervals when longer.
   */
  missedAfterMs?: number;
}

/** Tick every `every` ms (an integer >= 1). */
export interface EverySpec extends ScheduleTiming {
  every: number;
  cron?: undefined;
  tz?: undefined;
}

/** Tick on a 5-field (minute first) or 6-field (second first) cron expression. */
export interface CronSpec extends ScheduleTiming {
  cron: string;
  /** IANA time zone of the expression (e.g. 'Europe/Berlin'); default UTC. */
  tz?: string;
  every?: undefined;
}

export type ScheduleSpec = EverySpec | CronSpec;

/** The job each tick adds: its id is `<schedule id>:<tick ms>`. */
export interface ScheduleTemplate<T = unknown> {
  data: T;
  name?: string;
  /** 0 (highest)..9 (lowest), default 5. */
  priority?: number;
  maxAttempts?: number;
  backoff?: BackoffOptions;
  /** Each tick's job belongs to this group (docs/groups.md). */
  group?: string;
  /**
   * Drop a tick instead of firing it while the job of an earlier tick still exists (waits, runs
   * or waits for a retry; dead-lettered ones do not count). Default false: ticks overlap.
   */
  skipIfRunning?: boolean;
}

/** What `upsertSchedule` did: 'unchanged' when the same schedule was stored already. */
export type UpsertScheduleOutcome = 'created' | 'updated' | 'unchanged';

export interface ScheduleInfo<T = unknown> {
  id: string;
  /** The spec as stored (times as ms). */
  spec: ScheduleSpec;
  template: ScheduleTemplate<T>;
  /**
   * The next tick to fire (ms, Redis time): the earliest tick made, not yet due, whose job still
   * waits, else (a drain or cancel removed them) the first tick the schedule makes next; null once
   * ended.
   */
  nextFireAt: number | null;
  /**
   * The latest tick time among the ticks that fired (ms: their jobs were placed to run), or null.
   * A tick whose time came but that nothing promoted yet, or one dropped (missed, skipIfRunning),
   * does not count.
   */
  lastFireAt: number | null;
  /** Ticks made since the schedule was last changed (those to come included). */
  ticks: number;
  /** True once `limit` or `endAt` is reached: no more ticks. */
  ended: boolean;
  /** Set when the stored template payload cannot be decoded. */
  decodeError?: string;
}
