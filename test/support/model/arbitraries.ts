/** The random steps of test/integration/model/model.test.ts. */
import fc from 'fast-check';
import { Add, Cancel, LeaseStep, type Step } from './commands.js';
import {
  Complete,
  CompleteBatch,
  Extend,
  Fail,
  Progress,
  Release,
  type LeasePick,
} from './lease-steps.js';
import { Death } from './death.js';
import { GroupAdmin } from './group-steps.js';
import { Advance, Clean, Repair } from './maintenance.js';
import { AddFlow, type FlowSpec } from './flow-steps.js';
import type { AddSpec } from './model.js';

/** Short times expire within the run (30-80 ms); long ones never do. */
const shortMs = fc.integer({ min: 30, max: 80 });
const LONG_MS = 60_000;
const someMs = fc.oneof(shortMs, fc.constant(LONG_MS));

/** Caller ids from a pool of four, so that re-adds (while alive, after the end) are common. */
const cid = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom('job-a', 'job-b', 'job-c', 'job-d') },
);

const spec: fc.Arbitrary<AddSpec> = fc.record({
  cid,
  // Mostly three priorities, so FIFO within a priority is exercised too.
  priority: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(0, 5, 9) }, fc.nat(9)),
  delayMs: fc.oneof(
    { weight: 6, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: shortMs },
    { weight: 1, arbitrary: fc.constant(LONG_MS) },
  ),
  maxAttempts: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
  retryMs: fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, shortMs),
  // Half the jobs grouped, in three groups (docs/groups.md).
  group: fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: fc.constantFrom('ga', 'gb', 'gc') },
  ),
});

const groupAdmin = fc.oneof(
  fc
    .tuple(fc.constantFrom('ga', 'gb', 'gc'), fc.option(fc.integer({ min: 1, max: 2 })))
    .map(([g, n]) => new GroupAdmin(g, 'conc', n)),
  fc.constantFrom('ga', 'gb').map((g) => new GroupAdmin(g, 'pause', null)),
  fc.constantFrom('ga', 'gb').map((g) => new GroupAdmin(g, 'resume', null)),
);

/** Mostly small; sometimes larger; rarely over 2 000 (two scripts, pipelined). */
const bulk = fc.oneof(
  { weight: 30, arbitrary: fc.array(spec, { minLength: 2, maxLength: 50 }) },
  { weight: 3, arbitrary: fc.array(spec, { minLength: 51, maxLength: 300 }) },
  { weight: 1, arbitrary: fc.array(spec, { minLength: 2001, maxLength: 2100 }) },
);

/** A parent and one to three children in the model's queue (no caller ids: see cid). */
const flow: fc.Arbitrary<FlowSpec> = fc.record({
  parent: spec.map((s) => ({ ...s, cid: undefined })),
  children: fc.array(
    fc.record({
      spec: spec.map((s) => ({ ...s, cid: undefined })),
      policy: fc.constantFrom('f', 'i', 'r' as const),
    }),
    { minLength: 1, maxLength: 3 },
  ),
});

const leasePick: fc.Arbitrary<LeasePick> = fc.record({
  stale: fc.boolean(),
  pick: fc.nat(1000),
});

const lease = fc
  .tuple(fc.integer({ min: 1, max: 20 }), someMs)
  .map(([n, ms]) => new LeaseStep(n, ms));

/** Every step, each listed as often as it should come up. */
export const steps: Array<fc.Arbitrary<Step>> = [
  spec.map((s) => new Add([s])),
  spec.map((s) => new Add([s])),
  bulk.map((specs) => new Add(specs)),
  flow.map((f) => new AddFlow(f)),
  flow.map((f) => new AddFlow(f)),
  lease,
  lease,
  lease,
  leasePick.map((p) => new Complete(p)),
  leasePick.map((p) => new Complete(p)),
  fc
    .tuple(
      fc.array(leasePick, { minLength: 1, maxLength: 5 }),
      fc.boolean(),
      fc.boolean(),
      fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 10 })),
    )
    .map(([picks, sameJob, reversed, next]) => new CompleteBatch(picks, sameJob, reversed, next)),
  fc
    .tuple(leasePick, fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, fc.constant(false)))
    .map(([p, retryable]) => new Fail(p, retryable)),
  leasePick.map((p) => new Release(p)),
  fc.tuple(leasePick, someMs).map(([p, ms]) => new Extend(p, ms)),
  fc.tuple(leasePick, fc.nat(100)).map(([p, v]) => new Progress(p, v / 100)),
  fc
    .tuple(fc.constantFrom('live', 'gone', 'number', 'never' as const), fc.nat(1000))
    .map(([target, pick]) => new Cancel(target, pick)),
  groupAdmin,
  fc.constant(new Clean()),
  fc.constant(new Clean()),
  fc.constant(new Repair()),
  fc.constant(new Advance()),
  fc.constant(new Advance()),
  fc
    .tuple(
      fc.integer({ min: 1, max: 5 }),
      fc.boolean(),
      shortMs,
      fc.constantFrom('none', 'complete', 'extend', 'lease' as const),
    )
    .map(([n, asWorker, ms, last]) => new Death(n, asWorker, ms, last)),
];
