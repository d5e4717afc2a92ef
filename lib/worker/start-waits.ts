// What an unfinished Worker.start() waits for: a start that times out says which step was slow.

/**
 * A step of `Worker.start()`: the queue's check of Redis (version, limits), the sandbox loading
 * its module, the worker's registration, its first heartbeat.
 */
export type WorkerStartWait = 'redis check' | 'sandbox' | 'registration' | 'first heartbeat';

export class StartWaits {
  private readonly waits = new Set<WorkerStartWait>();

  /** `p`, counted as `what` until it settles. */
  on<X>(what: WorkerStartWait, p: Promise<X>): Promise<X> {
    this.waits.add(what);
    const done = () => void this.waits.delete(what);
    p.then(done, done);
    return p;
  }

  /** The steps waited for now, in the order they began. */
  list(): WorkerStartWait[] {
    return [...this.waits];
  }

  clear(): void {
    this.waits.clear();
  }
}
