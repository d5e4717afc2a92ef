/** Poll `check` until it returns a truthy value or the deadline passes (then throw). */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 5_000, intervalMs = 25, what = 'condition' } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
