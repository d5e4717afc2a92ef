/**
 * The groups of the reference model (test/support/model/model.ts): each group's pending jobs in
 * order, the round robin of ready groups with its turns, running counts, per-group concurrency,
 * pause, the listing — kept as lib/scripts/lib/groups.lua and the grouped branch of lease_jobs
 * (lib/scripts/lib/group_leasing.lua) keep them, step for step, so the keys can be compared entry for
 * entry. Rate limits are not modelled (they depend on Redis time: see the integration tests).
 */

/** Ready scores: priority·SPAN + TURNS + turn (lib/scripts/lib/groups.lua). */
export const SPAN = 1e15;
export const TURNS = 1e5;

export interface Waiting {
  seq: string;
  prio: number;
  /** Its place in line: its seq, or a fresh seq counter value when put at the back. */
  place: number;
}

/** What a lease call knows of the groups of one round (group_load). */
interface Loaded {
  running: number;
  room: number;
  room0: number;
}

/** One grouped lease call's state (group_lease_start). */
export interface GroupLease {
  on: boolean;
  st: Map<string, Loaded>;
  /** Jobs taken from groups: seq -> its group and place. */
  sel: Map<string, { g: string; w: Waiting }>;
  /** Lowest ungrouped list that may hold an entry. */
  ug: number;
}

const order = (a: Waiting, b: Waiting) => a.prio - b.prio || a.place - b.place;

export class Groups {
  readonly pending = new Map<string, Waiting[]>();
  /** member ('' = the ungrouped lists) -> score */
  readonly ready = new Map<string, number>();
  turn = 0;
  readonly running = new Map<string, number>();
  readonly listed = new Set<string>();
  readonly conc = new Map<string, number>();
  readonly paused = new Set<string>();
  /** Grouped pending jobs per priority. */
  readonly counts = new Map<number, number>();

  clone(): Groups {
    const c = new Groups();
    for (const [g, w] of this.pending)
      c.pending.set(
        g,
        w.map((x) => ({ ...x })),
      );
    for (const [k, v] of this.ready) c.ready.set(k, v);
    c.turn = this.turn;
    for (const [k, v] of this.running) c.running.set(k, v);
    for (const g of this.listed) c.listed.add(g);
    for (const [k, v] of this.conc) c.conc.set(k, v);
    for (const g of this.paused) c.paused.add(g);
    for (const [k, v] of this.counts) c.counts.set(k, v);
    return c;
  }

  private count(p: number, n: number): void {
    const v = (this.counts.get(p) ?? 0) + n;
    if (v <= 0) this.counts.delete(p);
    else this.counts.set(p, v);
  }

  private room(g: string): number {
    const c = this.conc.get(g);
    return c === undefined ? 1e9 : c - (this.running.get(g) ?? 0);
  }

  /** group_refresh */
  refresh(g: string): boolean {
    const head = this.pending.get(g)?.[0];
    const score = this.ready.get(g);
    if (!head || this.paused.has(g) || this.room(g) <= 0) {
      this.ready.delete(g);
      return false;
    }
    if (score === undefined) this.ready.set(g, head.prio * SPAN + TURNS + ++this.turn);
    else if (Math.floor(score / SPAN) !== head.prio)
      this.ready.set(g, head.prio * SPAN + (score % SPAN));
    return true;
  }

  /** group_tidy */
  tidy(g: string): void {
    if (!this.pending.has(g) && (this.running.get(g) ?? 0) <= 0 && !this.paused.has(g)) {
      this.listed.delete(g);
      this.running.delete(g);
      this.ready.delete(g);
    }
  }

  /** group_place (one job) */
  place(g: string, w: Waiting): void {
    const list = this.pending.get(g) ?? [];
    list.push(w);
    list.sort(order);
    this.pending.set(g, list);
    this.count(w.prio, 1);
    this.listed.add(g);
    this.refresh(g);
  }

  /** group_push: the grouped jobs of one add script, group by group in first-seen order. */
  push(jobs: Array<{ g: string; w: Waiting }>): void {
    const byGroup = new Map<string, Waiting[]>();
    for (const { g, w } of jobs) byGroup.set(g, [...(byGroup.get(g) ?? []), w]);
    for (const [g, ws] of byGroup) {
      const list = this.pending.get(g) ?? [];
      list.push(...ws);
      list.sort(order);
      this.pending.set(g, list);
      for (const w of ws) this.count(w.prio, 1);
      this.listed.add(g);
      this.refresh(g);
    }
  }

  /** group_take: out of its group's pending jobs; true when it was there. */
  take(g: string, seq: string): boolean {
    const list = this.pending.get(g);
    const i = list?.findIndex((w) => w.seq === seq) ?? -1;
    if (!list || i < 0) return false;
    this.count(list[i]!.prio, -1);
    list.splice(i, 1);
    if (list.length === 0) this.pending.delete(g);
    return true;
  }

  /** group_runs_ended */
  runsEnded(groups: string[]): void {
    const n = new Map<string, number>();
    for (const g of groups) n.set(g, (n.get(g) ?? 0) + 1);
    for (const [g, k] of n) {
      const left = (this.running.get(g) ?? 0) - k;
      if (left > 0) this.running.set(g, left);
      else this.running.delete(g);
    }
    for (const g of n.keys()) {
      if (!this.ready.has(g)) {
        if (!this.refresh(g)) this.tidy(g);
      } else if (!this.running.has(g)) this.tidy(g); // idle now, maybe nothing left: forgotten
    }
  }

