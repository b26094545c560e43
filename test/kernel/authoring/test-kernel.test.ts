/**
 * memo-kernel/testing's createTestKernel, as a pack author's test uses it: the fixture pack loaded
 * from its folder, calls through the real pipeline, the kernel's own rate limits unless the test
 * turns them off.
 */
import * as path from 'node:path';
import { createTestKernel, NO_RATE_LIMITS } from '../../../kernel/testing.js';

const ECHO_TOOLS = path.resolve('test/fixtures/packs/echo-tools');

describe('createTestKernel', () => {
  it("keeps the kernel's rate limits by default: the same call repeated at once is RATE_LIMITED", async () => {
    const t = await createTestKernel({ packs: [ECHO_TOOLS] });
    try {
      expect((await t.call('echo', { text: 'a' })).ok).toBe(true);
      const again = await t.call('echo', { text: 'a' });
      expect(!again.ok && again.error.code).toBe('RATE_LIMITED');
    } finally {
      await t.close();
    }
  });

  it('runs every repeated call with rateLimits: NO_RATE_LIMITS', async () => {
    const t = await createTestKernel({ packs: [ECHO_TOOLS], rateLimits: NO_RATE_LIMITS });
    try {
      const results = [];
      for (let i = 0; i < 40; i++) results.push(await t.call('echo', { text: 'a' }));
      expect(results.filter((r) => !r.ok)).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
