/**
 * `memo audit tail|verify|export`: the newest entries, the keyed chain checked, the chain written out
 * as JSONL. With MEMO_DATABASE_URL set they read the chains of every instance in the database (schema
 * memo_audit); without it, `data/agent-audit.jsonl` as before. `tail --admin` shows only the admin
 * lines: a person's changes (packs, permissions, providers, the MCP token), when, by which face, what.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import { headPathFor } from '../audit/audit-chain.js';
import { formatVerifyReport, verifyAuditFile } from '../audit/audit-verify.js';
import { isAuditEvent, type AuditEvent, type AuditLine } from '../audit/audit-record.js';
import { readAuditFileTail } from '../audit/audit-tail.js';
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

/** The first window of lines `--admin` reads from the database; widened fourfold until it holds `n` admin lines or the whole trail. */
const ADMIN_WINDOW = 2000;

/**
 * The newest `n` admin lines, oldest first. From the file: every line is read (as `--tool` does). From
 * the database, which has no admin filter of its own: the newest lines in a widening window.
 */
async function adminTail(url: DatabaseUrl | null, file: string, n: number): Promise<AdminLine[]> {
  if (!url) return readAuditFileTail(file, Number.MAX_SAFE_INTEGER).filter(isAdminLine).slice(-n);
  const read = await pgRead();
  for (let window = Math.max(ADMIN_WINDOW, n * 20); ; window *= 4) {
    const lines = await read.readAuditDatabaseTail(url, window);
    const admin = lines.filter(isAdminLine);
    if (admin.length >= n || lines.length < window) return admin.slice(-n);
  }
}

/** A value as one line a terminal shows as it is: control characters and runs of white space become one space. */
function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\s]+/g, ' ').trim();
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A person's change on the trail (`event: 'admin'`): pack.disable, permission.allow, token.rotate, ... */
type AdminLine = AuditEvent & { event: 'admin' };

function isAdminLine(e: AuditLine): e is AdminLine {
  return isAuditEvent(e) && e.event === 'admin';
}

/** How an admin line's change went: its `change` as JSON, and for a change that failed after its line, why. */
function adminChange(e: AuditEvent): string {
  const parts = [e.change !== undefined ? JSON.stringify(e.change) : '', e.outcome === 'failed' ? `failed: ${e.error ?? 'no reason given'}` : ''];
  return oneLine(parts.filter(Boolean).join('; ')) || '-';
}

/** One row of `memo audit tail --admin`: when, by whom, the action, its target and the change. */
function adminRow(e: AuditEvent): string[] {
  return [e.ts, oneLine(e.by ?? '?'), oneLine(e.action ?? '?'), cut(oneLine(e.target ?? '-'), 40), cut(adminChange(e), 100)];
}

/** One row of `memo audit tail`: an entry, or a kernel event (gap, torn tail, keyed chain start, an agent CLI's access, an admin change). */
function auditRow(e: AuditLine): string[] {
  if (isAdminLine(e)) {
    const change = adminChange(e);
    const what = `${e.target !== undefined ? `${oneLine(e.target)} ` : ''}by ${oneLine(e.by ?? '?')}${change !== '-' ? ` ${change}` : ''}`;
    return [e.ts, 'admin', oneLine(e.action ?? '?'), '-', e.outcome === 'failed' ? 'failed' : '-', '-', cut(what, 60)];
  }
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
    .option('--admin', "only the admin lines: a person's changes (packs, permissions, providers, the MCP token), when, by whom, what")
    .option('--json', 'print one JSON entry per line')
    .action(async (opts: { lines: string; tool?: string; admin?: boolean; json?: boolean }) => {
      const n = Number(opts.lines);
      if (!Number.isInteger(n) || n < 1) throw new UsageError('-n must be a whole number of at least 1');
      if (opts.admin && opts.tool !== undefined) throw new UsageError("--tool picks a tool's calls and --admin a person's changes: give one of them");
      const url = database();
      if (opts.admin) {
        const lines = await adminTail(url, path.join(cli.dataDir(), 'agent-audit.jsonl'), n);
        if (opts.json) return void lines.forEach((e) => print(e));
        if (lines.length === 0) return void process.stdout.write('No admin lines.\n');
        const header = ['TIME', 'BY', 'ACTION', 'TARGET', 'CHANGE'];
        if (!url) return void process.stdout.write(table([header, ...lines.map(adminRow)]));
        return void process.stdout.write(table([['INSTANCE', ...header], ...lines.map((e) => [e.instance ?? '-', ...adminRow(e)])]));
      }
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
