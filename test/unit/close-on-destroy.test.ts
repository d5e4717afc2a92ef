// closeOnDestroy (src/utils/close-on-destroy.util.ts): a processor instance's onModuleDestroy
// runs its application's closer first, then the class' own hook; one instance shared by two
// applications (useValue) is hooked by one at a time, never chained across them.
import { describe, expect, it } from '@jest/globals';
import { closeOnDestroy, forgetCloser } from '../../src/utils/close-on-destroy.util.js';

describe('closeOnDestroy', () => {
  it("runs the closer, then the instance's own hook; a second app's closer waits its turn", async () => {
    const calls: string[] = [];
    const instance = {
      onModuleDestroy(): void {
        calls.push('own');
      },
    };
    const closer = (name: string) => () => Promise.resolve(void calls.push(name));
    const first = closer('app 1');
    expect(closeOnDestroy(instance, first)).toBe(true);
    // Another live app with the same instance: not hooked (it drains in beforeApplicationShutdown).
    expect(closeOnDestroy(instance, closer('app 2'))).toBe(false);
    await instance.onModuleDestroy();
    expect(calls).toEqual(['app 1', 'own']);
    // App 1 closed: a third app hooks it; app 1's closer does not run again.
    expect(closeOnDestroy(instance, closer('app 3'))).toBe(true);
    await instance.onModuleDestroy();
    expect(calls).toEqual(['app 1', 'own', 'app 3', 'own']);
    // Forgotten (its app stopped another way): only the instance's own hook.
    const fourth = closer('app 4');
    closeOnDestroy(instance, fourth);
    forgetCloser(instance, fourth);
    await instance.onModuleDestroy();
    expect(calls).toEqual(['app 1', 'own', 'app 3', 'own', 'own']);
  });

  it('a frozen instance is left alone', () => {
    expect(closeOnDestroy(Object.freeze({}), () => Promise.resolve())).toBe(false);
  });
});
