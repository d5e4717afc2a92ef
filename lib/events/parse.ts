// Stream entries of the event log into typed events (the entry format: lib/scripts/lib/events.lua).
import type { EventBase, QueueEvent } from './types.js';

/**
 * The events of one entry, in order. An entry holds one or more sections ('e' <kind>, the
 * section's fields, then its jobs: 'i' <id> with the job's own fields, or 'n' <ids separated by
 * spaces>). Kinds this version does not know are left out.
 */
export function parseEntry(eventId: string, fields: readonly string[]): QueueEvent[] {
  const at = Number(eventId.slice(0, eventId.indexOf('-')));
  let kind = '';
  let head: Record<string, string> = {};
  const jobs: Array<{ kind: string; f: Record<string, string> }> = [];
  let job: Record<string, string> | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const f = fields[i]!;
    const v = fields[i + 1]!;
    if (f === 'e') {
      kind = v;
      head = {};
      job = undefined;
    } else if (f === 'i') jobs.push({ kind, f: (job = { ...head, i: v }) });
    else if (f === 'n') {
      for (const id of v.split(' ')) jobs.push({ kind, f: { ...head, i: id } });
      job = undefined;
    } else (job ?? head)[f] = v;
  }
  const out: QueueEvent[] = [];
  for (const j of jobs) {
    const base: EventBase = { id: j.f.i!, eventId, at };
    if (j.f.g !== undefined) base.group = j.f.g;
    const e = toEvent(j.kind, j.f, base);
    if (e) out.push(e);
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
      return { ...base, kind, workerId: f.w ?? '' };
    case 'progress':
      return { ...base, kind, progress: json(f.v ?? '') };
    case 'completed':
      return { ...base, kind, resultStored: f.r === '1' };
    case 'failed':
      return { ...base, kind, attempt: Number(f.a), retried: f.r === '1', error: f.err ?? '' };
    case 'dead':
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
