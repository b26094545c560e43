/**
 * `memo audit tail|verify|export`: the newest entries, the keyed chain checked, the chain written out
 * as JSONL. With MEMO_DATABASE_URL set they read the chains of every instance in the database (schema
 * memo_audit); without it, `data/agent-audit.jsonl` as before.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import { headPathFor } from '../audit/audit-chain.js';
import { formatVerifyReport, isAuditEvent, readAuditFileTail, verifyAuditFile, type AuditLine } from '../audit/audit-log.js';
import { databaseFromSetting, type DatabaseUrl } from '../storage/database-url.js';
import { instanceId } from '../storage/instance-id.js';
import { print, table, UsageError, type Cli } from './context.js';

/** The shared database, when MEMO_DATABASE_URL names one. */
function database(): DatabaseUrl | null {
  return databaseFromSetting(process.env.MEMO_DATABASE_URL);
}

/** This data folder's instance id (made once, as the kernel would, when the folder exists). */
function thisInstance(dataDir: string): string {
  try {
    return instanceId(dataDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw err;
  }
}

/** Lazily: the PostgreSQL reader (and the pg driver with it) loads only when the URL is set. */
const pgRead = () => import('../audit/pg-audit-read.js');

/** One row of `memo audit tail`: an entry, or a kernel event (gap, torn tail, keyed chain start, an agent CLI's access). */
function auditRow(e: AuditLine): string[] {
  if (isAuditEvent(e) && e.event === 'agent-access') {
    const access = e.access === 'computer' ? 'Computer access (its own tools unseen here)' : 'Vault only';
    return [
      e.ts,
      'agent',
      `(${e.event})`,
      '-',
      '-',
      '-',
      `${e.backend ?? '?'} ${e.version ?? ''}: ${access}, conversation ${e.conversationId ?? '?'}`.slice(0, 60),
    ];
  }
  if (isAuditEvent(e)) {
    const what = [e.seen, e.missing ? `#${e.missing.from}${e.missing.to > e.missing.from ? `-#${e.missing.to}` : ''} missing` : '', e.detail ?? '']
      .filter(Boolean)
      .join('; ');
    return [e.ts, 'kernel', `(${e.event})`, '-', '-', '-', what.replace(/\s+/g, ' ').slice(0, 60)];
  }
  return [
    e.ts,
    e.caller.kind,
    e.tool,
    e.decision,
    e.outcome === 'ok' ? 'ok' : (e.error?.code ?? 'error'),
    String(Math.round(e.durationMs)),
    e.summary.replace(/\s+/g, ' ').slice(0, 60),
  ];
}

export function registerAuditCommands(program: Command, cli: Cli): void {
  const audit = program.command('audit').description("the audit trail (data/agent-audit.jsonl, or each instance's chain in MEMO_DATABASE_URL)");
  audit
    .command('tail')
    .description('show the newest audit entries (with MEMO_DATABASE_URL: of every instance)')
    .option('-n, --lines <n>', 'how many', '20')
    .option('--tool <tool>', 'only this tool')
    .option('--json', 'print one JSON entry per line')
    .action(async (opts: { lines: string; tool?: string; json?: boolean }) => {
      const n = Number(opts.lines);
      if (!Number.isInteger(n) || n < 1) throw new UsageError('-n must be a whole number of at least 1');
      const url = database();
      // Read from the file's end (or the database), without creating or locking anything.
      const entries = url
        ? await (await pgRead()).readAuditDatabaseTail(url, n, opts.tool)
        : readAuditFileTail(path.join(cli.dataDir(), 'agent-audit.jsonl'), n, opts.tool);
      if (opts.json) return void entries.forEach((e) => print(e));
      if (entries.length === 0) return void process.stdout.write('No audit entries.\n');
      const header = ['TIME', 'CALLER', 'TOOL', 'DECISION', 'OUTCOME', 'MS', 'SUMMARY'];
      if (!url) return void process.stdout.write(table([header, ...entries.map(auditRow)]));
      process.stdout.write(table([['INSTANCE', ...header], ...entries.map((e) => [e.instance ?? '-', ...auditRow(e)])]));
    });
  audit
    .command('verify')
    .description(
      "check the keyed chain and its head: report the first line altered, removed, inserted or reordered, a cut, emptied, deleted or replaced file, or a rewrite without the key (exit 1); with MEMO_DATABASE_URL, every instance's chain in the database, each on its own line",
    )
    .option('--json', 'print JSON')
    .option('--key <file...>', "with MEMO_DATABASE_URL: more audit.key files, for chains sealed with another instance's key")
    .option('--file', 'check data/agent-audit.jsonl even when MEMO_DATABASE_URL is set')
    .action(async (opts: { json?: boolean; key?: string[]; file?: boolean }) => {
      const url = database();
      if (!url || opts.file) {
        if (opts.key) throw new UsageError("--key is for the chains in the database (MEMO_DATABASE_URL); a file is checked with its data folder's audit.key");
        const report = verifyAuditFile(path.join(cli.dataDir(), 'agent-audit.jsonl'));
        if (opts.json) print(report);
        else process.stdout.write(formatVerifyReport(report));
        return cli.setExit(report.ok ? 0 : 1);
      }
      const read = await pgRead();
      const instance = thisInstance(cli.dataDir());
      const report = await read.verifyAuditDatabase(
        url,
        cli.dataDir(),
        instance,
        (opts.key ?? []).map((k) => path.resolve(k)),
      );
      if (opts.json) print(report);
      else process.stdout.write(read.formatAuditDatabaseReport(report, instance));
      cli.setExit(report.ok ? 0 : 1);
    });
  audit
    .command('export')
    .description(
      "write the trail as JSONL, the lines exactly as sealed: with MEMO_DATABASE_URL, each instance's chain (--out DIR: one agent-audit.<instance>.jsonl and its .head per chain, which `memo audit verify --file` checks beside the key); without it, data/agent-audit.jsonl",
    )
    .option('--instance <id>', "only this instance's chain (MEMO_DATABASE_URL)")
    .option('--out <path>', 'a folder (every chain) or, with --instance, a file; default: standard output')
    .action(async (opts: { instance?: string; out?: string }) => {
      const url = database();
      if (!url) {
        if (opts.instance) throw new UsageError('--instance names a chain in the database: set MEMO_DATABASE_URL');
        const file = path.join(cli.dataDir(), 'agent-audit.jsonl');
        if (!fs.existsSync(file)) throw new UsageError(`there is no audit trail at ${file}`);
        if (!opts.out) return void process.stdout.write(fs.readFileSync(file));
        const out = path.resolve(opts.out);
        fs.copyFileSync(file, out, fs.constants.COPYFILE_EXCL);
        if (fs.existsSync(headPathFor(file))) fs.copyFileSync(headPathFor(file), headPathFor(out), fs.constants.COPYFILE_EXCL);
        return void process.stderr.write(`Exported ${file} to ${out}.\n`);
      }
      const read = await pgRead();
      const out = opts.out ? path.resolve(opts.out) : undefined;
      if (out && !opts.instance && fs.existsSync(out) && !fs.statSync(out).isDirectory()) {
        throw new UsageError(`${out} is a file: every chain goes to a folder (or name one chain with --instance)`);
      }
      if (out && opts.instance && fs.existsSync(out)) throw new UsageError(`${out} exists already: name a new file`);
      const to = !out ? { stream: process.stdout } : opts.instance ? { file: out } : { dir: out };
      const done = await read.exportAuditChains(url, to, opts.instance);
      for (const e of done) if (e.file) process.stderr.write(`Exported ${e.lines} lines of instance ${e.instance} to ${e.file}.\n`);
    });
}
