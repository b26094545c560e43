import { MCP_SERVER_NAME, type Invocation } from './backends.js';

/** What a CLI's stream says, in one shape for every backend. */
export type CliEvent =
  | { type: 'model'; model: string }
  | { type: 'text_delta'; text: string }
  /** A complete assistant message (the last one is the answer). */
  | { type: 'message'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool_start'; id: string; tool: string; args: Record<string, unknown> }
  | { type: 'tool_end'; id: string; tool?: string; ok: boolean; summary: string }
  | { type: 'usage'; inputTokens: number; outputTokens: number }
  | { type: 'done'; answer?: string }
  | { type: 'failed'; message: string };

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** `mcp__memo__note_write` → `note_write`; the CLI's own tools keep their name with the CLI's prefix. */
function claudeTool(name: string): string {
  const prefix = `mcp__${MCP_SERVER_NAME}__`;
  return name.startsWith(prefix) ? name.slice(prefix.length) : `claude:${name}`;
}

/** The text of a tool result: a string, or MCP content blocks. */
function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((b) => (isObj(b) && typeof b.text === 'string' ? b.text : ''))
      .filter(Boolean)
      .join('\n');
  return '';
}

function oneLine(text: string, max = 200): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Claude Code `-p --output-format stream-json --verbose [--include-partial-messages]`. */
function claudeEvents(e: Json): CliEvent[] {
  const out: CliEvent[] = [];
  if (e.type === 'system' && e.subtype === 'init') {
    const model = str(e.model);
    if (model) out.push({ type: 'model', model });
  } else if (e.type === 'stream_event' && isObj(e.event)) {
    const ev = e.event;
    if (ev.type === 'content_block_delta' && isObj(ev.delta)) {
      if (ev.delta.type === 'text_delta' && typeof ev.delta.text === 'string') out.push({ type: 'text_delta', text: ev.delta.text });
    }
  } else if (e.type === 'assistant' && isObj(e.message)) {
    const content = Array.isArray(e.message.content) ? e.message.content : [];
    const text: string[] = [];
    for (const block of content) {
      if (!isObj(block)) continue;
      if (block.type === 'text' && typeof block.text === 'string') text.push(block.text);
      else if (block.type === 'thinking' && typeof block.thinking === 'string' && block.thinking) out.push({ type: 'reasoning', text: block.thinking });
      else if (block.type === 'tool_use')
        out.push({ type: 'tool_start', id: str(block.id) ?? '', tool: claudeTool(str(block.name) ?? '?'), args: isObj(block.input) ? block.input : {} });
    }
    if (text.length) out.push({ type: 'message', text: text.join('') });
  } else if (e.type === 'user' && isObj(e.message) && Array.isArray(e.message.content)) {
    for (const block of e.message.content) {
      if (isObj(block) && block.type === 'tool_result')
        out.push({ type: 'tool_end', id: str(block.tool_use_id) ?? '', ok: block.is_error !== true, summary: oneLine(resultText(block.content)) });
    }
  } else if (e.type === 'result') {
    if (isObj(e.usage)) out.push({ type: 'usage', inputTokens: num(e.usage.input_tokens), outputTokens: num(e.usage.output_tokens) });
    if (e.is_error === true || (typeof e.subtype === 'string' && e.subtype !== 'success')) {
      const why = str(e.result) || (Array.isArray(e.errors) ? e.errors.filter((x) => typeof x === 'string').join('; ') : '') || (str(e.subtype) ?? 'error');
      out.push({ type: 'failed', message: why });
    } else {
      const answer = str(e.result);
      out.push(answer === undefined ? { type: 'done' } : { type: 'done', answer });
    }
  }
  return out;
}

