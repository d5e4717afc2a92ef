/**
 * Schedules of a queue (`WorkQueue.upsertSchedule` and friends): stored in Redis, each tick made
 * ahead of time as a delayed job with caller id `<schedule>:<tick ms>` (schedule_make_ticks.lua).
 * With `replicaAcks`, an upsert's last write (its first ticks) is followed by WAIT on the same
 * connection (replica-acks.ts), which confirms the schedule's record too. An upsert that changes
 * nothing writes the record's version (schedule_make_ticks, with the ticks clean() would make
 * now, if any), so that its WAIT covers the first upsert whichever connection made it: calling
 * it again after NOT_REPLICATED adds no tick twice and resolves once replicas confirm.
 */
import { errorMessage, invalid } from '../errors.js';
import { pageOf } from '../util/checks.js';
import { PAGE } from './listings.js';
import { decode, type Raw } from '../job/codec.js';
import type { QueueContext, ScriptArgs } from './context.js';
import { confirmed, ReplicaAcks, type AckCall } from './replica-acks.js';
import { num, parseMeta, str, type Reply } from '../job/records.js';
import type {
  ScheduleInfo,
  ScheduleSpec,
  ScheduleTemplate,
  UpsertScheduleOutcome,
} from '../types/index.js';
import { horizonOf, nextTicks, prepareSchedule, type StoredDef } from '../schedules/spec.js';

/** A schedule's record as schedule_*.lua store it (see lib/scripts/lib/schedules.lua). */
interface StoredRecord {
  d: string;
  j?: string;
  v: number;
  a: number;
  t?: number;
  c: number;
  m: number[];
  /** lastFireAt as an older version kept it (fired or dropped): read when no tick fired since. */
  p?: number;
  e?: number;
}

function parseRecord(json: string): StoredRecord {
  const r = JSON.parse(json) as StoredRecord;
  // Lua's cjson writes an empty list as {}.
  if (!Array.isArray(r.m)) r.m = [];
  return r;
}

export class Schedules<T> {
  private acks: ReplicaAcks | undefined;

  constructor(private readonly ctx: QueueContext) {}

  async upsert(
    id: string,
    spec: ScheduleSpec,
    template: ScheduleTemplate<T>,
  ): Promise<UpsertScheduleOutcome> {
    const p = prepareSchedule(this.ctx.options, id, spec, template);
    // 0 unchanged, 1 created, 2 changed
    const r = await this.ctx.run('schedule_upsert', [id, p.def, p.payload, p.tickMeta, p.anchor]);
    const call = this.ctx.options.replicaAcks > 0 ? this.acksCall(id) : undefined;
    if (r === 0 && !call) return 'unchanged';
    // Its first ticks now; should this call fail or the process die, the next clean() does it.
    await this.topUp(id, call);
    return r === 0 ? 'unchanged' : r === 1 ? 'created' : 'updated';
  }

  async remove(id: string): Promise<boolean> {
    this.ctx.checkId(id);
    return (await this.ctx.run('schedule_remove', [id])) === 1;
  }

  async get(id: string): Promise<ScheduleInfo<T> | null> {
    this.ctx.checkId(id);
    const [info] = await this.read(id, 0, 1);
    return info ?? null;
  }

  async list(opts: { offset?: number; limit?: number } = {}): Promise<ScheduleInfo<T>[]> {
    const problems: string[] = [];
    const { offset, limit } = pageOf(opts, PAGE, problems);
    if (problems.length) throw invalid(problems, `${this.ctx.name}: listSchedules refused`);
    return this.read('', offset, limit);
  }

  /**
   * Make the next ticks of one schedule. Resolves how many were made (0: none needed, or another
   * did). `acks`: then WAIT for `replicaAcks` replicas (NOT_REPLICATED when too few confirm); and
   * when its ticks are not due (clean() would not make them yet), make none but write its record
   * all the same (its version), for the WAIT to cover the writes before.
   */
  async topUp(id: string, acks?: AckCall): Promise<number> {
    // { Redis now, id, record, '', latest tick fired }
    const r = (await this.ctx.run('schedule_get', [id, 0, 1, 0])) as Reply;
    // (Nothing to make, gone or ended: no write, but WAIT all the same, behind a read that takes
    // it to the queue's node.)
    const rec = r.length < 4 ? undefined : parseRecord(str(r[2]));
    if (!rec || rec.e === 1) {
      if (acks) await this.confirm('schedule_get', [id, 0, 1, 0], acks);
      return 0;
    }
    const now = num(r[0]);
    const def = JSON.parse(rec.d) as StoredDef;
    const horizon = horizonOf(this.ctx.options);
    // Due again when half the horizon is left (schedule_make_ticks sets it so).
    const due = !acks || rec.t === undefined || rec.t - horizon / 2 <= now;
    const { ticks, ended } = due ? nextTicks(def, rec, now, horizon) : { ticks: [], ended: false };
    const args: ScriptArgs['schedule_make_ticks'] = [
      id,
      rec.v,
      ended ? 1 : 0,
      horizon / 2,
      def.missed,
      def.missedAfterMs,
      ...ticks,
    ];
    // { 1 done | 0 stale, ticks added, Redis now }
    const x = (
      acks
        ? await this.confirm('schedule_make_ticks', args, acks)
        : await this.ctx.run('schedule_make_ticks', args)
    ) as number[];
    return x[1]!;
  }

