import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Danger, Effect, JsonSchema } from '../tools/contract.js';
import { compileSchema, schemaProblems, type SchemaCompiler } from '../tools/schemas.js';
import { TOOL_DECLARATION_FIELDS } from '../tools/tool-declaration.js';
import { codeFrame, ProblemError, type Problem } from '../packs/pack-problems.js';
import { parseTemplate, templateProblems, type TemplateToken } from './command-template.js';

/** A command tool declared in a SKILL.md `tools:` list. */
export interface SkillToolDecl {
  name: string;
  description: string;
  parameters: JsonSchema;
  command: string;
  /** A skill never skips the prompt: `safe` is refused. Default `dangerous`. */
  danger?: Exclude<Danger, 'safe'>;
  effect?: Effect;
  timeoutMs?: number;
  /** Where the command runs: the sandbox root (default) or the skill's own folder. */
  cwd?: 'root' | 'skill';
  /** Parameters that are paths: resolved through the sandbox and passed as real absolute paths. */
  paths?: string[];
  sensitiveArgs?: string[];
  confirm?: 'always';
  openWorld?: boolean;
}

export interface Skill {
  name: string;
  description: string;
  dir: string;
  body: string;
  license?: string;
  compatibility?: string;
  metadata?: Record<string, string>;
  allowedTools?: string[];
  tools: Array<SkillToolDecl & { template: TemplateToken[] }>;
}