  /** The ready members in lease order: score, then member bytes. */
  private inOrder(): Array<[string, number]> {
    return [...this.ready].sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0));
  }

  /** group_lease_start: `lists` are the ungrouped pending lists (tombstones included). */
  leaseStart(lists: string[][]): GroupLease | undefined {
    if (this.ready.size === 0) return undefined;
    const gl: GroupLease = { on: false, st: new Map(), sel: new Map(), ug: 10 };
    const us = this.ready.get('');
    const n = this.ready.size - (us === undefined ? 0 : 1);
    const first = lists.findIndex((l) => l.length > 0);
    if (n > 0 && first >= 0) {
      gl.ug = first;
      if (us === undefined) this.ready.set('', first * SPAN + TURNS + ++this.turn);
      else if (Math.floor(us / SPAN) !== first) this.ready.set('', first * SPAN + (us % SPAN));
    } else if (us !== undefined) this.ready.delete('');
    gl.on = n > 0;
    return gl;
  }

  /** group_pop_ungrouped */
  private popUngrouped(gl: GroupLease, lists: string[][]): [string, number, number | null] | null {
    for (let p = gl.ug; p <= 9; p++) {
      const seq = lists[p]!.shift();
      if (seq === undefined) continue;
      for (let q = p; q <= 9; q++) {
        if (lists[q]!.length > 0) {
          gl.ug = q;
          return [seq, p, q];
        }
      }
      gl.ug = 10;
      return [seq, p, null];
    }
    gl.ug = 10;
    return null;
  }

  /** group_pop: up to `need` jobs round robin; appends [seq, prio] to `popped`. */
  pop(gl: GroupLease, need: number, lists: string[][], popped: Array<[string, number]>): void {
    while (need > 0) {
      const head = this.inOrder().slice(0, need);
      if (head.length === 0) return;
      const level = Math.floor(head[0]![1] / SPAN);
      const round = head.filter(([, s]) => s < (level + 1) * SPAN);
      for (const [g] of round) {
        if (g !== '' && !gl.st.has(g)) {
          const running = this.running.get(g) ?? 0;
          const c = this.conc.get(g);
          const room = c === undefined ? 1e9 : Math.max(0, c - running);
          gl.st.set(g, { running, room, room0: room });
        } else if (g === '' && !gl.st.has(g)) gl.st.set(g, { running: 0, room: 1e9, room0: 1e9 });
      }
      const turn = this.turn;
      this.turn += round.length;
      const zadd: Array<[string, number]> = [];
      const zrem: string[] = [];
      round.forEach(([g, score], k) => {
        const i = k + 1;
        const st = gl.st.get(g)!;
        let seq: string | null = null;
        let p = 0;
        let nxt: number | null = null;
        let keep: number | null = null;
        if (st.room <= 0) {
          // (a rate limit's hold is not modelled)
        } else if (g === '') {
          const r = this.popUngrouped(gl, lists);
          if (r) [seq, p, nxt] = r;
        } else {
          const list = this.pending.get(g);
          const w = list?.[0];
          if (!w) {
            if (st.room === st.room0) this.tidy(g);
          } else if (w.prio > level) {
            keep = w.prio * SPAN + (score % SPAN);
          } else {
            list!.shift();
            if (list!.length === 0) this.pending.delete(g);
            seq = w.seq;
            p = w.prio;
            gl.sel.set(seq, { g, w });
            nxt = p;
          }
        }
        if (seq !== null) {
          popped.push([seq, p]);
          st.room -= 1;
          need -= 1;
          if (nxt !== null && st.room > 0) keep = nxt * SPAN + TURNS + turn + i;
        }
        if (keep !== null) zadd.push([g, keep]);
        else zrem.push(g);
      });
      for (const g of zrem) this.ready.delete(g);
      for (const [g, s] of zadd) this.ready.set(g, s);
    }
  }

  /** group_put_back of a job popped at position `i` (1-based); false for an ungrouped one. */
  putBack(gl: GroupLease | undefined, seq: string, i: number): boolean {
    const s = gl?.sel.get(seq);
    if (!s) return false;
    const list = this.pending.get(s.g) ?? [];
    list.push(s.w);
    list.sort(order);
    this.pending.set(s.g, list);
    gl!.sel.delete(seq);
    gl!.st.get(s.g)!.room += 1;
    if (this.refresh(s.g)) this.ready.set(s.g, s.w.prio * SPAN + i);
    return true;
  }

  /** group_commit: the jobs leased from groups run. */
  commit(gl: GroupLease, seqs: string[]): void {
    const taken = new Map<string, number>();
    for (const seq of seqs) {
      const s = gl.sel.get(seq);
      if (!s) continue;
      taken.set(s.g, (taken.get(s.g) ?? 0) + 1);
      this.count(s.w.prio, -1);
    }
    for (const [g, n] of taken) this.running.set(g, gl.st.get(g)!.running + n);
  }

  // ---- administration (group_admin.lua)

  setConcurrency(g: string, n: number | null): void {
    if (n === null) this.conc.delete(g);
    else this.conc.set(g, n);
    this.refresh(g);
  }

  pause(g: string): void {
    this.paused.add(g);
    this.ready.delete(g);
    this.listed.add(g);
  }

  resume(g: string): void {
    this.paused.delete(g);
    this.refresh(g);
    this.tidy(g);
  }
}
