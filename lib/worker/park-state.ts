// What a worker knows of its parked mark in Redis (K_PARKED, docs/internals/hand-off.md): a
// lease call unparks it, then parks it again if it leased fewer jobs than its free slots
// (`park_below`); a call that adopts or sweeps without a lease unparks it. Calls run in Redis
// in the order sent, but their replies may be read out of order (leases by reference).
export class ParkState {
  /** Calls sent that set the mark. */
  private sent = 0;
  private parked = false;

  /** A call goes out: its number for `answered` (0: a call that leases nothing). */
  send(leases: boolean, unparks: boolean): number {
    if (leases) return ++this.sent;
    if (unparks) {
      this.sent++;
      this.parked = false;
    }
    return 0;
  }

  /** Lease call `n` was answered with `jobs` leased, parking below `parkBelow`. */
  answered(n: number, jobs: number, parkBelow: number): void {
    if (n === this.sent) this.parked = jobs < parkBelow;
  }

  /** Whether the last call may have parked the worker; false after this (it is unparked). */
  unparking(): boolean {
    const parked = this.parked;
    this.parked = false;
    return parked;
  }
}
