/** The group steps of test/integration/model/model.test.ts (groups: test/support/model/groups.ts). */
import { Checked } from './commands.js';
import type { Real } from './snapshot.js';
import type { Model } from './model.js';

/**
 * A group's own concurrency (null: none), pause or resume: then every later lease must keep the
 * limit (checked in tookAsModelSays) and the round robin (the keys, entry for entry).
 */
export class GroupAdmin extends Checked {
  constructor(
    readonly group: string,
    readonly action: 'conc' | 'pause' | 'resume',
    readonly n: number | null,
  ) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    if (this.action === 'conc') {
      await r.q.setGroupConcurrency(this.group, this.n);
      m.groups.setConcurrency(this.group, this.n);
    } else if (this.action === 'pause') {
      await r.q.pauseGroup(this.group);
      m.groups.pause(this.group);
    } else {
      await r.q.resumeGroup(this.group);
      m.groups.resume(this.group);
    }
    r.note(`group: ${this.action}`);
  }
  toString(): string {
    return `group(${this.group}, ${this.action}${this.action === 'conc' ? ` ${this.n}` : ''})`;
  }
}
