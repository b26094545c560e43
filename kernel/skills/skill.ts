import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Danger, Effect, JsonSchema } from '../tools/contract.js';
import { createAjv, describeAjvErrors } from '../tools/tool-registry.js';
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
      items: {
        type: 'object',
        required: ['name', 'description', 'parameters', 'command'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
          description: { type: 'string', minLength: 1, maxLength: 4096 },
          parameters: { type: 'object', required: ['type'], properties: { type: { const: 'object' } } },
          command: { type: 'string', minLength: 1 },
          danger: { enum: ['medium', 'dangerous'] },
          effect: { enum: ['read', 'write', 'delete'] },
          timeoutMs: { type: 'integer', minimum: 1, maximum: 3_600_000 },
          cwd: { enum: ['root', 'skill'] },
          paths: { type: 'array', items: { type: 'string' } },
        },
      },
    },
  },
} as const;

const validateFrontmatter = createAjv().compile(FRONTMATTER_SCHEMA);

/** Splits `---\nyaml\n---\nbody`; throws if the file does not open with frontmatter. */
function splitFrontmatter(text: string): { yaml: string; body: string } {
  const normalized = text.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  if (!normalized.startsWith('---\n')) throw new Error('SKILL.md must start with YAML frontmatter between "---" lines');
  const end = normalized.indexOf('\n---', 4);
  if (end < 0) throw new Error('the frontmatter is not closed by a "---" line');
  const after = normalized.indexOf('\n', end + 4);
  return { yaml: normalized.slice(4, end), body: after < 0 ? '' : normalized.slice(after + 1) };
}

/** Reads and validates `<dir>/SKILL.md`. Throws an Error that says what is wrong. */
export function readSkill(dir: string): Skill {
  const file = path.join(dir, 'SKILL.md');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(code === 'ENOENT' ? 'has no SKILL.md' : `SKILL.md cannot be read (${code})`, { cause: err });
  }
  const { yaml, body } = splitFrontmatter(text);
  let fm: unknown;
  try {
    fm = parseYaml(yaml);
  } catch (err) {
    throw new Error(`the frontmatter is not valid YAML: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
  if (!validateFrontmatter(fm)) throw new Error(`the frontmatter is invalid: ${describeAjvErrors(validateFrontmatter.errors).join('; ')}`);
  const data = fm as Record<string, unknown> & { name: string; description: string; tools?: SkillToolDecl[]; 'allowed-tools'?: string | string[] };
  const folder = path.basename(dir);
  if (data.name !== folder) throw new Error(`its name "${data.name}" must equal its folder name "${folder}"`);

  const tools: Skill['tools'] = [];
  for (const decl of data.tools ?? []) {
    let template: TemplateToken[];
    try {
      template = parseTemplate(decl.command);
    } catch (err) {
      throw new Error(`tool ${decl.name}: its command ${(err as Error).message}`, { cause: err });
    }
    const problems = templateProblems(template, decl.parameters);
    for (const p of decl.paths ?? []) if (!Object.hasOwn(decl.parameters.properties ?? {}, p)) problems.push(`paths names "${p}", which is not a parameter`);
    if (problems.length) throw new Error(`tool ${decl.name}: ${problems.join('; ')}`);
    try {
      createAjv().compile(decl.parameters);
    } catch (err) {
      throw new Error(`tool ${decl.name}: its parameters schema cannot be compiled: ${(err as Error).message}`, { cause: err });
    }
    tools.push({ ...decl, template });
  }

  const skill: Skill = { name: data.name, description: data.description, dir, body, tools };
  if (typeof data.license === 'string') skill.license = data.license;
  if (typeof data.compatibility === 'string') skill.compatibility = data.compatibility;
  if (data.metadata) skill.metadata = data.metadata as Record<string, string>;
  const allowed = data['allowed-tools'];
  if (allowed !== undefined) skill.allowedTools = Array.isArray(allowed) ? allowed : allowed.split(/\s+/).filter(Boolean);
  return skill;
}
