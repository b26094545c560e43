import { isProviderError, ProviderError } from '../../../kernel/providers/provider.js';

describe('isProviderError', () => {
  it('recognises a provider error from another copy of the kernel module by its name and fields', () => {
    // What a pack built against its own copy of memo-kernel/pack throws: same shape, another class.
    class ProviderErrorCopy extends Error {
      constructor(
        message: string,
        readonly status: number | null,
        readonly retryable: boolean,
      ) {
        super(message);
        this.name = 'ProviderError';
      }
    }
    expect(isProviderError(new ProviderErrorCopy('rate limited', 429, true))).toBe(true);
    expect(isProviderError(new ProviderError('down', null, true))).toBe(true);
  });

  it('refuses errors that only share the name, and everything else', () => {
    expect(isProviderError(Object.assign(new Error('x'), { name: 'ProviderError' }))).toBe(false);
    expect(isProviderError(new Error('plain'))).toBe(false);
    expect(isProviderError({ name: 'ProviderError', message: 'm', status: 'x', retryable: true })).toBe(false);
    expect(isProviderError(null)).toBe(false);
    expect(isProviderError('ProviderError')).toBe(false);
  });
});
