/** `memo audit tail|verify`: the newest entries, and the keyed chain checked. */
import * as path from 'node:path';
import type { Command } from 'commander';
import { formatVerifyReport, isAuditEvent, readAuditFileTail, verifyAuditFile, type AuditLine } from '../audit/audit-log.js';
import { print, table, UsageError, type Cli } from './context.js';

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
  const audit = program.command('audit').description('the audit trail (data/agent-audit.jsonl)');
  audit
    .command('tail')
    .description('show the newest audit entries')
    .option('-n, --lines <n>', 'how many', '20')
    .option('--tool <tool>', 'only this tool')
    .option('--json', 'print one JSON entry per line')
    .action((opts: { lines: string; tool?: string; json?: boolean }) => {
      const n = Number(opts.lines);
      if (!Number.isInteger(n) || n < 1) throw new UsageError('-n must be a whole number of at least 1');
      // Read from the file's end, without creating or locking anything.
      const entries = readAuditFileTail(path.join(cli.dataDir(), 'agent-audit.jsonl'), n, opts.tool);
      if (opts.json) return void entries.forEach((e) => print(e));
      if (entries.length === 0) return void process.stdout.write('No audit entries.\n');
      process.stdout.write(table([['TIME', 'CALLER', 'TOOL', 'DECISION', 'OUTCOME', 'MS', 'SUMMARY'], ...entries.map(auditRow)]));
    });
  audit
    .command('verify')
    .description(
      'check the keyed chain and its head: report the first line altered, removed, inserted or reordered, a cut, emptied, deleted or replaced file, or a rewrite without the key (exit 1)',
    )
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      const report = verifyAuditFile(path.join(cli.dataDir(), 'agent-audit.jsonl'));
      if (opts.json) print(report);
      else process.stdout.write(formatVerifyReport(report));
      cli.setExit(report.ok ? 0 : 1);
    });
}