const FRONTMATTER_SCHEMA = {
  type: 'object',
  required: ['name', 'description'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', pattern: '^[a-z0-9]+(?:-[a-z0-9]+)*$', minLength: 1, maxLength: 64 },
    description: { type: 'string', minLength: 1, maxLength: 1024 },
    license: { type: 'string' },
    compatibility: { type: 'string', maxLength: 500 },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
    'allowed-tools': { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    tools: {
      type: 'array',
      // A pack's tool declaration, with the command fields on top; danger and effect have defaults here.
      items: {
        type: 'object',
        required: ['name', 'description', 'parameters', 'command'],
        additionalProperties: false,
        properties: {
          ...TOOL_DECLARATION_FIELDS,
          danger: { enum: ['medium', 'dangerous'] },
          command: { type: 'string', minLength: 1 },
          cwd: { enum: ['root', 'skill'] },
          paths: { type: 'array', items: { type: 'string' } },
        },
      },
    },
  },
} as const;

const validateFrontmatter = compileSchema(FRONTMATTER_SCHEMA);

/** Splits `---\nyaml\n---\nbody`; throws if the file does not open with frontmatter. */
function splitFrontmatter(text: string): { yaml: string; body: string } {
  const normalized = text.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  if (!normalized.startsWith('---\n')) throw new Error('SKILL.md must start with YAML frontmatter between "---" lines');
  const end = normalized.indexOf('\n---', 4);
  if (end < 0) throw new Error('the frontmatter is not closed by a "---" line');
  const after = normalized.indexOf('\n', end + 4);
  return { yaml: normalized.slice(4, end), body: after < 0 ? '' : normalized.slice(after + 1) };
}

/** Where a frontmatter schema error lies: `/tools/1/danger` is tool "git_log", field `danger`. */
function frontmatterProblem(data: unknown, pointer: string, field: string, message: string): Problem {
  const m = /^\/tools\/(\d+)(?:\/(.*))?$/.exec(pointer);
  if (!m) return { file: 'SKILL.md', field: field || '(the frontmatter)', message };
  const name = ((data as { tools?: unknown[] }).tools?.[Number(m[1])] as { name?: unknown } | undefined)?.name;
  return {
    file: 'SKILL.md',
    tool: typeof name === 'string' && name ? name : `#${Number(m[1]) + 1}`,
    field: (m[2] ?? '').replace(/\//g, '.') || '(the declaration)',
    message,
  };
}

function fail(problems: Problem[], message: string): never {
  throw new ProblemError(problems, message);
}

/**
 * Reads and validates `<dir>/SKILL.md`. Throws an Error that says what is wrong (every problem, each
 * located; `problems` on the error lists them). `schemas` is the kernel's compiler (the tools'
 * parameters are compiled there once).
 */
export function readSkill(dir: string, schemas?: SchemaCompiler): Skill {
  const file = path.join(dir, 'SKILL.md');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(code === 'ENOENT' ? 'has no SKILL.md' : `SKILL.md cannot be read (${code})`, { cause: err });
  }
  let split: { yaml: string; body: string };
  try {
    split = splitFrontmatter(text);
  } catch (err) {
    return fail([{ file: 'SKILL.md', line: 1, message: (err as Error).message }], (err as Error).message);
  }
  const { yaml, body } = split;
  let fm: unknown;
  try {
    fm = parseYaml(yaml);
  } catch (err) {
    // The YAML starts on the file's second line (after "---").
    const pos = (err as { linePos?: Array<{ line: number; col: number }> }).linePos?.[0];
    const reason = (err as Error).message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    if (!pos) return fail([{ file: 'SKILL.md', message: `frontmatter is not valid YAML: ${reason}` }], `the frontmatter is not valid YAML: ${reason}`);
    const line = pos.line + 1;
    const frame = codeFrame(text.replace(/^\uFEFF/, ''), line, pos.col);
    return fail(
      [{ file: 'SKILL.md', line, column: pos.col, message: `frontmatter is not valid YAML: ${reason}` }],
      `the frontmatter is not valid YAML at SKILL.md line ${line}, column ${pos.col}: ${reason}\n${frame}`,
    );
  }
  if (!validateFrontmatter(fm)) {
    const problems = schemaProblems(validateFrontmatter.errors, fm).map((p) => frontmatterProblem(fm, p.path, p.field, p.message));
    const lines = problems.map((p) => `${p.tool !== undefined ? `tool "${p.tool}": ` : ''}${p.field} ${p.message}`);
    fail(problems, `the frontmatter is invalid: ${lines.join('; ')}`);
  }
  const data = fm as Record<string, unknown> & { name: string; description: string; tools?: SkillToolDecl[]; 'allowed-tools'?: string | string[] };
  const folder = path.basename(dir);
  if (data.name !== folder)
    fail(
      [{ file: 'SKILL.md', field: 'name', message: `is "${data.name}" but must equal its folder name "${folder}"` }],
      `its name "${data.name}" must equal its folder name "${folder}"`,
    );

  const tools: Skill['tools'] = [];
  const problems: Problem[] = [];
  const texts: string[] = [];
  for (const decl of data.tools ?? []) {
    const found: Array<{ field: string; message: string }> = [];
    let template: TemplateToken[] = [];
    try {
      template = parseTemplate(decl.command);
      for (const p of templateProblems(template, decl.parameters)) found.push({ field: 'command', message: p });
    } catch (err) {
      found.push({ field: 'command', message: `its command ${(err as Error).message}` });
    }
    for (const p of decl.paths ?? [])
      if (!Object.hasOwn(decl.parameters.properties ?? {}, p)) found.push({ field: 'paths', message: `paths names "${p}", which is not a parameter` });
    try {
      if (schemas) schemas.compile(decl.parameters);
      else compileSchema(decl.parameters);
    } catch (err) {
      found.push({ field: 'parameters', message: `its parameters schema cannot be compiled: ${(err as Error).message}` });
    }
    for (const f of found) problems.push({ file: 'SKILL.md', tool: decl.name, field: f.field, message: f.message });
    if (found.length) texts.push(`tool ${decl.name}: ${found.map((f) => f.message).join('; ')}`);
    else tools.push({ ...decl, template });
  }
  if (problems.length) fail(problems, texts.join('; '));

  const skill: Skill = { name: data.name, description: data.description, dir, body, tools };
  if (typeof data.license === 'string') skill.license = data.license;
  if (typeof data.compatibility === 'string') skill.compatibility = data.compatibility;
  if (data.metadata) skill.metadata = data.metadata as Record<string, string>;
  const allowed = data['allowed-tools'];
  if (allowed !== undefined) skill.allowedTools = Array.isArray(allowed) ? allowed : allowed.split(/\s+/).filter(Boolean);
  return skill;
}
