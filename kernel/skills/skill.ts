import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Danger, Effect, JsonSchema, RestrictedMode } from '../tools/contract.js';
import { compileSchema, schemaProblems, type SchemaCompiler } from '../tools/schemas.js';
import { DESCRIBED_TOOL_FIELDS } from '../packs/manifest.js';
import { codeFrame, ProblemError, type Problem } from '../packs/pack-problems.js';
import { mapAllowedTools, splitAllowedTools } from './allowed-tools.js';
import type { Allowance } from './allowance.js';
import { parseTemplate, templateProblems, type TemplateToken } from './command-template.js';
import { readSimpleFrontmatter } from './frontmatter.js';

/** The Agent Skills limit on a description: longer ones load with a warning and are cut in listings. */
export const DESCRIPTION_LIMIT = 1024;
const COMPATIBILITY_LIMIT = 500;
/** The front-matter keys this project reads; any other is kept, shown and warned about. */
const KNOWN_KEYS = new Set(['name', 'description', 'license', 'compatibility', 'metadata', 'allowed-tools', 'tools']);
/** The placeholder a command template uses for the tool's bundled script (its real absolute path). */
export const SCRIPT_PLACEHOLDER = 'script';

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
  /** A script bundled with the skill (`scripts/fill.py`), passed to the command as `{script}`. */
  script?: string;
  sensitiveArgs?: string[];
  confirm?: 'always';
  openWorld?: boolean;
  /** As a pack tool's: the restricted access modes that offer it, words a tool search matches, sample requests, and arguments a person may edit before approving. */
  modes?: RestrictedMode[];
  keywords?: string[];
  examples?: string[];
  editable?: boolean;
}

export interface Skill {
  name: string;
  description: string;
  dir: string;
  body: string;
  license?: string;
  compatibility?: string;
  metadata?: Record<string, string>;
  /** `allowed-tools` as written, one entry each. */
  allowedTools?: string[];
  /** What `allowed-tools` allows here (see allowed-tools.ts): a restriction while the skill is active. */
  allowance?: Allowance;
  /** Front-matter keys this project does not use, kept as written (shown by read_skill and memo skills show). */
  otherKeys?: Record<string, unknown>;
  /** The frontmatter as parsed, every key as written (the MCP skills listing carries it verbatim). */
  frontmatter?: Record<string, unknown>;
  /** What is off-spec but harmless: the skill loads, and these are reported (memo skills list/validate). */
  warnings: Problem[];
  /** `script` resolved: the real absolute path of the bundled script, checked inside the skill folder. */
  tools: Array<SkillToolDecl & { template: TemplateToken[]; scriptPath?: string }>;
}

export interface ReadSkillOptions {
  /** Whether a tool of this name is loaded now (an unknown name in allowed-tools is warned about). */
  knownTool?: (name: string) => boolean;
}

