import { makeKernel } from '../helpers/kernel-fixture.js';

describe('an audit line that cannot be written', () => {
  it('still resolves the call and reports the hole to the logger, naming the tool', async () => {
    const fx = makeKernel();
    try {
      fx.kernel.audit.append = () => {
        throw new Error('the audit lock was held for over 10 s');
      };
      const r = await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'x' }, caller: { kind: 'agent' } });
      expect(r.ok).toBe(true);
      expect(fx.logger.lines).toContainEqual({
        level: 'error',
        message: expect.stringMatching(/audit line of echo_safe .* could not be written: the audit lock was held/),
      });
    } finally {
      await fx.close();
    }
  });
});
