/** Types of flows (`FlowProducer`, docs/flows.md): parents that run once their children ended. */
import type { BackoffOptions, ChildCounts, JobState } from './job.js';
import type { WorkQueueOptions } from './queue.js';

/** What a child's failure (dead-lettered or cancelled) does to its parent. */
export type ChildFailurePolicy = 'fail-parent' | 'ignore' | 'remove';

/**
 * One job of a flow and, in `children`, the jobs it waits for. A node with children is created
 * in state `waiting-children` and becomes pending once every child ended as their `onFailure`
 * says; a node without children is pending (or delayed) at once.
 */
export interface FlowNode<T = unknown> {
  /** The node's queue (any queue under the producer's prefix: created on first use). */
  queue: string;
  data: T;
  /** Job name (a Nest processor routes by it). */
  name?: string;
  /** Caller id. Must be free in its queue: a taken id refuses the whole add. */
  id?: string;
  /** 0 (highest) … 9 (lowest). Default 5. */
  priority?: number;
  /** The job's group (docs/groups.md): leased fairly among groups, under the group's limits. */
  group?: string;
  maxAttempts?: number;
  backoff?: BackoffOptions;
  /** A leaf: run no earlier than this many ms after the add. A parent: after its children ended. */
  delayMs?: number;
  /** On a child: what its failure does to its parent. Default `'fail-parent'`. */
  onFailure?: ChildFailurePolicy;
  children?: ReadonlyArray<FlowNode>;
}

/** A job of an added flow, with the same shape as the tree given. */
export interface FlowJob {
  job: { queue: string; id: string };
  children?: FlowJob[];
}

export interface FlowProducerOptions {
  /** Key prefix of every queue of its flows. Default `wq`. */
  prefix?: string;
  /** Payload encoding of every node. Default `json`. */
  codec?: WorkQueueOptions['codec'];
  /** Largest encoded payload of a node, bytes. Default 512 KiB. */
  maxPayloadBytes?: number;
  /** Longest wait of one Redis call. Default 5 000 ms. */
  commandTimeoutMs?: number;
  /** The event log of the queues (as their `events` option). Default `{ maxLen: 10 000 }`. */
  events?: WorkQueueOptions['events'];
  /**
   * Replicas that must confirm each `add`/`addBulk`/`addBatch` before it resolves (as the queue
   * option: `WAIT` on every node the flow was written to; NOT_REPLICATED when fewer confirm in
   * time). Default 0.
   */
  replicaAcks?: WorkQueueOptions['replicaAcks'];
  /** How long a flow add waits for `replicaAcks` replicas, in ms. Default 1 000. */
  replicaAckTimeoutMs?: WorkQueueOptions['replicaAckTimeoutMs'];
  /** The queues its flows may name; any other is refused as unknown. Default: any valid name. */
  queues?: readonly string[];
  /** Where warnings go. Default `console`; `false` silences them. */
  logger?: WorkQueueOptions['logger'];
}

/** `FlowProducer.addBatch`: the job to run once every job of the batch ended. */
export interface BatchOptions<T = unknown> {
  /** The callback job (no `children`: the batch's jobs are its children). */
  onComplete: Omit<FlowNode<T>, 'children' | 'onFailure'>;
}

/** An added batch: its id (for `getBatch`) and its jobs, in order. */
export interface AddedBatch {
  /** `<callback queue>/<callback job id>`. */
  id: string;
  callback: { queue: string; id: string };
  jobs: Array<{ queue: string; id: string }>;
}

/**
 * `FlowProducer.getBatch`: a batch's children and its callback job's state. Once the callback
 * completed (state 'completed', while its caller id is kept) the counts are no longer kept: 0.
 */
export interface BatchInfo extends ChildCounts {
  id: string;
  /** The callback job's state ('waiting-children' until every job ended). */
  state: JobState;
}