/** Codex `codex exec --json`: thread/turn/item events (codex-rs/exec/src/exec_events.rs). */
function codexEvents(e: Json): CliEvent[] {
  const out: CliEvent[] = [];
  const item = isObj(e.item) ? e.item : undefined;
  const id = item ? (str(item.id) ?? '') : '';
  if ((e.type === 'item.started' || e.type === 'item.completed') && item) {
    const done = e.type === 'item.completed';
    switch (item.type) {
      case 'agent_message':
        if (done && typeof item.text === 'string') out.push({ type: 'message', text: item.text });
        break;
      case 'reasoning':
        if (done && typeof item.text === 'string' && item.text) out.push({ type: 'reasoning', text: item.text });
        break;
      case 'mcp_tool_call': {
        const server = str(item.server) ?? '?';
        const tool = server === MCP_SERVER_NAME ? (str(item.tool) ?? '?') : `codex:${server}/${str(item.tool) ?? '?'}`;
        if (!done) out.push({ type: 'tool_start', id, tool, args: isObj(item.arguments) ? item.arguments : {} });
        else {
          const error = isObj(item.error) ? str(item.error.message) : undefined;
          const result = isObj(item.result) ? item.result : undefined;
          const isError = error !== undefined || item.status === 'failed';
          out.push({ type: 'tool_end', id, tool, ok: !isError, summary: oneLine(error ?? resultText(result?.content)) });
        }
        break;
      }
      case 'command_execution':
        if (!done) out.push({ type: 'tool_start', id, tool: 'codex:shell', args: { command: str(item.command) ?? '' } });
        else
          out.push({
            type: 'tool_end',
            id,
            tool: 'codex:shell',
            ok: item.status === 'completed' && (item.exit_code === 0 || item.exit_code === undefined),
            summary: oneLine(str(item.aggregated_output) ?? ''),
          });
        break;
      case 'file_change':
        if (done) {
          const changes = Array.isArray(item.changes) ? item.changes.filter(isObj).map((c) => `${str(c.kind) ?? '?'} ${str(c.path) ?? '?'}`) : [];
          out.push({ type: 'tool_start', id, tool: 'codex:file_change', args: {} });
          out.push({ type: 'tool_end', id, tool: 'codex:file_change', ok: item.status === 'completed', summary: oneLine(changes.join(', ')) });
        }
        break;
      case 'web_search':
        if (!done) out.push({ type: 'tool_start', id, tool: 'codex:web_search', args: { query: str(item.query) ?? '' } });
        else out.push({ type: 'tool_end', id, tool: 'codex:web_search', ok: true, summary: oneLine(str(item.query) ?? '') });
        break;
      default:
        break;
    }
  } else if (e.type === 'turn.completed') {
    if (isObj(e.usage)) out.push({ type: 'usage', inputTokens: num(e.usage.input_tokens), outputTokens: num(e.usage.output_tokens) });
    out.push({ type: 'done' });
  } else if (e.type === 'turn.failed') {
    out.push({ type: 'failed', message: (isObj(e.error) ? str(e.error.message) : undefined) ?? 'the turn failed' });
  } else if (e.type === 'error') {
    out.push({ type: 'failed', message: str(e.message) ?? 'the stream reported an error' });
  }
  return out;
}

/**
 * Reads a CLI's stdout line by line. JSON formats: one object per line; a line that is not JSON
 * (a banner, a warning) is ignored. Text format (agy): the whole output is the answer.
 */
export class CliStreamReader {
  private text = '';

  constructor(private readonly format: Invocation['format']) {}

  line(raw: string): CliEvent[] {
    if (this.format === 'text') {
      const piece = this.text ? `\n${raw}` : raw;
      this.text += piece;
      return [{ type: 'text_delta', text: piece }];
    }
    const trimmed = raw.trim();
    if (!trimmed.startsWith('{')) return [];
    let e: unknown;
    try {
      e = JSON.parse(trimmed);
    } catch {
      return [];
    }
    if (!isObj(e)) return [];
    return this.format === 'claude-stream-json' ? claudeEvents(e) : codexEvents(e);
  }

  /** At exit: the text format's answer (JSON formats said everything in their lines). */
  end(exitCode: number | null): CliEvent[] {
    if (this.format !== 'text') return [];
    return exitCode === 0 ? [{ type: 'message', text: this.text.trim() }, { type: 'done' }] : [];
  }
}
