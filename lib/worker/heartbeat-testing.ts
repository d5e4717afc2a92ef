// Tests' handles on the process's shared heartbeat thread (heartbeat-thread.ts).
import { script } from '../scripts/assemble.js';
import { heartbeatThread } from './heartbeat-thread.js';

/** Tests: the shared thread's state (threads alive, workers served, connections open). */
export function heartbeatThreadStats(): { threads: number; workers: number; connections: number } {
  return heartbeatThread(script('heartbeat').lua).stats();
}

/** Tests: how many times the shared thread was started in this process. */
export function heartbeatThreadsStarted(): number {
  return heartbeatThread(script('heartbeat').lua).spawned;
}

/** Tests: end the shared thread as a crash would; resolves once it has exited. */
export async function killHeartbeatThread(): Promise<void> {
  await heartbeatThread(script('heartbeat').lua).kill();
}

/** Tests: hold the shared thread's start until `until` resolves. */
export function holdHeartbeatThread(until: Promise<void>): void {
  heartbeatThread(script('heartbeat').lua).hold(until);
}
