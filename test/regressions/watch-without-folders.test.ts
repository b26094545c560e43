import { makeKernel } from '../helpers/kernel-fixture.js';

// A kernel with no skill folders hung forever in watch(): chokidar never says 'ready' for an
// empty list of paths, and the bench host waited on it.
describe('regression: watching with nothing to watch', () => {
  it('resolves kernel.watch() when no pack or skill folders were loaded', async () => {
    const fx = makeKernel();
    try {
      await expect(fx.kernel.watch()).resolves.toBeUndefined();
    } finally {
      await fx.close();
    }
  });
});
