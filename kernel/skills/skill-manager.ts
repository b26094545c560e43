import { EventEmitter } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { toDisposable, type Disposable } from '../disposable.js';
import { MemoError } from '../errors.js';
import type { Logger } from '../logger.js';
import { inject, injectable } from '../di.js';
import * as T from '../tokens.js';
import { CommandJudge } from '../sandbox/command-judge.js';
import { assessCommand } from '../sandbox/command-assessment.js';
import { KernelState } from '../sandbox/kernel-state.js';
import { PathSandbox } from '../sandbox/path-sandbox.js';
import { runProcess } from '../sandbox/process-runner.js';
import type { Preview, ToolContext, ToolImplementation, ToolSpec } from '../tools/contract.js';
import { ToolRegistry, type PackDefinition } from '../tools/tool-registry.js';
import { FolderWatcher } from '../util/folder-watcher.js';
import { buildArgv, quoteArgv } from './command-template.js';
import { readSkill, type Skill } from './skill.js';

export interface SkillFolder {
  dir: string;
  source: 'builtin' | 'extra';
}

export interface SkillState {
  name: string;
  dir: string;
  source: SkillFolder['source'];
  status: 'loaded' | 'failed';
  error?: string;
  /** Set when the newest SKILL.md failed and the previous version stays in force. */
  reloadError?: string;
  skill?: Skill;
}

export const SKILL_TOOL_TIMEOUT_MS = 60_000;
const SKILL_OUTPUT_CAP = 64 * 1024;
const READ_FILE_CAP = 256 * 1024;
const FILE_LIST_CAP = 200;

/**
 * SKILL.md bundles: listed by name and description up front (progressive disclosure), read on
 * demand through `read_skill`, and their `tools:` registered as command tools behind the same
 * judge, permission gate and audit as `run_command`. Skills hot-load like packs.
 */
@injectable()
export class SkillManager {
  private readonly states = new Map<string, SkillState>();
  private readonly registrations = new Map<string, Disposable>();
  private folders: SkillFolder[] = [];
  private watcher: FolderWatcher | null = null;
  private readonly events = new EventEmitter();

  constructor(
    @inject(ToolRegistry) private readonly registry: ToolRegistry,
    @inject(CommandJudge) private readonly judge: CommandJudge,
    @inject(T.Logger) private readonly logger: Logger,
    @inject(KernelState) private readonly state?: KernelState,
  ) {}

  /** The kernel's own skill tools: `list_skills` and `read_skill`. */
  kernelPack(): PackDefinition {
    return {
      id: 'skills',
      name: 'Skills',
      version: '1.0.0',
      description: 'Lists the installed skills and reads their instructions and bundled files on demand.',
      source: 'kernel',
      tools: [
        {
          spec: {
            name: 'list_skills',
            description: 'List the installed skills: name, description and the command tools each adds. Read one with read_skill before following it.',
            parameters: { type: 'object', properties: {}, additionalProperties: false },
            danger: 'safe',
            effect: 'read',
          },
          impl: () => {
            const skills = this.loaded().map((s) => ({ name: s.name, description: s.description, tools: s.tools.map((t) => t.name) }));
            return { skills, summary: `${skills.length} skills` };
          },
        },
        {
          spec: {
            name: 'read_skill',
            description: "Read a skill's full instructions (SKILL.md body) and the list of files it bundles; with `file`, read one bundled text file instead.",
            parameters: {
              type: 'object',
              properties: {
                name: { type: 'string', description: 'The skill name, as list_skills gives it.' },
                file: { type: 'string', description: 'A file inside the skill folder, relative to it (optional).' },
              },
              required: ['name'],
              additionalProperties: false,
            },
            danger: 'safe',
            effect: 'read',
          },
          impl: (args) => this.readSkillTool(String(args.name), typeof args.file === 'string' ? args.file : undefined), // the schema makes file a string when given
        },
      ],
    };
  }

