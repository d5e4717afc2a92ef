/** The public types of the core, by subject. Types only: this folder imports nothing at run time. */
export type * from './job.js';
export type * from './queue.js';
export type * from './hooks.js';
export type * from './schedules.js';
export type * from './flow-control.js';
export type * from './worker.js';
export type * from './history.js';
export type * from './sandbox.js';
export type * from './groups.js';
export type * from './flows.js';
