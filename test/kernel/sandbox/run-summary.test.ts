import { runSummary } from '../../../kernel/sandbox/process-runner.js';

describe("a command's summary", () => {
  const base = { exitCode: 0, signal: null, stdout: '', stderr: '', truncated: false } as const;

  it('says how it ended and how many lines it printed on each stream, never what', () => {
    expect(runSummary({ ...base, stdout: 'secret-value\nb\nc\n' })).toBe('exit 0, 3 lines');
    expect(runSummary({ ...base, exitCode: 1, stdout: 'one line without an end', stderr: 'x\ny\n' })).toBe('exit 1, 1 line, 2 lines on stderr');
    expect(runSummary({ ...base, stdout: 'secret-value\n' })).not.toContain('secret');
  });

  it('names the signal of a stopped command, says when nothing was printed, and when output was cut', () => {
    expect(runSummary({ ...base, exitCode: null, signal: 'SIGTERM' })).toBe('SIGTERM, nothing printed');
    expect(runSummary({ ...base, stdout: 'a\n', truncated: true })).toBe('exit 0, 1 line, output cut');
  });
});
