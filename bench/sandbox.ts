import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { osSandboxStatus } from '../kernel/sandbox/os-sandbox.js';
import { runProcess, type RunOptions } from '../kernel/sandbox/process-runner.js';
import { percentile } from './stats.js';

/**
 * What the OS sandbox adds to one command, same machine, same run, interleaved: the command as
 * run_command runs it (`/bin/bash -c CMD` through runProcess) in bubblewrap (network off; and with
 * network allowed, which adds the proxy and the bridge), against the same runProcess without the
 * sandbox (its PID-namespace containment, as a judged-only run gets) and a bare spawn.
 */
export async function benchSandbox(rounds = Number(process.env.BENCH_SANDBOX_ROUNDS ?? 100)): Promise<void> {
  const status = await osSandboxStatus();
  console.log('\nOS sandbox: one command, bash -c "echo hi" (median and p90 of ' + rounds + ' each, interleaved)');
  if (!status.available) {
    console.log(`  skipped: ${status.reason}`);
    return;
  }
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-sandbox-'));
  const base = (extra: Partial<RunOptions>): RunOptions => ({ cwd, signal: new AbortController().signal, timeoutMs: 60_000, maxOutputBytes: 65_536, ...extra });
  const argv = ['/bin/bash', '-c', 'echo hi'];
  const bare = () =>
    new Promise<void>((resolve, reject) => {
      const c = spawn(argv[0]!, argv.slice(1), { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
      c.stdout.resume();
      c.on('error', reject);
      c.on('close', () => resolve());
    });
  const cases: [string, () => Promise<unknown>][] = [
    ['bare spawn', bare],
    ['runProcess, no sandbox (judged only)', () => runProcess(argv, base({ sandbox: false }))],
    ['runProcess in the sandbox, network off', () => runProcess(argv, base({}))],
    ['runProcess in the sandbox, network allowed', () => runProcess(argv, base({ sandbox: { writable: [cwd], network: { domains: 'any' } } }))],
  ];
  const samples = cases.map(() => [] as number[]);
  for (const [, fn] of cases) await fn(); // warm-up
  for (let i = 0; i < rounds; i++) {
    for (let c = 0; c < cases.length; c++) {
      const t = performance.now();
      await cases[c]![1]();
      samples[c]!.push(performance.now() - t);
    }
  }
  fs.rmSync(cwd, { recursive: true, force: true });
  const med = samples.map((s) =>
    percentile(
      [...s].sort((a, b) => a - b),
      50,
    ),
  );
  const p90 = samples.map((s) =>
    percentile(
      [...s].sort((a, b) => a - b),
      90,
    ),
  );
  const unsandboxed = med[1]!;
  console.log(`${'case'.padEnd(46)} ${'p50 ms'.padStart(8)} ${'p90 ms'.padStart(8)} ${'vs unsandboxed'.padStart(16)} ${'added ms'.padStart(9)}`);
  cases.forEach(([name], c) => {
    console.log(
      `${name.padEnd(46)} ${med[c]!.toFixed(2).padStart(8)} ${p90[c]!.toFixed(2).padStart(8)} ${`${(med[c]! / unsandboxed).toFixed(2)}x`.padStart(16)} ${(med[c]! - unsandboxed).toFixed(2).padStart(9)}`,
    );
  });
  console.log(`goal: under 30 ms added per command; process limit: ${status.processLimit.kind}`);
}
