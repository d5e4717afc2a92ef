// Stream entries of the event log into typed events (the entry format: lib/scripts/lib/events.lua).
import type { EventBase, QueueEvent } from './types.js';

/**
 * The events of one entry, in order. An entry holds one or more sections ('e' <kind>, the
 * section's fields, then its jobs: 'i' <id> with the job's own fields, or 'n' <ids separated by
 * spaces>, and maybe trailers: 'tm' with a value per job of the section, 'gs' a JSON array
 * of their groups). Kinds this version does not know are left out.
 */
export function parseEntry(eventId: string, fields: readonly string[]): QueueEvent[] {
  const at = Number(eventId.slice(0, eventId.indexOf('-')));
  let kind = '';
  let head: Record<string, string> = {};
  const jobs: Array<{ kind: string; f: Record<string, string> }> = [];
  let job: Record<string, string> | undefined;
  let section = 0;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const f = fields[i]!;
    const v = fields[i + 1]!;
    if (f === 'e') {
      kind = v;
      head = {};
      job = undefined;
      section = jobs.length;
    } else if (f === 'i') jobs.push({ kind, f: (job = { ...head, i: v }) });
    else if (f === 'n') {
      for (const id of v.split(' ')) jobs.push({ kind, f: { ...head, i: id } });
      job = undefined;
    } else if (f === 'tm') {
      // One value per job of the section, in order (their times: see lib/scripts/lib/times.lua).
      v.split(' ').forEach((t, k) => {
        const j = jobs[section + k];
        if (j) j.f.tm = t;
      });
    } else if (f === 'gs') groupsOf(jobs, section, v);
    else (job ?? head)[f] = v;
  }
  const out: QueueEvent[] = [];
  for (const j of jobs) {
    // The time the script wrote ('T': its Redis time, the job's own), else the entry id's ms
    // (which can be a ms later: Redis stamps the entry when it is appended).
    const base: EventBase = { id: j.f.i!, eventId, at: j.f.T === undefined ? at : Number(j.f.T) };
    if (j.f.g !== undefined) base.group = j.f.g;
    const e = toEvent(j.kind, j.f, base);
    if (e) out.push(e);
  }
  return out;
}

/** A 'gs' trailer: the groups of a section's jobs (from `section` on), in order ('' = none). */
function groupsOf(
  jobs: Array<{ kind: string; f: Record<string, string> }>,
  section: number,
  v: string,
): void {
  const names = json(v);
  if (!Array.isArray(names)) return;
  names.forEach((g: unknown, k) => {
    const j = jobs[section + k];
    if (j && typeof g === 'string' && g !== '') j.f.g = g;
  });
}

/**
 * A job's times as an event carries them: 'ta'/'ts' absolute, or 'tm' ms before the section's
 * time 'T' ('<added>' or '<added>,<started>'; empty when not known).
 */
function times(f: Record<string, string>): { addedAt?: number; startedAt?: number } {
  const out: { addedAt?: number; startedAt?: number } = {};
  const set = (k: 'addedAt' | 'startedAt', ms: number) => {
    if (Number.isFinite(ms) && ms > 0) out[k] = ms;
  };
  if (f.ta !== undefined) set('addedAt', Number(f.ta));
  if (f.ts !== undefined) set('startedAt', Number(f.ts));
  if (f.tm !== undefined && f.T !== undefined) {
    const [a = '', s = ''] = f.tm.split(',');
    if (a !== '') set('addedAt', Number(f.T) - Number(a));
    if (s !== '') set('startedAt', Number(f.T) - Number(s));
  }
  return out;
}

function toEvent(kind: string, f: Record<string, string>, base: EventBase): QueueEvent | undefined {
  switch (kind) {
    case 'added':
    case 'delayed':
    case 'promoted':
    case 'waiting-children':
    case 'cancelled':
    case 'released':
      return { ...base, kind };
    case 'active':
      return { ...base, kind, workerId: f.w ?? '', ...times(f) };
    case 'progress':
      return { ...base, kind, progress: json(f.v ?? '') };
    case 'completed': {
      const e: QueueEvent & { kind: 'completed' } = {
        ...base,
        kind,
        resultStored: f.r === '1',
        ...times(f),
      };
      if (f.w !== undefined) e.workerId = f.w;
      if (f.v !== undefined) e.result = json(f.v);
      if (f.vx !== undefined) e.resultBytes = Number(f.vx);
      return e;
    }
    case 'failed': {
      const e: QueueEvent & { kind: 'failed' } = {
        ...base,
        kind,
        attempt: Number(f.a),
        retried: f.r === '1',
        error: f.err ?? '',
        ...times(f),
      };
      if (f.w !== undefined) e.workerId = f.w;
      return e;
    }
    case 'dead': {
      const e: QueueEvent & { kind: 'dead' } = { ...base, kind, reason: f.why ?? '', ...times(f) };
      if (f.err !== undefined) e.error = f.err;
      return e;
    }
    case 'reclaimed':
      return { ...base, kind, reason: f.why ?? '' };
    default:
      return undefined;
  }
}

function json(s: string): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return s; // written by hand, not JSON: as stored
  }
}
