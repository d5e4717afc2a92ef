/**
 * Nest destroys an application's modules in turn, each one's providers before what they depend
 * on (its module's providers by dependency level, then the modules it imports; global modules
 * last), and calls every `onModuleDestroy` before any `beforeApplicationShutdown`. A worker that
 * drained only there ran its jobs — and leased new ones — after the services its processor uses
 * (a database client, a Redis service) had closed in their `onModuleDestroy`: its jobs failed.
 * So each processor instance gets an `onModuleDestroy` of its own that first closes (drains) its
 * queue's worker, then calls the class' own hook, if any: the worker has stopped before anything
 * the processor depends on is destroyed.
 */
export function closeOnDestroy(instance: object, close: () => Promise<unknown>): void {
  const own = (instance as { onModuleDestroy?: unknown }).onModuleDestroy;
  try {
    Object.defineProperty(instance, 'onModuleDestroy', {
      configurable: true,
      writable: true,
      enumerable: false,
      async value(this: unknown, ...args: unknown[]): Promise<unknown> {
        await close();
        return typeof own === 'function'
          ? (own as (...a: unknown[]) => unknown).apply(this, args)
          : undefined;
      },
    });
  } catch {
    // A frozen instance (useValue: Object.freeze(…)): its worker drains in the module's
    // beforeApplicationShutdown, as before.
  }
}