  /** Script `name` then WAIT (replica-acks.ts): its reply once enough replicas confirmed. */
  private async confirm<N extends 'schedule_get' | 'schedule_make_ticks'>(
    name: N,
    args: ScriptArgs[N],
    call: AckCall,
  ): Promise<unknown> {
    this.acks ??= new ReplicaAcks(this.ctx);
    const acked = await this.acks.run(name, this.ctx.scriptKeys.of(name), args, call);
    return confirmed(acked, call, this.ctx.options);
  }

  private acksCall(id: string): AckCall {
    return {
      context: `queue ${this.ctx.name}: upsertSchedule(${id})`,
      again:
        'Upsert it again with the same schedule id: the same schedule again adds no duplicate tick.',
    };
  }

  /** Called by clean() with the schedules due for their next ticks; one failing skips only itself. */
  async topUpDue(ids: readonly string[]): Promise<number> {
    const made = await Promise.all(
      ids.map((id) =>
        this.topUp(id).catch((e: unknown) => {
          this.ctx.options.logger?.warn(
            `queue ${this.ctx.name}: schedule ${id}: could not make its next ticks: ${errorMessage(e)}`,
          );
          return 0;
        }),
      ),
    );
    return made.reduce((a, b) => a + b, 0);
  }

  private async read(id: string, offset: number, limit: number): Promise<ScheduleInfo<T>[]> {
    // { Redis now, then per schedule: id, record, payload, latest tick fired ('' none), ticks
    // made whose jobs wait }
    const r = (await this.ctx.run('schedule_get', [id, offset, limit, 1], {
      buffers: true,
    })) as Reply;
    const now = num(r[0]);
    const out: ScheduleInfo<T>[] = [];
    for (let i = 1; i + 4 < r.length; i += 5) {
      const fired = str(r[i + 3]);
      const lastFireAt = fired === '' ? null : Number(fired);
      const waiting = str(r[i + 4]);
      const ticks = waiting === '' ? [] : waiting.split(',').map(Number);
      const rec = parseRecord(str(r[i + 1]));
      out.push(this.info(str(r[i]), rec, r[i + 2] as Raw, now, lastFireAt, ticks));
    }
    return out;
  }

  /**
   * `lastFireAt`: the latest tick that fired (tick_fired in placement.lua), null: none yet;
   * `waiting`: the ticks made whose jobs wait to fire.
   */
  private info(
    id: string,
    rec: StoredRecord,
    payload: Raw,
    now: number,
    lastFireAt: number | null,
    waiting: readonly number[],
  ): ScheduleInfo<T> {
    const def = JSON.parse(rec.d) as StoredDef;
    const spec = (
      def.every !== undefined ? { every: def.every } : { cron: def.cron!, tz: def.tz }
    ) as ScheduleSpec;
    if (def.tz === undefined) delete spec.tz;
    if (def.startAt !== undefined) spec.startAt = def.startAt;
    if (def.endAt !== undefined) spec.endAt = def.endAt;
    if (def.limit !== undefined) spec.limit = def.limit;
    spec.missed = def.missed;
    spec.missedAfterMs = def.missedAfterMs;
    const meta = parseMeta(rec.j ?? '');
    const template = { data: undefined } as ScheduleTemplate<T>;
    if (meta.n !== undefined) template.name = meta.n;
    if (meta.p !== undefined) template.priority = meta.p;
    if (meta.m !== undefined) template.maxAttempts = meta.m;
    if (meta.b !== undefined) template.backoff = meta.b;
    if (meta.g !== undefined) template.group = meta.g;
    if (rec.j && (JSON.parse(rec.j) as { w?: unknown }).w !== undefined) {
      template.skipIfRunning = true;
    }
    const info: ScheduleInfo<T> = {
      id,
      spec,
      template,
      nextFireAt: null,
      // (Not the ticks of rec.m whose time came: they may not have fired, or been dropped.)
      lastFireAt: lastFireAt ?? rec.p ?? null,
      ticks: rec.c,
      ended: rec.e === 1,
    };
    for (const t of waiting) {
      if (t > now) info.nextFireAt = Math.min(info.nextFireAt ?? t, t);
    }
    // None waits (a drain or cancel removed them): the first tick the schedule makes next.
    if (info.nextFireAt === null && !info.ended) {
      const [next] = nextTicks(def, { ...rec, t: Math.max(rec.t ?? now, now) }, now, 0).ticks;
      info.nextFireAt = next ?? null;
    }
    try {
      template.data = decode<T>(this.ctx.options, payload);
    } catch (e) {
      info.decodeError = errorMessage(e);
    }
    return info;
  }
}
