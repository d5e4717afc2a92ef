/**
 * Schedules, client side: checking a spec and template (every problem listed, nothing written),
 * the stored definition, and the tick times (cron with time zones and DST via croner).
 */
import { Cron } from 'croner';
import { errorMessage, invalid } from '../errors.js';
import { defaultCleanInterval, type ResolvedQueueOptions } from '../options.js';
import { AddProblems, prepareAdd } from '../job/add-options.js';
import type { Raw } from '../job/codec.js';
import type { ScheduleSpec, ScheduleTemplate } from '../types/index.js';
import { isPosInt, malformedProblem, MAX_TIME_MS, shown } from '../util/checks.js';

/**
 * Ticks are made this far ahead of Redis time (at least one, at most MAX_AHEAD per call): 2 s, or
 * three clean intervals when the queue's default clean interval is longer (see `horizonOf`).
 */
export const HORIZON_MS = 2000;
export const MAX_AHEAD = 100;
const MAX_EVERY = 1e12;

/**
 * How far ahead to make ticks for a queue: clean() makes them, every clean interval (the default
 * one: a quarter of the heartbeat timeout or lease, 100 ms..5 s); a schedule is due again when
 * half of that is left, so a clean or two may be late without a tick being left out.
 */
export function horizonOf(o: ResolvedQueueOptions): number {
  return Math.max(HORIZON_MS, 3 * defaultCleanInterval([{ options: o }]));
}

/** The definition as stored (JSON, keys in this order: compared as bytes by the upsert). */
export interface StoredDef {
  every?: number;
  cron?: string;
  tz?: string;
  startAt?: number;
  endAt?: number;
  limit?: number;
  missed: 'once' | 'skip';
  missedAfterMs: number;
}

export interface PreparedSchedule {
  def: string;
  payload: Raw;
  tickMeta: string;
  /** Where `every` ticks start: 'a<ms>' (startAt) or 'd<ms>' (Redis now + ms). */
  anchor: string;
}

const SPEC_KEYS = new Set(['every', 'cron', 'tz', 'startAt', 'endAt', 'limit', 'missed']);
SPEC_KEYS.add('missedAfterMs');
const TEMPLATE_KEYS = new Set(['data', 'name', 'priority', 'maxAttempts', 'backoff']);
TEMPLATE_KEYS.add('skipIfRunning');
TEMPLATE_KEYS.add('group');

const crons = new Map<string, Cron>();
/** A parsed cron expression (cached; throws on a bad expression or time zone). */
export function cronOf(expr: string, tz: string | undefined): Cron {
  const key = `${tz ?? ''}\0${expr}`;
  let c = crons.get(key);
  if (!c) {
    c = new Cron(expr, { timezone: tz ?? 'UTC', paused: true });
    if (crons.size > 1000) crons.clear();
    crons.set(key, c);
  }
  return c;
}

/** The next `n` ticks of a cron expression strictly after `after` (ms). */
export function cronTicks(
  expr: string,
  tz: string | undefined,
  after: number,
  n: number,
): number[] {
  const c = cronOf(expr, tz);
  const out: number[] = [];
  let t: number | undefined = after;
  while (out.length < n && t !== undefined) {
    t = c.nextRun(new Date(t))?.getTime();
    if (t !== undefined) out.push(t);
  }
  return out;
}

const ms = (v: Date | number | undefined): number | undefined =>
  v instanceof Date ? v.getTime() : v;

function checkTime(what: string, v: unknown, problems: string[]): number | undefined {
  if (v === undefined) return undefined;
  const t = ms(v as Date | number);
  // Below 1e14 ms (year 5138): tick times stay exact in the scripts' JSON (14 digits).
  if (typeof t !== 'number' || !Number.isFinite(t) || t < 0 || t >= MAX_TIME_MS) {
    problems.push(`${what} must be a valid Date or ms timestamp from 1970 to 5138`);
    return undefined;
  }
  return Math.floor(t);
}

