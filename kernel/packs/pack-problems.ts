/**
 * Problems with a pack or a skill, located: the file, the line and column, the tool and field, and a
 * sentence. The loader's error messages are built from them (with the offending line shown under a
 * caret), and `memo plugins validate --json` prints them as they are.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseJs, type Node as JsNode } from 'acorn';

export interface Problem {
  /** Relative to the pack or skill folder. */
  file: string;
  line?: number;
  column?: number;
  tool?: string;
  field?: string;
  message: string;
}

/** An Error carrying its located problems; its message is their text (each with its code frame). */
export class ProblemError extends Error {
  constructor(
    readonly problems: Problem[],
    message: string,
  ) {
    super(message);
  }
}

/** The problems an error carries (a ProblemError's own, or one made of its message). */
export function problemsOf(err: unknown, file: string): Problem[] {
  const own = (err as { problems?: unknown } | null)?.problems;
  if (Array.isArray(own)) return own as Problem[];
  return [{ file, message: err instanceof Error ? err.message : String(err) }];
}

/** `  3 |   the line` with a caret under the column, and one line of context either side. */
export function codeFrame(source: string, line: number, column: number): string {
  const lines = source.split(/\r?\n/);
  const first = Math.max(1, line - 1);
  const last = Math.min(lines.length, line + 1);
  const width = String(last).length;
  const out: string[] = [];
  for (let n = first; n <= last; n++) {
    const text = (lines[n - 1] ?? '').replace(/\t/g, '  ');
    out.push(`${n === line ? '>' : ' '} ${String(n).padStart(width)} | ${text}`);
    if (n === line) {
      const before = (lines[n - 1] ?? '').slice(0, Math.max(0, column - 1)).replace(/\t/g, '  ');
      out.push(`  ${' '.repeat(width)} | ${' '.repeat(before.length)}^`);
    }
  }
  return out.join('\n');
}

/** `file:line:column: message` and the code frame beneath, when the source is at hand. */
export function describeProblem(p: Problem, source?: string): string {
  const where = [p.file, p.line, p.line !== undefined ? p.column : undefined].filter((x) => x !== undefined).join(':');
  const who = p.tool !== undefined ? `tool "${p.tool}": ` : '';
  const field = p.field ? `${p.field} ` : '';
  const head = `${where}: ${who}${field}${p.message}`;
  return source !== undefined && p.line !== undefined ? `${head}\n${codeFrame(source, p.line, p.column ?? 1)}` : head;
}

/** Line and column (1-based) of a character offset. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

/**
 * A JSON.parse failure located: V8 says "... in JSON at position 172" (or "Unexpected end of JSON
 * input", which is the end of the text); a person wants the line and column.
 */
export function jsonProblem(file: string, text: string, err: Error): Problem {
  const m = /^(.*?)(?: in JSON)? at position (\d+)/.exec(err.message);
  const offset = m ? Number(m[2]) : /end of JSON input/.test(err.message) ? text.length : null;
  const reason = (m ? m[1]! : err.message).replace(/\s*\(line \d+ column \d+\)$/, '');
  if (offset === null) return { file, message: `is not valid JSON: ${reason}` };
  return { file, ...lineColumn(text, offset), message: `is not valid JSON: ${reason}` };
}

const SCRIPT_EXT = /\.(?:m?js)$/;

/** Relative imports a module makes (static, re-exports, and `import('literal')`). */
function relativeImports(program: JsNode): string[] {
  const out: string[] = [];
  const visit = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach(visit);
    const n = node as { type?: string; source?: { type?: string; value?: unknown } };
    if (
      (n.type === 'ImportDeclaration' || n.type === 'ExportAllDeclaration' || n.type === 'ExportNamedDeclaration' || n.type === 'ImportExpression') &&
      n.source?.type === 'Literal' &&
      typeof n.source.value === 'string' &&
      n.source.value.startsWith('.')
    )
      out.push(n.source.value);
    for (const [k, v] of Object.entries(n)) if (k !== 'loc' && typeof v === 'object') visit(v);
  };
  visit(program);
  return out;
}

/**
 * Where a SyntaxError thrown by `import()` lies. Node 20 puts neither the file nor the position in
 * the error, so the pack's own module graph (its main file, then what it imports inside the folder)
 * is parsed with acorn, and the first file that does not parse is the culprit. Null when every file
 * parses (a link error, e.g. an import of a name a module does not export, which names its module).
 */
export function locateSyntaxError(main: string, packDir: string): { file: string; line: number; column: number; source: string } | null {
  const queue = [main];
  const seen = new Set<string>();
  while (queue.length && seen.size < 200) {
    const file = queue.shift()!;
    if (seen.has(file) || !SCRIPT_EXT.test(file)) continue;
    seen.add(file);
    let source: string;
    try {
      source = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    let program: JsNode;
    try {
      program = parseJs(source, { ecmaVersion: 'latest', sourceType: 'module', allowHashBang: true, locations: true });
    } catch (err) {
      const loc = (err as { loc?: { line: number; column: number } }).loc;
      if (!loc) return null;
      return { file: path.relative(packDir, file) || path.basename(file), line: loc.line, column: loc.column + 1, source };
    }
    for (const spec of relativeImports(program)) {
      const target = path.resolve(path.dirname(file), spec);
      if (target.startsWith(packDir + path.sep)) queue.push(target);
    }
  }
  return null;
}

/** The first stack frame inside the pack folder (the line of the pack's code that threw), as file, line, column. */
export function packFrame(err: unknown, packDir: string): { file: string; line: number; column: number } | null {
  const stack = (err as { stack?: unknown } | null)?.stack;
  if (typeof stack !== 'string') return null;
  // Frames name file: URLs (with the loader's query), or plain paths under other module loaders.
  for (const m of stack.matchAll(/(file:\/\/[^\s)?]+|\/[^\s):?]+)(?:\?[^\s):]*)?:(\d+):(\d+)/g)) {
    let file: string;
    try {
      file = m[1]!.startsWith('file:') ? fileURLToPath(m[1]!) : m[1]!;
    } catch {
      continue;
    }
    if (file.startsWith(packDir + path.sep)) return { file, line: Number(m[2]), column: Number(m[3]) };
  }
  return null;
}
