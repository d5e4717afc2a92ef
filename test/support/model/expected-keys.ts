/**
 * (b) What the keys of a snapshot (snapshot.ts) must hold: the structural invariants of the
 * README's Guarantees, from the keys alone; and the keys exactly as the model says.
 */
import type { Model } from './model.js';
import { SPAN } from './groups.js';
import type { GroupKeys, Snapshot } from './snapshot.js';

/**
 * (b) the README's guarantee 3, from the keys alone: a job with a payload is in exactly one place (a
 * pending list once, the delayed set, the leased set with a token, or the dead set); a list
 * entry without a payload is a cancelled job's tombstone (allowed); nothing else refers to a
 * job without a payload. Returns the violations (empty when none).
 */
export function invariantViolations(s: Snapshot): string[] {
  const bad: string[] = [];
  const data = new Set(s.data);
  const places = new Map<string, string[]>();
  const at = (id: string, where: string) => places.set(id, [...(places.get(id) ?? []), where]);
  s.lists.forEach((list, p) => list.forEach((id) => at(id, `p${p}`)));
  for (const [g, z] of Object.entries(s.groups.pending))
    for (const id of Object.keys(z)) at(id, `gp:${g}`);
  for (const id of Object.keys(s.delayed)) at(id, 'dl');
  for (const id of Object.keys(s.leased)) at(id, 'ls');
  for (const id of s.dead) at(id, 'dead');
  for (const id of s.completed) at(id, 'cj');
  for (const id of s.waiting) at(id, 'wc');
  for (const id of data) {
    const where = places.get(id) ?? [];
    if (where.length !== 1) bad.push(`job ${id} is in ${where.length} places: ${where.join(',')}`);
    if (id in s.leased !== id in s.tokens) bad.push(`job ${id}: ls and lt disagree`);
  }
  const refs: Array<[string, string[]]> = [
    ['dl', Object.keys(s.delayed)],
    ['ls', Object.keys(s.leased)],
    ['lt', Object.keys(s.tokens)],
    ['dead', s.dead],
    ['wc', s.waiting],
    ['m', s.meta],
    ['pg', Object.keys(s.progress)],
    ['cj', s.completed],
    ['ci', s.info],
    ['ids (value)', Object.values(s.ids).map((v) => v.replace(/^~:/, ''))],
  ];
  for (const [key, ids] of refs)
    for (const id of ids) if (!data.has(id)) bad.push(`${key} refers to ${id}, which has no data`);
  if (s.info.join() !== s.completed.join()) bad.push('ci and cj name different jobs');
  return bad;
}

/** What the keys must hold according to the model (exact, tombstones and order included). */
export function expectedKeys(m: Model): Omit<Snapshot, 'meta'> {
  const kept = [...m.kept.jobs.keys()].sort();
  const e: Omit<Snapshot, 'meta'> = {
    waiting: [...m.jobs.values()]
      .filter((j) => j.state === 'waiting-children')
      .map((j) => j.seq)
      .sort(),
    data: [...m.jobs.keys(), ...kept].sort(),
    lists: m.lists.map((l) => [...l]),
    delayed: {},
    leased: {},
    tokens: {},
    dead: [],
    progress: {},
    ids: Object.fromEntries([...[...m.kept.cids].map(([c, seq]) => [c, `~:${seq}`]), ...m.cids]),
    completed: kept,
    info: kept,
    groups: expectedGroups(m),
  };
  for (const k of m.kept.jobs.values())
    if (k.progress !== undefined) e.progress[k.seq] = JSON.stringify(k.progress);
  for (const j of m.jobs.values()) {
    if (j.state === 'delayed') e.delayed[j.seq] = j.due!;
    if (j.state === 'leased') {
      e.leased[j.seq] = j.deadline!;
      e.tokens[j.seq] = `${j.lease!.token}:${j.lease!.workerId}`;
    }
    if (j.state === 'dead') e.dead.push(j.seq);
    if (j.progress !== undefined) e.progress[j.seq] = JSON.stringify(j.progress);
  }
  e.dead.sort();
  return e;
}

function expectedGroups(m: Model): GroupKeys {
  const g = m.groups;
  const pending: Record<string, Record<string, number>> = {};
  for (const [name, ws] of g.pending)
    pending[name] = Object.fromEntries(ws.map((w) => [w.seq, w.prio * SPAN + w.place]));
  return {
    pending,
    ready: Object.fromEntries(g.ready),
    running: Object.fromEntries(g.running),
    listed: [...g.listed].sort(),
    paused: [...g.paused].sort(),
    counts: Object.fromEntries([...g.counts].map(([p, n]) => [String(p), n])),
  };
}
