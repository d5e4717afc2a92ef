// A decorated listener method bound to its instance, and calling one so that whatever it throws
// or rejects with is reported, never thrown at the caller.

/** A method of a provider, bound to its instance (an @OnWorkerEvent or @OnQueueEvent method). */
export interface ListenerMethod {
  readonly className: string;
  readonly methodName: string;
  call(...args: unknown[]): unknown;
}

/** Call `m`; a throw or a rejection goes to `onError`, never to the caller. */
export function callListener(
  m: ListenerMethod,
  args: readonly unknown[],
  onError: (error: unknown) => void,
): void {
  try {
    const r = m.call(...args);
    if (typeof r === 'object' && r !== null && typeof (r as Promise<unknown>).then === 'function') {
      (r as Promise<unknown>).then(undefined, onError);
    }
  } catch (e) {
    onError(e);
  }
}
