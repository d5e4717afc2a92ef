// Validation of the schedules declared with registerQueue(): the core's own checks
// (prepareSchedule) on each one, plus the Nest-side ones (keys, duplicate ids, pruneSchedules).
import { errorMessage, WorkQueueError } from '../../lib/internal.js';
import type { ResolvedQueueOptions } from '../../lib/internal.js';
import { prepareSchedule } from '../../lib/internal.js';
import type { CronSpec, EverySpec, ScheduleSpec, ScheduleTemplate } from '../../lib/internal.js';
import type { WorkQueueScheduleDeclaration } from '../interfaces/register-queue-options.interface.js';
import * as msg from '../work-queue.messages.js';
import { isObject, type Bag } from './validate-bag.util.js';

// Records (not arrays) so that the compiler notices a key added to the core's types.
const SPEC_KEYS: Record<keyof EverySpec | keyof CronSpec, true> = {
  every: true,
  cron: true,
  tz: true,
  startAt: true,
  endAt: true,
  limit: true,
  missed: true,
  missedAfterMs: true,
};
const TEMPLATE_KEYS: Record<keyof ScheduleTemplate, true> = {
  data: true,
  name: true,
  priority: true,
  maxAttempts: true,
  backoff: true,
  skipIfRunning: true,
  group: true,
};

/** A declaration split into the arguments of `queue.upsertSchedule(id, spec, template)`. */
export interface SplitSchedule {
  id: string;
  spec: ScheduleSpec;
  template: ScheduleTemplate;
}

/** `{ id, ...spec, ...template }` → `{ id, spec, template }`; other keys are left out. */
export function splitSchedule(declaration: WorkQueueScheduleDeclaration): SplitSchedule {
  const d = declaration as unknown as Bag;
  const spec: Bag = {};
  const template: Bag = {};
  for (const [k, v] of Object.entries(d)) {
    if (k in SPEC_KEYS) {
      if (v !== undefined) spec[k] = v;
    } else if (k in TEMPLATE_KEYS && (v !== undefined || k === 'data')) {
      template[k] = v;
    }
  }
  return {
    id: declaration.id,
    spec: spec as unknown as ScheduleSpec,
    template: template as unknown as ScheduleTemplate,
  };
}

/**
 * Every problem with the `schedules` and `pruneSchedules` of one registration, each declaration
 * checked by the core against the queue's options (as `upsertSchedule` would, nothing written).
 */
export function scheduleProblems(
  schedules: unknown,
  pruneSchedules: unknown,
  options: ResolvedQueueOptions,
): string[] {
  const problems: string[] = [];
  if (pruneSchedules !== undefined && typeof pruneSchedules !== 'boolean') {
    problems.push(msg.badPruneSchedules(msg.show(pruneSchedules)));
  }
  if (schedules === undefined) return problems;
  if (!Array.isArray(schedules)) {
    problems.push(msg.schedulesNotArray(msg.show(schedules)));
    return problems;
  }
  const seen = new Map<string, number>();
  schedules.forEach((declaration: unknown, i) => {
    if (!isObject(declaration)) {
      problems.push(msg.scheduleNotObject(i, msg.show(declaration)));
      return;
    }
    const at = msg.scheduleAt(i, declaration.id);
    for (const k of Object.keys(declaration)) {
      if (k === 'id' || k in SPEC_KEYS || k in TEMPLATE_KEYS) continue;
      problems.push(`${at}${msg.unknownScheduleKey(k)}`);
    }
    if (typeof declaration.id === 'string') {
      const first = seen.get(declaration.id);
      if (first !== undefined) problems.push(`${at}${msg.duplicateScheduleId(first)}`);
      else seen.set(declaration.id, i);
    }
    const { id, spec, template } = splitSchedule(
      declaration as unknown as WorkQueueScheduleDeclaration,
    );
    try {
      prepareSchedule(options, id, spec, template);
    } catch (e) {
      const found = e instanceof WorkQueueError && e.problems.length > 0;
      for (const p of found ? e.problems : [errorMessage(e)]) {
        // The core speaks of `spec` and `template`; a declaration is flat.
        problems.push(`${at}${p.replace(/^(?:spec|template)(?::\s*|\.)/, '')}`);
      }
    }
  });
  return problems;
}