function checkCron(spec: ScheduleSpec, problems: string[]): void {
  const { cron, tz } = spec;
  if (typeof cron !== 'string' || cron.trim() === '') {
    problems.push('cron must be a non-empty string');
    return;
  }
  let tzOk = true;
  if (tz !== undefined) {
    try {
      if (typeof tz !== 'string') throw new Error();
      new Intl.DateTimeFormat('en-US', { timeZone: tz });
    } catch {
      problems.push(`tz ${JSON.stringify(tz)} is not a known IANA time zone`);
      tzOk = false;
    }
  }
  const fields = cron.trim().split(/\s+/).length;
  if (!cron.trim().startsWith('@') && fields !== 5 && fields !== 6) {
    problems.push(
      `cron ${JSON.stringify(cron)} has ${fields} fields; give 5 (minute first) or 6 (second first)`,
    );
    return;
  }
  try {
    const c = cronOf(cron, tzOk ? tz : undefined);
    if (c.nextRun(new Date(0)) === null) problems.push(`cron ${JSON.stringify(cron)} never fires`);
  } catch (e) {
    problems.push(`cron ${JSON.stringify(cron)} cannot be parsed: ${errorMessage(e)}`);
  }
}

/** A payload each codec takes: a template without data is checked with it (said once). */
const EMPTY_DATA: Readonly<Record<ResolvedQueueOptions['codec'], unknown>> = {
  json: null,
  string: '',
  buffer: Buffer.alloc(0),
};

/** BullMQ's names of schedule options (upsertJobScheduler's repeat options and job template). */
const BULLMQ_HINTS: Readonly<Record<string, string>> = {
  pattern: "BullMQ's pattern is spec.cron here",
  repeat: 'the spec is the second argument: { every } or { cron, tz? }',
  immediately:
    'an every schedule first fires one interval after it was created, or at a startAt a moment ahead',
  opts: 'the template takes name, priority, maxAttempts, backoff, group itself',
  attempts: "BullMQ's attempts is template.maxAttempts here",
  jobId: 'the job of a tick has the id `<schedule id>:<tick ms>`',
};
const hintOf = (k: string): string => (BULLMQ_HINTS[k] ? ` (${BULLMQ_HINTS[k]})` : '');

/** Check and encode a schedule; throws INVALID_ARGUMENT listing every problem. */
export function prepareSchedule(
  o: ResolvedQueueOptions,
  id: unknown,
  spec: ScheduleSpec,
  template: ScheduleTemplate,
): PreparedSchedule {
  const problems = new AddProblems();
  const list = problems.list;
  if (typeof id !== 'string' || id.length === 0 || id.length > 200) {
    list.push('schedule id must be a string of 1-200 characters');
  } else {
    const malformed = malformedProblem('schedule id', id);
    if (malformed) list.push(malformed);
  }
  // Default: 1 s, or two default clean intervals (clean() promotes due ticks when every worker
  // is busy): a tick that is merely waiting for that is not missed.
  const lateMs = Math.max(1000, 2 * defaultCleanInterval([{ options: o }]));
  const def: StoredDef = { missed: 'once', missedAfterMs: lateMs };
  let anchor = 'd0';
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    list.push('spec must be an object { every } or { cron, tz? }');
  } else {
    for (const k of Object.keys(spec)) {
      if (!SPEC_KEYS.has(k)) list.push(`spec: unknown key ${JSON.stringify(k)}${hintOf(k)}`);
    }
    const hasEvery = spec.every !== undefined;
    const hasCron = spec.cron !== undefined;
    if (hasEvery === hasCron) list.push('spec needs exactly one of every and cron');
    if (hasEvery) {
      if (!isPosInt(spec.every) || spec.every > MAX_EVERY) {
        list.push(`every must be a positive integer (ms) up to 1e12, got ${shown(spec.every)}`);
      }
      if (spec.tz !== undefined) list.push('tz applies to cron schedules only');
    }
    if (hasCron) checkCron(spec, list);
    const startAt = checkTime('startAt', spec.startAt, list);
    const endAt = checkTime('endAt', spec.endAt, list);
    if (startAt !== undefined && endAt !== undefined && endAt < startAt) {
      list.push('endAt is before startAt');
    }
    if (spec.limit !== undefined && !isPosInt(spec.limit)) {
      list.push(`limit must be a positive integer, got ${shown(spec.limit)}`);
    }
    if (spec.missed !== undefined && spec.missed !== 'once' && spec.missed !== 'skip') {
      list.push(`missed must be 'once' or 'skip', got ${shown(spec.missed)}`);
    }
    if (spec.missedAfterMs !== undefined && !isPosInt(spec.missedAfterMs)) {
      list.push(`missedAfterMs must be a positive integer, got ${shown(spec.missedAfterMs)}`);
    }
    const stored: StoredDef = {
      every: hasEvery ? spec.every : undefined,
      cron: hasCron ? spec.cron?.trim() : undefined,
      tz: hasCron ? spec.tz : undefined,
      startAt,
      endAt,
      limit: spec.limit,
      missed: spec.missed ?? 'once',
      missedAfterMs: spec.missedAfterMs ?? lateMs,
    };
    Object.assign(def, stored);
    anchor = startAt !== undefined ? `a${startAt}` : `d${isPosInt(spec.every) ? spec.every : 0}`;
  }
  let values: ReturnType<typeof prepareAdd>;
  let skip = false;
  if (typeof template !== 'object' || template === null) {
    list.push(
      'template must be an object { data, name?, priority?, maxAttempts?, backoff?, skipIfRunning?, group? }',
    );
  } else {
    for (const k of Object.keys(template)) {
      if (!TEMPLATE_KEYS.has(k))
        list.push(`template: unknown key ${JSON.stringify(k)}${hintOf(k)}`);
    }
    if (!('data' in template)) list.push('template.data is missing');
    const { name, priority, maxAttempts, backoff, skipIfRunning, group } = template;
    if (skipIfRunning !== undefined && typeof skipIfRunning !== 'boolean') {
      list.push('template: skipIfRunning must be a boolean');
    }
    skip = skipIfRunning === true;
    values = prepareAdd(
      o,
      'data' in template ? template.data : EMPTY_DATA[o.codec], // (missing: said once, above)
      { name, priority, maxAttempts, backoff, group },
      'template: ',
      problems,
    );
  }
  if (list.length > 0 || !values) {
    // One INVALID_ARGUMENT for all, an unencodable or too large payload included.
    throw invalid(list, `schedule ${typeof id === 'string' ? JSON.stringify(id) : ''} refused`);
  }
  // skipIfRunning: meta w names the schedule (see fire_tick in lib/scripts/lib/placement.lua).
  const tickMeta = skip ? JSON.stringify({ ...JSON.parse(values[2] || '{}'), w: id }) : values[2];
  return { def: JSON.stringify(def), payload: values[1], tickMeta, anchor };
}

