/**
 * `memo approvals list|answer`: the permission requests waiting in the approval broker of the memo
 * serve running on this data folder (from MCP clients, routines, pack services), listed, watched and
 * answered through its control socket. The answer is recorded as given by `cli`. Without a running
 * server there is nothing to list: a kernel of this command's own would have nothing pending.
 */
import type { Command } from 'commander';
import { ControlFailure, reachServer, type ControlConnection } from '../control/control-client.js';
import type { ApprovalView } from '../control/kernel-views.js';
import { approvalDisplay, displayLines, visibleLine } from '../control/preview-format.js';
import { ANSWER_HELP, isPermissionAnswer } from '../permissions/prompter.js';
import { NotFound, print, UsageError, type Cli } from './context.js';
import { moment } from './moments.js';

const PREVIEW_LINES = 12;
const LINE_CHARS = 160;
const ARGS_CHARS = 400;

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * One request as `memo approvals list` shows it: id, tool, danger, then the request as
 * preview-format.ts lays it out (the kernel's and the tool's facts, never cut; the preview's body,
 * cut to 12 lines; the caller's own text, quoted), the masked arguments (cut), expiry, and how to answer.
 */
export function approvalBlock(a: ApprovalView, now: number): string {
  const rows = [
    `${a.id}  ${visibleLine(`${a.tool} (${a.plugin})`)}  ${a.danger}, ${a.effect}`,
    ...displayLines(approvalDisplay(a), {
      bodyLines: PREVIEW_LINES,
      lineChars: LINE_CHARS,
      labelWidth: 11,
      moreHint: ' (memo approvals list --json has them all)',
    }).map((l) => `  ${l}`),
    `  arguments: ${cut(visibleLine(JSON.stringify(a.args) ?? 'none'), ARGS_CHARS)}`,
    `  expires:   ${moment(Date.parse(a.expiresAt), now)}`,
  ];
  if (a.gone) rows.push(`  answers:   none now: instance ${a.instance ?? '?'} that asked it is not answering (stopped, or cut off from the database)`);
  else if (a.answerable) {
    rows.push(`  answers:   ${a.answers.join(', ')}${a.editable ? `, or --edit '<json>'` : ''}`);
    rows.push(`  answer:    memo approvals answer ${a.id} ${a.answers[0] ?? 'allow-once'}`);
  } else rows.push(`  answers:   only at the terminal of the memo tools call that made it`);
  return rows.join('\n') + '\n';
}

/** What `memo approvals list` prints for the pending requests. */
export function approvalsText(list: ApprovalView[], now: number): string {
  if (list.length === 0) return 'No permission requests are waiting.\n';
  return list.map((a) => approvalBlock(a, now)).join('\n');
}

/** One settled request, as the watch prints it. */
function settledLine(e: Record<string, unknown>): string {
  const id = String(e.id);
  switch (e.outcome) {
    case 'answered':
      return `${id}: answered by ${String(e.by)}: ${String(e.reply)}`;
    case 'expired':
      return `${id}: expired without an answer (APPROVAL_EXPIRED: the call did not run)`;
    case 'timeout':
      return `${id}: nobody answered in time (PERMISSION_TIMEOUT)`;
    case 'cancelled':
      return `${id}: the call was cancelled`;
    default:
      return `${id}: nobody could answer${typeof e.reason === 'string' ? ` (${e.reason})` : ''}`;
  }
}

async function server(cli: Cli): Promise<ControlConnection> {
  const reach = await reachServer({ dataDir: cli.dataDir() });
  if (reach === null)
    throw new NotFound(
      `no memo serve runs on the data folder ${cli.dataDir()}; permission requests wait only in a running server (start one with memo serve, or pass its --data)`,
    );
  if ('skipped' in reach) throw new NotFound(`cannot reach the memo serve on ${cli.dataDir()}: ${reach.skipped}`);
  return reach.server;
}

function parseEdit(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--edit is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError('--edit must be a JSON object: the arguments as they should run');
  return value as Record<string, unknown>;
}

async function watch(conn: ControlConnection, json: boolean): Promise<void> {
  let stopping = false;
  const onSigint = () => {
    stopping = true;
    conn.close();
  };
  process.once('SIGINT', onSigint);
  try {
    const last = await conn.stream('approvals.watch', (msg) => {
      if (msg.type === 'approvals') {
        const pending = (msg.pending ?? []) as ApprovalView[];
        if (json) return print({ event: 'pending', approvals: pending });
        process.stdout.write(approvalsText(pending, Date.now()) + `Watching (pid ${conn.pid}); Ctrl-C to stop.\n`);
      } else if (msg.type === 'approval') {
        const { type: _type, v: _v, ...event } = msg;
        if (json) return print(event);
        if (event.event === 'asked') process.stdout.write(`\n+ asked\n${approvalBlock(event.approval as ApprovalView, Date.now())}`);
        else process.stdout.write(`- ${settledLine(event)}\n`);
      }
    });
    throw new NotFound(`the running server (pid ${conn.pid}) ended the watch: ${typeof last.message === 'string' ? last.message : 'it stopped'}`);
  } catch (err) {
    if (stopping && err instanceof ControlFailure) return;
    if (err instanceof ControlFailure) throw new NotFound(`the running server (pid ${conn.pid}) went away (${err.message})`);
    throw err;
  } finally {
    process.off('SIGINT', onSigint);
  }
}

export function registerApprovalsCommands(program: Command, cli: Cli): void {
  const approvals = program
    .command('approvals')
    .description(
      'permission requests waiting in the memo serve running on this data folder (MCP clients, routines, pack services): list (--watch to follow), answer',
    );
  approvals
    .command('list')
    .description('list the waiting requests: id, tool, caller, danger, masked arguments, preview, concern, expiry, and the answers that apply')
    .option('--json', 'print JSON (with --watch: one JSON line per change)')
    .option('--watch', 'keep printing requests as they are asked and settled, until Ctrl-C')
    .action(async (opts: { json?: boolean; watch?: boolean }) => {
      const conn = await server(cli);
      if (opts.watch) return watch(conn, opts.json === true);
      let list: ApprovalView[];
      try {
        list = (await conn.request('approvals.list')) as ApprovalView[];
      } catch (err) {
        throw new NotFound(`the running server (pid ${conn.pid}) did not answer (${(err as Error).message})`);
      }
      if (opts.json) return print(list);
      process.stdout.write(approvalsText(list, Date.now()));
    });
  approvals
    .command('answer <id> [answer]')
    .description(`answer a waiting request (the id, or a unique start of it of 4 or more characters): ${ANSWER_HELP}; or --edit for tools that take edits`)
    .option('--edit <json>', 'the arguments as they should run instead (tools that declare editable): checked, previewed and asked again')
    .action(async (id: string, answer: string | undefined, opts: { edit?: string }) => {
      if (answer !== undefined && opts.edit !== undefined) throw new UsageError('give an answer or --edit, not both');
      if (answer === undefined && opts.edit === undefined) throw new UsageError(`give an answer (${ANSWER_HELP}) or --edit '<json>'`);
      if (answer !== undefined && !isPermissionAnswer(answer)) throw new UsageError(`the answer must be one of ${ANSWER_HELP} (N: 1 to 525600)`);
      const fields = answer !== undefined ? { id, answer } : { id, edit: parseEdit(opts.edit!) };
      const conn = await server(cli);
      let done: { id: string; tool: string; reply: string };
      try {
        done = (await conn.request('approvals.answer', fields)) as typeof done;
      } catch (err) {
        throw new NotFound(
          err instanceof ControlFailure && err.code !== 'DISCONNECTED'
            ? err.message
            : `the running server (pid ${conn.pid}) did not answer (${(err as Error).message})`,
        );
      }
      process.stdout.write(
        done.reply === 'edit'
          ? `Sent the edited arguments of ${done.tool} (${done.id}): they are checked, previewed and asked again (memo approvals list).\n`
          : `Answered ${done.tool} (${done.id}): ${done.reply}.\n`,
      );
    });
}
