/**
 * Names every test that took over 30 s, at the end of the run (issue 38: no test over 30 s; jest's
 * own slowTestThreshold only marks whole files). A figure to act on, not an assertion: timings
 * depend on the machine, so nothing fails here.
 */
const LIMIT_MS = 30_000;

export default class SlowTestsReporter {
  slow = [];

  onTestResult(test, result) {
    for (const a of result.testResults) {
      if ((a.duration ?? 0) > LIMIT_MS) this.slow.push({ ms: a.duration, file: test.path.replace(`${process.cwd()}/`, ''), name: a.fullName });
    }
  }

  onRunComplete() {
    if (this.slow.length === 0) {
      process.stderr.write(`No test took over ${LIMIT_MS / 1000} s.\n`);
      return;
    }
    const lines = this.slow.sort((a, b) => b.ms - a.ms).map((t) => `  ${(t.ms / 1000).toFixed(1)} s  ${t.file}  ${t.name}`);
    process.stderr.write(`Tests over ${LIMIT_MS / 1000} s (${this.slow.length}):\n${lines.join('\n')}\n`);
  }
}