  loaded(): Skill[] {
    return [...this.states.values()]
      .filter((s) => s.status === 'loaded' && s.skill)
      .map((s) => s.skill!)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Called after a skill was loaded, reloaded or removed (the MCP server tells its clients). */
  onChange(listener: () => void): Disposable {
    this.events.on('change', listener);
    return toDisposable(() => this.events.off('change', listener));
  }

  list(): SkillState[] {
    return [...this.states.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): SkillState | undefined {
    return this.states.get(name);
  }

  load(folders: SkillFolder[]): Promise<SkillState[]> {
    this.folders.push(...folders);
    const out: SkillState[] = [];
    for (const folder of folders) {
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(folder.dir, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
        if (e.isDirectory() && !e.name.startsWith('.')) out.push(this.loadOne(path.join(folder.dir, e.name), folder.source));
      }
    }
    return Promise.resolve(out);
  }

  private loadOne(dir: string, source: SkillFolder['source']): SkillState {
    const name = path.basename(dir);
    const previous = this.states.get(name);
    if (previous && previous.dir !== dir && previous.status === 'loaded') {
      const error = `a skill named "${name}" is already loaded from ${previous.dir}`;
      this.logger.warn(`skill ${name} (${dir}) was skipped: ${error}`);
      return { name, dir, source, status: 'failed', error };
    }
    let state: SkillState;
    try {
      const skill = readSkill(dir, this.registry.schemas);
      const def = this.packFor(skill);
      const had = this.registrations.get(name);
      if (def) this.registrations.set(name, had ? this.registry.replacePack(def) : this.registry.registerPack(def));
      else if (had) {
        had.dispose();
        this.registrations.delete(name);
      }
      state = { name, dir, source, status: 'loaded', skill };
    } catch (err) {
      const error = (err as Error).message;
      if (previous?.status === 'loaded' && previous.dir === dir) {
        this.logger.warn(`skill ${name} did not reload (${error}); the previous version stays in force`);
        const kept = { ...previous, reloadError: error };
        this.states.set(name, kept);
        return kept;
      }
      this.logger.warn(`skill ${name} (${dir}) was skipped: ${error}`);
      state = { name, dir, source, status: 'failed', error };
    }
    this.states.set(name, state);
    this.events.emit('change');
    return state;
  }

  private unload(name: string): void {
    this.registrations.get(name)?.dispose();
    this.registrations.delete(name);
    this.states.delete(name);
    this.events.emit('change');
  }

  /** A registry pack for a skill's command tools, or null when it has none. */
  private packFor(skill: Skill): PackDefinition | null {
    if (skill.tools.length === 0) return null;
    return {
      id: `skill-${skill.name}`,
      name: `Skill: ${skill.name}`,
      version: skill.metadata?.version ?? '0.0.0',
      description: skill.description,
      source: 'skill',
      dir: skill.dir,
      tools: skill.tools.map((decl) => {
        // A command run in the skill's own folder reads its bundled files there: that folder (and
        // only it) is not kernel state for this tool's judge.
        const judge = decl.cwd === 'skill' && this.state ? new CommandJudge(this.state.except(skill.dir)) : this.judge;
        const spec: ToolSpec = {
          name: decl.name,
          description: `${decl.description}\n(Runs: ${decl.command})`,
          parameters: decl.parameters,
          danger: decl.danger ?? 'dangerous',
          effect: decl.effect ?? 'write',
          timeoutMs: decl.timeoutMs ?? SKILL_TOOL_TIMEOUT_MS,
          ...(decl.sensitiveArgs ? { sensitiveArgs: decl.sensitiveArgs } : {}),
          ...(decl.confirm ? { confirm: decl.confirm } : {}),
          ...(decl.openWorld !== undefined ? { openWorld: decl.openWorld } : {}),
        };
        const prepare = async (args: Record<string, unknown>, ctx: ToolContext) => {
          const values: Record<string, string> = {};
          for (const [k, v] of Object.entries(args)) {
            if (typeof v === 'object' && v !== null) continue;
            // A command can do anything with a path: resolved as a write (`.git` and kernel state refused).
            values[k] = decl.paths?.includes(k) ? (await ctx.sandbox.resolve(String(v), 'write')).real : String(v);
          }
          let argv: string[];
          try {
            argv = buildArgv(decl.template, values);
          } catch (err) {
            throw new MemoError('VALIDATION', `${decl.name}: ${(err as Error).message}.`);
          }
          return { argv, display: quoteArgv(argv), cwd: decl.cwd === 'skill' ? skill.dir : ctx.root };
        };
        const impl: ToolImplementation = {
          // The same judge as run_command, before anyone is asked: a skill cannot reopen what the blacklist closes.
          assess: async (args, ctx) => {
            const p = await prepare(args, ctx);
            return assessCommand(judge, p.display, { cwd: p.cwd });
          },
          preview: async (args, ctx): Promise<Preview> => {
            const p = await prepare(args, ctx);
            return { kind: 'command', text: `$ ${p.display}\n(in ${p.cwd}, from skill ${skill.name})` };
          },
          run: async (args, ctx) => {
            const p = await prepare(args, ctx);
            // Judged again at run time, against the file system as it is now.
            await assessCommand(judge, p.display, { cwd: p.cwd });
            const r = await runProcess(p.argv, {
              cwd: p.cwd,
              signal: ctx.signal,
              timeoutMs: (spec.timeoutMs ?? SKILL_TOOL_TIMEOUT_MS) + 1000,
              maxOutputBytes: SKILL_OUTPUT_CAP,
            });
            return {
              command: p.display,
              exitCode: r.exitCode,
              stdout: r.stdout,
              stderr: r.stderr,
              truncated: r.truncated,
              summary: `exit ${r.exitCode ?? r.signal}${r.truncated ? ', output cut' : ''}`,
            };
          },
        };
        return { spec, impl };
      }),
    };
  }

  private async readSkillTool(name: string, file: string | undefined): Promise<unknown> {
    const skill = this.states.get(name)?.skill;
    if (!skill) throw new MemoError('NOT_FOUND', `There is no skill named "${name}" (list_skills shows the installed ones).`);
    const box = new PathSandbox(skill.dir);
    if (file !== undefined) {
      const { handle, size } = await box.openForRead(file);
      try {
        if (size > READ_FILE_CAP) throw new MemoError('VALIDATION', `${file} is ${size} bytes; read_skill returns files up to ${READ_FILE_CAP} bytes.`);
        const content = await handle.readFile('utf8');
        return { name, file, content, summary: `${name}/${file}: ${size} bytes` };
      } finally {
        await handle.close();
      }
    }
    const files: string[] = [];
    const walk = (dir: string, rel: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
        if (files.length >= FILE_LIST_CAP) return;
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) walk(path.join(dir, e.name), r);
        else if (e.isFile()) files.push(r);
      }
    };
    walk(skill.dir, '');
    return {
      name,
      description: skill.description,
      instructions: skill.body,
      files,
      filesTruncated: files.length >= FILE_LIST_CAP,
      tools: skill.tools.map((t) => ({ name: t.name, description: t.description, command: t.command })),
      ...(skill.allowedTools ? { allowedTools: skill.allowedTools } : {}),
      summary: `skill ${name}: ${skill.body.length} chars, ${files.length} files`,
    };
  }

  async watch(): Promise<void> {
    if (this.watcher) return;
    this.watcher = new FolderWatcher(this.logger, (dir, parent) => {
      const folder = this.folders.find((f) => path.resolve(f.dir) === parent);
      if (!folder) return;
      const name = path.basename(dir);
      if (!fs.existsSync(dir)) {
        if (this.states.get(name)?.dir === dir) this.unload(name);
        return;
      }
      this.loadOne(dir, folder.source);
    });
    await this.watcher.watch(this.folders.map((f) => path.resolve(f.dir)));
  }

  async idle(): Promise<void> {
    await this.watcher?.idle();
  }

  async close(): Promise<void> {
    await this.watcher?.close();
    this.watcher = null;
    for (const d of this.registrations.values()) d.dispose();
    this.registrations.clear();
  }
}
