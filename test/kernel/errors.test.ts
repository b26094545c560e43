import { MemoError, isMemoError, toErrorInfo, ErrorCodes } from '../../kernel/errors.js';

describe('MemoError', () => {
  it('is recognised by its code, not by its class', () => {
    const foreign = { code: 'NOT_FOUND', message: 'no such file: a.txt' };
    expect(isMemoError(foreign)).toBe(true);
    expect(isMemoError({ code: 'NOPE', message: 'x' })).toBe(false);
    expect(isMemoError(new Error('plain'))).toBe(false);
  });

  it('serialises code, message, plugin, tool and details', () => {
    const err = new MemoError('RATE_LIMITED', 'wait 3 s', { plugin: 'fs-tools', tool: 'read_file', details: { retryAfterSeconds: 3 } });
    expect(toErrorInfo(err)).toEqual({ code: 'RATE_LIMITED', message: 'wait 3 s', plugin: 'fs-tools', tool: 'read_file', details: { retryAfterSeconds: 3 } });
  });

  it('has the fifteen stable codes of the design and APPROVAL_EXPIRED (seed 003: an expiry is not a denial)', () => {
    expect(ErrorCodes).toHaveLength(16);
    expect(ErrorCodes).toContain('APPROVAL_EXPIRED');
  });
});