/** The state of a schedule the next ticks depend on (from its record). */
export interface TickState {
  /** Anchor of `every` ticks. */
  a: number;
  /** The last tick made, if any. */
  t?: number;
  /** Ticks made so far. */
  c: number;
}

/**
 * The next ticks after the later of the last tick made and Redis `now`: ticks missed while
 * nobody made them are never made (see the missed policy). Up to now + horizon, at least
 * one; `ended` when endAt or limit stops them.
 */
export function nextTicks(
  def: StoredDef,
  s: TickState,
  now: number,
  horizon = HORIZON_MS,
): { ticks: number[]; ended: boolean } {
  // From the last tick made, or now; back to missedAfterMs before now once ticks were made: a
  // tick whose time passed since, by less than that, and that no call made yet (none ran when it
  // came due: a restart after an outage, whose first clean comes later) is late, not missed:
  // made now, it fires at once. (A new or changed schedule starts after now.)
  let after = s.t === undefined ? now : Math.max(s.t, now - def.missedAfterMs);
  const left = def.limit === undefined ? Infinity : def.limit - s.c;
  const ticks: number[] = [];
  for (;;) {
    if (ticks.length >= left) return { ticks, ended: true };
    if (ticks.length >= MAX_AHEAD) return { ticks, ended: false };
    const t = tickAfter(def, s.a, after);
    if (t === undefined || (def.endAt !== undefined && t > def.endAt))
      return { ticks, ended: true };
    if (ticks.length > 0 && t > now + horizon) return { ticks, ended: false };
    ticks.push(t);
    after = t;
  }
}

/** The first tick strictly after `after`. */
function tickAfter(def: StoredDef, anchor: number, after: number): number | undefined {
  if (def.every !== undefined) {
    if (after < anchor) return anchor;
    return anchor + (Math.floor((after - anchor) / def.every) + 1) * def.every;
  }
  const from = def.startAt !== undefined ? Math.max(after, def.startAt - 1) : after;
  return cronTicks(def.cron!, def.tz, from, 1)[0];
}
