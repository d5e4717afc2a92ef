/**
 * The one promise-versus-timer race of the package: every bounded wait goes through it.
 *
 * Races of one length share one timer: their deadlines are queued in order (same length, so
 * started later = due later) and one timer, armed for the first, fires those due. A race that
 * settles is marked done (and dropped once it reaches the head): no `setTimeout` +
 * `clearTimeout` per race — on Node 20 those made and dropped a timer list and its place in the
 * timers' priority queue for every sequential add (~3–5 µs of ~60; docs/performance.md, "What
 * limits us"). The shared timer holds the process open only while a race waits (unref'd when
 * none does), and goes once it fires with none left.
 */

import { MAX_TIMER_MS } from './checks.js';

/** A race waiting for its deadline: `fire` until it settles or fires. */
interface Race {
  readonly at: number;
  fire: (() => void) | undefined;
}

/** The races of one length, in deadline order (`head`: the first not yet dropped). */
interface Lane {
  readonly ms: number;
  races: Race[];
  head: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** When the timer fires (performance.now() time). */
  timerAt: number;
  /** Whether the timer holds the process open (some race waits). */
  refed: boolean;
}

const lanes = new Map<number, Lane>();

function arm(lane: Lane, at: number): void {
  lane.timer = setTimeout(() => expire(lane), Math.max(0, at - performance.now()));
  lane.timerAt = at;
  lane.refed = true;
}

/** Drop the settled races at the head; with none waiting, let the process exit. */
function trim(lane: Lane): void {
  const races = lane.races;
  while (lane.head < races.length && races[lane.head]!.fire === undefined) lane.head++;
  if (lane.head === races.length) {
    lane.races = [];
    lane.head = 0;
    if (lane.refed) {
      lane.timer?.unref();
      lane.refed = false;
    }
  } else if (lane.head >= 1024 && lane.head * 2 >= races.length) {
    lane.races = races.slice(lane.head);
    lane.head = 0;
  }
}

/** The lane's timer fired: run the races due, then arm for the next (or drop the lane). */
function expire(lane: Lane): void {
  lane.timer = undefined;
  const now = performance.now();
  const races = lane.races;
  while (lane.head < races.length && races[lane.head]!.at <= now) {
    const fire = races[lane.head]!.fire;
    races[lane.head++]!.fire = undefined;
    fire?.();
  }
  trim(lane);
  const next = lane.races[lane.head];
  // A race started by one that fired (in its late()) has armed the timer already, for its own
  // deadline: later than those still queued before it.
  if (next) {
    if (lane.timer && lane.timerAt > next.at) clearTimeout(lane.timer);
    else if (lane.timer) return;
    arm(lane, next.at);
  } else if (lanes.get(lane.ms) === lane) lanes.delete(lane.ms);
}

/** Queue a race of `ms` that runs `fire` when due. */
function start(ms: number, fire: () => void): Race {
  let lane = lanes.get(ms);
  if (!lane) {
    lane = { ms, races: [], head: 0, timer: undefined, timerAt: 0, refed: false };
    lanes.set(ms, lane);
  }
  const race: Race = { at: performance.now() + ms, fire };
  lane.races.push(race);
  if (!lane.timer) arm(lane, race.at);
  else if (!lane.refed) {
    lane.timer.ref();
    lane.refed = true;
  }
  return race;
}

function settle(ms: number, race: Race): void {
  race.fire = undefined;
  const lane = lanes.get(ms);
  if (lane && lane.races[lane.head] === race) trim(lane);
}

/** Resolve `p`, or `undefined` after `ms` (the timer never outlives the race). */
export function within<X>(p: Promise<X>, ms: number): Promise<X | undefined>;
/** Resolve `p`, or after `ms` what `late()` returns (rejected if it throws). */
export function within<X, Y>(p: Promise<X>, ms: number, late: () => Y): Promise<X | Y>;
export function within<X, Y>(
  p: Promise<X>,
  ms: number,
  late?: () => Y,
): Promise<X | Y | undefined> {
  // Past the longest timer (setTimeout would fire at once): the longest (~24.8 days).
  const wait = Math.min(Math.max(0, ms), MAX_TIMER_MS);
  return new Promise<X | Y | undefined>((resolve, reject) => {
    const fire = () => {
      if (!late) resolve(undefined);
      else {
        try {
          resolve(late());
        } catch (e) {
          reject(e);
        }
      }
    };
    if (!(wait <= MAX_TIMER_MS)) {
      // NaN: at once, as setTimeout takes it.
      const t = setTimeout(fire, wait);
      p.then(
        (v) => (clearTimeout(t), resolve(v)),
        (e: unknown) => (clearTimeout(t), reject(e)),
      );
      return;
    }
    const race = start(wait, fire);
    p.then(
      (v) => {
        settle(wait, race);
        resolve(v);
      },
      (e: unknown) => {
        settle(wait, race);
        reject(e);
      },
    );
  });
}

/** Wait `ms` (for back-off between retries; never a stand-in for a condition). */
export const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
