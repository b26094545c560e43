import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';
import { AuditLog } from '../../../kernel/audit/audit-log.js';
import type { AuditRecord } from '../../../kernel/audit/audit-record.js';
import { tempDir } from '../../helpers/kernel-fixture.js';

export function record(i: number, extra: Partial<AuditRecord> = {}): AuditRecord {
  return {
    ts: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    id: `call-${i}`,
    caller: { kind: 'agent' },
    tool: i % 2 ? 'read_file' : 'write_file',
    pack: 'fs-tools',
    args: { path: `f${i}.txt` },
    decision: 'auto',
    outcome: 'ok',
    summary: `call ${i}`,
    durationMs: 1,
    ...extra,
  };
}

const made: string[] = [];

/** A temp folder removed by `removeTempDirs()` (call it in afterEach). */
export function auditTempDir(): string {
  const dir = tempDir('memo-audit-');
  made.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/** A log of `n` entries in a fresh temp data folder (key, head and lock beside it). */
export function writeLog(n: number, dir = auditTempDir()): string {
  const file = path.join(dir, 'agent-audit.jsonl');
  const log = new AuditLog(file);
  log.open();
  for (let i = 1; i <= n; i++) log.append(record(i));
  log.close();
  return file;
}

export const lines = (file: string): string[] => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
export const writeLines = (file: string, ls: string[]): void => fs.writeFileSync(file, ls.map((l) => l + '\n').join(''));

/**
 * Child processes cannot run the TypeScript sources (jest transpiles them in-process, and Node 20
 * has no type stripping), and `dist/` may be stale. So each test run transpiles the audit modules
 * from source into its temp folder (ts.transpileModule: no type check, a few ms per file) and the
 * children import that copy: they always run the code under test. The copy's node_modules is a
 * link to the checkout's, for fs-ext.
 */
export function compileAuditModules(dir: string): string {
  const src = path.resolve('kernel/audit');
  const out = path.join(dir, 'audit-js');
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}\n');
  for (const name of [
    'audit-chain.ts',
    'audit-lock.ts',
    'audit-verify.ts',
    'audit-record.ts',
    'audit-tail.ts',
    'audit-search.ts',
    'audit-file.ts',
    'audit-log.ts',
  ]) {
    const text = fs.readFileSync(path.join(src, name), 'utf8');
    const js = ts.transpileModule(text, {
      fileName: name,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, experimentalDecorators: true },
    }).outputText;
    fs.writeFileSync(path.join(out, name.replace(/\.ts$/, '.js')), js);
  }
  // The one module outside kernel/audit the trail imports (its refusals are MemoErrors), where the copy expects it.
  const errors = ts.transpileModule(fs.readFileSync(path.resolve('kernel/errors.ts'), 'utf8'), {
    fileName: 'errors.ts',
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  fs.writeFileSync(path.join(dir, 'errors.js'), errors);
  if (!fs.existsSync(path.join(dir, 'node_modules'))) fs.symlinkSync(path.resolve('node_modules'), path.join(dir, 'node_modules'), 'dir');
  return path.join(out, 'audit-log.js');
}
