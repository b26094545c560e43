import type { JsonSchema } from '../tools/contract.js';

/** One argv entry of a template: literal text and `{param}` placeholders, in order. */
export type TemplateToken = Array<{ text: string } | { param: string }>;

const OPERATORS = new Set(['|', '&', ';', '<', '>', '(', ')', '`', '$', '\n', '\r']);

/**
 * Splits a command template (`pdftotext {path} -`) into argv tokens, shell-style quoting
 * respected. There is no shell at run time, so pipes, redirects, `;`, `$VAR` and `$(...)` would
 * silently become literal arguments: they are refused here instead, with a sentence saying so.
 */
export function parseTemplate(template: string): TemplateToken[] {
  const tokens: TemplateToken[] = [];
  let current: TemplateToken | null = null;
  let literal = '';
  const flushLiteral = () => {
    if (literal) (current ??= []).push({ text: literal });
    literal = '';
  };
  const endToken = () => {
    flushLiteral();
    if (current) tokens.push(current);
    current = null;
  };
  const placeholder = (i: number): number => {
    const m = /^\{([A-Za-z_][A-Za-z0-9_]*)\}/.exec(template.slice(i));
    if (!m) throw new Error(`a "{" at position ${i} does not start a {parameter} placeholder`);
    flushLiteral();
    (current ??= []).push({ param: m[1] ?? '' });
    return i + m[0].length;
  };

  let i = 0;
  while (i < template.length) {
    const c = template[i]!; // i < template.length
    if (c === ' ' || c === '\t') {
      endToken();
      i++;
    } else if (c === "'") {
      const end = template.indexOf("'", i + 1);
      if (end < 0) throw new Error('a single quote is not closed');
      literal += template.slice(i + 1, end);
      current ??= [];
      i = end + 1;
    } else if (c === '"') {
      current ??= [];
      i++;
      while (i < template.length && template[i] !== '"') {
        const d = template[i];
        if (d === '$' || d === '`') throw new Error('"$" and "`" are not expanded: command templates run without a shell');
        if (d === '\\' && i + 1 < template.length && '"\\'.includes(template[i + 1]!)) {
          literal += template[i + 1];
          i += 2;
        } else if (d === '{') i = placeholder(i);
        else {
          literal += d;
          i++;
        }
      }
      if (template[i] !== '"') throw new Error('a double quote is not closed');
      i++;
    } else if (c === '\\') {
      if (i + 1 >= template.length) throw new Error('the template ends with a backslash');
      literal += template[i + 1];
      current ??= [];
      i += 2;
    } else if (c === '{') {
      i = placeholder(i);
    } else if (OPERATORS.has(c)) {
      throw new Error(
        `"${c === '\n' ? '\\n' : c}" is a shell operator, and command templates run without a shell (no pipes, redirects, lists or expansions); put that logic in a script bundled with the skill`,
      );
    } else {
      literal += c;
      current ??= [];
      i++;
    }
  }
  endToken();
  if (tokens.length === 0) throw new Error('the command is empty');
  if (tokens[0]?.some((p) => 'param' in p)) throw new Error('the program name cannot be a {parameter}');
  return tokens;
}

/**
 * Checks that every placeholder names a required scalar parameter (or one of `reserved`, filled by
 * the kernel: `{script}`); returns the problems.
 */
export function templateProblems(tokens: TemplateToken[], parameters: JsonSchema, reserved: readonly string[] = []): string[] {
  const props = (parameters.properties ?? {}) as Record<string, { type?: unknown }>;
  const required = new Set((parameters.required as string[] | undefined) ?? []);
  const problems: string[] = [];
  for (const token of tokens) {
    for (const part of token) {
      if (!('param' in part) || reserved.includes(part.param)) continue;
      const prop = props[part.param];
      if (!prop) problems.push(`{${part.param}} is not a declared parameter`);
      else if (!['string', 'number', 'integer', 'boolean'].includes(prop.type as string))
        problems.push(`{${part.param}} must be a string, number, integer or boolean parameter`);
      else if (!required.has(part.param)) problems.push(`{${part.param}} must be a required parameter (an absent value has no safe place in argv)`);
    }
  }
  return problems;
}

/**
 * Builds argv: each template token becomes exactly one argv entry, whatever the values contain, so
 * `; rm -rf ~` or `$(id)` in an argument stays one literal string. After substitution no entry may
 * start with "-" unless the template's own literal text starts it (`--format={f}` is fine): values
 * must never make an option, alone (`{path}` = `-rf`) or glued together (`{a}{b}` =
 * `--upload-pack=…`, which ran a command through git).
 */
export function buildArgv(tokens: TemplateToken[], values: Record<string, string>): string[] {
  return tokens.map((token) => {
    const arg = token.map((p) => ('param' in p ? values[p.param] : p.text)).join('');
    const first = token[0];
    const literalDash = first !== undefined && 'text' in first && first.text.startsWith('-');
    if (arg.startsWith('-') && !literalDash) {
      const params = token.filter((p): p is { param: string } => 'param' in p).map((p) => `"${p.param}"`);
      throw new Error(
        `the value of ${params.join(' and ')} makes the argument ${JSON.stringify(arg.length > 60 ? `${arg.slice(0, 60)}…` : arg)}, which starts with "-" and would be read as an option`,
      );
    }
    return arg;
  });
}

/** Quotes argv for display and for the command judge: single quotes, so nothing expands. */
export function quoteArgv(argv: string[]): string {
  return argv.map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}