/** The JSON Schema a SKILL.md's front matter is validated against (docs/reference/skill-md.md shows it). */
export const FRONTMATTER_SCHEMA = {
  type: 'object',
  required: ['description'],
  // Lenient where harmless: other keys are kept and warned about, long texts warned about (below).
  additionalProperties: true,
  properties: {
    name: {
      type: 'string',
      pattern: '^[a-z0-9]+(?:-[a-z0-9]+)*$',
      minLength: 1,
      maxLength: 64,
      description: "The skill's name, in kebab-case: it must equal the name of the skill's folder. Left out, the folder name is used (with a warning).",
    },
    description: {
      type: 'string',
      minLength: 1,
      description: `What the skill does and when to use it: the model's skill index shows it. Over ${DESCRIPTION_LIMIT} characters (the Agent Skills limit) it loads with a warning and listings show it cut.`,
    },
    license: { type: 'string', description: "The skill's license (a name such as `MIT`, or the file bundled with it)." },
    compatibility: {
      type: 'string',
      description: `What the skill needs from its environment (programs, network). Over ${COMPATIBILITY_LIMIT} characters it loads with a warning.`,
    },
    metadata: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'Further facts as string keys and string values (`version: "1.0.0"`).',
    },
    'allowed-tools': {
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
      description:
        "A restriction while the skill is active: only these tools may be called (space- or comma-separated, or a list). Claude Code's names (`Read`, `Bash(git:*)`) are mapped to this project's tools; it never grants anything or skips a prompt.",
    },
    tools: {
      type: 'array',
      description: 'Command tools the skill adds: each runs one command (no shell), its `{parameter}` placeholders filled from the validated arguments.',
      // A pack's tool declaration, with the command fields on top; danger and effect have defaults here.
      items: {
        type: 'object',
        required: ['name', 'description', 'parameters', 'command'],
        additionalProperties: false,
        properties: {
          ...DESCRIBED_TOOL_FIELDS,
          danger: {
            enum: ['medium', 'dangerous'],
            description: 'How the gate treats a call: a skill never skips the prompt, so `safe` is refused. Default `dangerous`.',
          },
          effect: {
            ...DESCRIBED_TOOL_FIELDS.effect,
            description: 'What a call does to the world: `read`, `write` or `delete`. Default `write`; a `delete` tool asks every time.',
          },
          timeoutMs: {
            ...DESCRIBED_TOOL_FIELDS.timeoutMs,
            description: `How long the command may run before it is stopped (\`TIMEOUT\`), in milliseconds; default 60 s for a skill's tool (SKILL_TOOL_TIMEOUT_MS).`,
          },
          command: {
            type: 'string',
            minLength: 1,
            description:
              'The command line: words split shell-style (quotes respected), `{parameter}` placeholders filled with the arguments. There is no shell, so pipes, redirects, `;` and `$VAR` are refused.',
          },
          cwd: { enum: ['root', 'skill'], description: "Where the command runs: the sandbox root (`root`, the default) or the skill's own folder (`skill`)." },
          paths: {
            type: 'array',
            items: { type: 'string' },
            description: 'Parameters that are paths: resolved through the sandbox (refused outside the root) and passed as real absolute paths.',
          },
          script: {
            type: 'string',
            minLength: 1,
            description: 'A script bundled with the skill (`scripts/fill.py`), inside its folder, passed to the command as `{script}`.',
          },
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
export function readSkill(dir: string, schemas?: SchemaCompiler, options: ReadSkillOptions = {}): Skill {
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
    // The common shape is read quickly; anything else (and every error) is the full parser's.
    fm = readSimpleFrontmatter(yaml) ?? parseYaml(yaml);
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
  const data = fm as Record<string, unknown> & { name?: string; description: string; tools?: SkillToolDecl[]; 'allowed-tools'?: string | string[] };
  const folder = path.basename(dir);
  const warnings: Problem[] = [];
  const warn = (key: string, message: string) => {
    const line = keyLine(yaml, key);
    warnings.push({ file: 'SKILL.md', ...(line ? { line, column: 1 } : {}), field: key, message });
  };
  let name = data.name;
  if (name === undefined) {
    if (!/^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(folder) || folder.length > 64)
      fail(
        [{ file: 'SKILL.md', field: 'name', message: `is missing, and the folder name "${folder}" is not a skill name (lowercase letters, digits, hyphens)` }],
        `it has no name, and its folder name "${folder}" cannot stand in for one`,
      );
    name = folder;
    warnings.push({ file: 'SKILL.md', line: 1, field: 'name', message: `is missing: the folder name "${folder}" is used` });
  } else if (name !== folder)
    fail(
      [{ file: 'SKILL.md', field: 'name', message: `is "${name}" but must equal its folder name "${folder}"` }],
      `its name "${name}" must equal its folder name "${folder}"`,
    );
  if (data.description.length > DESCRIPTION_LIMIT)
    warn(
      'description',
      `has ${data.description.length} characters, over the Agent Skills limit of ${DESCRIPTION_LIMIT}: listings and the model's skill index show it cut; read_skill gives it whole`,
    );
  if (typeof data.compatibility === 'string' && data.compatibility.length > COMPATIBILITY_LIMIT)
    warn('compatibility', `has ${data.compatibility.length} characters, over the Agent Skills limit of ${COMPATIBILITY_LIMIT}`);
  const otherKeys: Record<string, unknown> = {};
  for (const key of Object.keys(data)) {
    if (KNOWN_KEYS.has(key)) continue;
    otherKeys[key] = data[key];
    warn(key, 'is not a key this project reads: it is kept and shown, and changes nothing');
  }

  const tools: Skill['tools'] = [];
  const problems: Problem[] = [];
  const texts: string[] = [];
  for (const decl of data.tools ?? []) {
    const found: Array<{ field: string; message: string }> = [];
    let template: TemplateToken[] = [];
    let scriptPath: string | undefined;
    if (decl.script !== undefined) {
      try {
        scriptPath = resolveScript(dir, decl.script);
      } catch (err) {
        found.push({ field: 'script', message: (err as Error).message });
      }
      if (Object.hasOwn(decl.parameters.properties ?? {}, SCRIPT_PLACEHOLDER))
        found.push({ field: 'parameters', message: `"${SCRIPT_PLACEHOLDER}" is the bundled script's placeholder and cannot be a parameter` });
    }
    try {
      template = parseTemplate(decl.command);
      const reserved = decl.script !== undefined ? [SCRIPT_PLACEHOLDER] : [];
      for (const p of templateProblems(template, decl.parameters, reserved)) found.push({ field: 'command', message: p });
      if (decl.script !== undefined && !template.some((t) => t.some((part) => 'param' in part && part.param === SCRIPT_PLACEHOLDER)))
        found.push({ field: 'command', message: `names no {${SCRIPT_PLACEHOLDER}}, so the script it declares would never run` });
    } catch (err) {
      found.push({ field: 'command', message: (err as Error).message });
    }
    for (const p of decl.paths ?? [])
      if (!Object.hasOwn(decl.parameters.properties ?? {}, p)) found.push({ field: 'paths', message: `paths names "${p}", which is not a parameter` });
    try {
      // Checked now (a plain schema without a compilation), compiled when the tool is first called.
      if (schemas) schemas.check(decl.parameters);
      else compileSchema(decl.parameters);
    } catch (err) {
      found.push({ field: 'parameters', message: `its parameters schema cannot be compiled: ${(err as Error).message}` });
    }
    for (const f of found) problems.push({ file: 'SKILL.md', tool: decl.name, field: f.field, message: f.message });
    if (found.length) texts.push(`tool ${decl.name}: ${found.map((f) => f.message).join('; ')}`);
    else tools.push({ ...decl, template, ...(scriptPath ? { scriptPath } : {}) });
  }
  if (problems.length) fail(problems, texts.join('; '));

  const skill: Skill = { name, description: data.description, dir, body, tools, warnings };
  if (typeof data.license === 'string') skill.license = data.license;
  if (typeof data.compatibility === 'string') skill.compatibility = data.compatibility;
  if (data.metadata) skill.metadata = data.metadata as Record<string, string>;
  if (Object.keys(otherKeys).length) skill.otherKeys = otherKeys;
  skill.frontmatter = data;
  const allowed = data['allowed-tools'];
  if (allowed !== undefined) {
    skill.allowedTools = splitAllowedTools(allowed);
    skill.allowance = mapAllowedTools(skill.allowedTools, options.knownTool);
    for (const w of skill.allowance.warnings) warn('allowed-tools', w);
  }
  return skill;
}

/** The line in SKILL.md of a top-level front-matter key (the YAML starts on line 2), if found. */
function keyLine(yaml: string, key: string): number | undefined {
  const lines = yaml.split('\n');
  const quoted = key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`^(?:${quoted}|"${quoted}"|'${quoted}')\\s*:`);
  const i = lines.findIndex((l) => re.test(l));
  return i < 0 ? undefined : i + 2;
}

/**
 * A tool's bundled script: a regular file inside the skill folder, after every link is followed
 * (`../x`, an absolute path and a link pointing out are refused). Returns its real absolute path.
 * Checked at load and again before every run.
 */
export function resolveScript(dir: string, script: string): string {
  if (path.isAbsolute(script)) throw new Error(`"${script}" must be a path relative to the skill folder`);
  const realDir = fs.realpathSync.native(dir);
  let real: string;
  try {
    real = fs.realpathSync.native(path.resolve(dir, script));
  } catch (err) {
    throw new Error(`"${script}" cannot be found in the skill folder (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`, { cause: err });
  }
  const rel = path.relative(realDir, real);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel))
    throw new Error(`"${script}" leads outside the skill folder (to ${real})`);
  if (!fs.statSync(real).isFile()) throw new Error(`"${script}" is not a regular file`);
  return real;
}
