// A method decorator helper: appends a value to an array of metadata on the method, so one method
// may carry the same decorator several times (e.g. @OnWorkerEvent('completed') and ('failed')).
import 'reflect-metadata';

/** Appends `value` to the array stored under `key` on the decorated method. */
export function appendMethodMetadata(key: string, value: string, method: unknown): void {
  if (typeof method !== 'function') return;
  const previous = (Reflect.getMetadata(key, method) as string[] | undefined) ?? [];
  Reflect.defineMetadata(key, [...previous, value], method);
}
