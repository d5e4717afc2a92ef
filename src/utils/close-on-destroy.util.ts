/**
 * Nest destroys an application's modules in turn, each one's providers before what they depend
 * on (its module's providers by dependency level, then the modules it imports; global modules
 * last), and calls every `onModuleDestroy` before any `beforeApplicationShutdown`. A worker that
 * drained only there ran its jobs — and leased new ones — after the services its processor uses
 * (a database client, a Redis service) had closed in their `onModuleDestroy`: its jobs failed.
 * So each processor instance gets an `onModuleDestroy` of its own that first runs its closer
 * (the registrar's: every worker stops at once, this one's drain awaited), then the class' own
 * hook, if any: the worker has stopped before anything the processor depends on is destroyed.
 */

/** The closer of each instance: of the one application whose worker runs it now. */
const closers = new WeakMap<object, () => Promise<unknown>>();
/** Instances given the hook (once: a later application's closer is looked up at call time). */
const hooked = new WeakSet<object>();

/**
 * Run `close` when Nest destroys `instance` (then its own onModuleDestroy). False, nothing done,
 * when another live application's worker has it (one instance provided to two apps by
 * `useValue`): that app's hook is its; this one drains in beforeApplicationShutdown.
 */
export function closeOnDestroy(instance: object, close: () => Promise<unknown>): boolean {
  if (closers.has(instance)) return false;
  closers.set(instance, close);
  if (hooked.has(instance)) return true;
  const own = (instance as { onModuleDestroy?: unknown }).onModuleDestroy;
  try {
    Object.defineProperty(instance, 'onModuleDestroy', {
      configurable: true,
      writable: true,
      enumerable: false,
      async value(this: unknown, ...args: unknown[]): Promise<unknown> {
        const closer = closers.get(instance);
        closers.delete(instance);
        await closer?.();
        return typeof own === 'function'
          ? (own as (...a: unknown[]) => unknown).apply(this, args)
          : undefined;
      },
    });
    hooked.add(instance);
  } catch {
    // A frozen instance (useValue: Object.freeze(…)): its worker drains in the module's
    // beforeApplicationShutdown, as before.
    closers.delete(instance);
    return false;
  }
  return true;
}

/** Forget `close` for `instance` (its application closed another way, or failed to start). */
export function forgetCloser(instance: object, close: () => Promise<unknown>): void {
  if (closers.get(instance) === close) closers.delete(instance);
}
