/**
 * Checks a pack or a skill folder as the kernel would load it (manifest schema, code import, handlers
 * against declarations, parameter and settings schemas, generated types), registering nothing, and
 * collects every problem instead of stopping at the first: what `memo plugins validate` and `memo
 * skills validate` print.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SchemaCompiler } from '../tools/schemas.js';
import { readSkill } from '../skills/skill.js';
import type { PackManifest } from './manifest.js';
import { checkManifest, loadPackCode } from './pack-loader.js';
import { problemsOf, type Problem } from './pack-problems.js';
import { resolveConfig } from './pack-settings.js';
import { TOOL_ARGS_FILE, toolArgsCurrent } from './tool-types.js';

export interface PackCheck {
  manifest: PackManifest | null;
  problems: Problem[];
  /** What loads but serves the pack poorly (keywords that add nothing to tool search); no exit code. */
  warnings: Problem[];
}

/** A word as tool search would compare it: lowercase, a plural `s` dropped. */
const wordOf = (w: string) => w.toLowerCase().replace(/(?<=..)s$/, '');

/**
 * Keywords that only repeat words of their tool's own name (`events` for get_calendar_events): tool
 * search already matches the name, so they add nothing. One warning per tool, naming them.
 */
export function keywordWarnings(tools: ReadonlyArray<{ name: string; keywords?: unknown }>): Problem[] {
  const out: Problem[] = [];
  for (const t of tools) {
    if (!Array.isArray(t.keywords)) continue;
    const named = new Set(
      t.name
        .split(/[^A-Za-z0-9]+/)
        .filter(Boolean)
        .map(wordOf),
    );
    const repeats = t.keywords.filter((k): k is string => {
      if (typeof k !== 'string') return false;
      const words = k.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
      return words.length > 0 && words.every((w) => named.has(wordOf(w)));
    });
    if (repeats.length)
      out.push({
        file: 'plugin.json',
        tool: t.name,
        field: 'keywords',
        message: `${repeats.map((k) => JSON.stringify(k)).join(', ')} only repeat${repeats.length === 1 ? 's' : ''} words of its name (tool search matches the name already): give other words a person would use`,
      });
  }
  return out;
}

/** Each check imports the code afresh (ESM caches by URL): versions far from the pack manager's. */
let importVersion = 1_000_000;

function usableTools(raw: unknown): PackManifest['tools'] {
  const tools = (raw as { tools?: unknown } | null)?.tools;
  if (!Array.isArray(tools)) return [];
  return tools.filter((t): t is PackManifest['tools'][number] => typeof (t as { name?: unknown } | null)?.name === 'string');
}

export async function checkPackFolder(dir: string): Promise<PackCheck> {
  const schemas = new SchemaCompiler();
  const { raw, manifest, problems } = checkManifest(dir);
  if (raw === null) return { manifest: null, problems, warnings: [] };
  const r = raw as Partial<PackManifest>;
  const tools = usableTools(raw);

  const seen = new Set<string>();
  for (const t of tools) {
    if (seen.has(t.name)) problems.push({ file: 'plugin.json', tool: t.name, message: 'is declared twice' });
    seen.add(t.name);
    if (typeof t.parameters !== 'object' || t.parameters === null) continue;
    try {
      schemas.compile(t.parameters);
    } catch (err) {
      problems.push({ file: 'plugin.json', tool: t.name, field: 'parameters', message: `cannot be compiled: ${(err as Error).message}` });
    }
  }
  if (r.config !== undefined && typeof r.config === 'object' && r.config !== null) {
    try {
      resolveConfig(String(r.id), r.config, {}, schemas);
    } catch (err) {
      problems.push({ file: 'plugin.json', field: 'config', message: `its defaults do not satisfy it: ${(err as Error).message}` });
    }
  }

  // The code is imported only from where the manifest may point (a main the schema accepts).
  const mainOk = typeof r.main === 'string' && !problems.some((p) => p.field === 'main');
  const mainFile = mainOk ? path.resolve(dir, r.main!) : '';
  const source = mainFile.replace(/\.m?js$/, '.ts');
  if (mainOk && !fs.existsSync(mainFile) && source !== mainFile && fs.existsSync(source)) {
    // A TypeScript pack before its build: importing index.ts would fail for another reason.
    problems.push({ file: r.main!, message: `does not exist: build it from ${path.relative(dir, source)} (e.g. npx tsc)` });
  } else if (mainOk) {
    try {
      const { tools: paired } = await loadPackCode(dir, { ...(raw as PackManifest), tools }, ++importVersion);
      for (const { spec, impl } of paired) {
        const run = typeof impl === 'function' ? impl : (impl as { run?: unknown } | null)?.run;
        if (typeof run !== 'function')
          problems.push({ file: r.main!, tool: spec.name, message: 'has a handler that is neither a function nor an object with a run function' });
      }
    } catch (err) {
      problems.push(...problemsOf(err, r.main!));
    }
  }

  const argsFile = path.join(dir, TOOL_ARGS_FILE);
  if (fs.existsSync(argsFile) && !toolArgsCurrent(fs.readFileSync(argsFile, 'utf8'), { tools }))
    problems.push({ file: TOOL_ARGS_FILE, message: `is out of date with plugin.json: run memo plugins types ${dir}` });

  return { manifest: problems.length ? null : manifest, problems, warnings: keywordWarnings(tools) };
}

export function checkSkillFolder(dir: string): { name: string | null; tools: string[]; problems: Problem[]; warnings: Problem[] } {
  try {
    const skill = readSkill(dir, new SchemaCompiler());
    return { name: skill.name, tools: skill.tools.map((t) => t.name), problems: [], warnings: skill.warnings };
  } catch (err) {
    return { name: null, tools: [], problems: problemsOf(err, 'SKILL.md'), warnings: [] };
  }
}
