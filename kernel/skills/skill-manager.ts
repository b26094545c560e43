import { EventEmitter } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { toDisposable, type Disposable } from '../disposable.js';
import { MemoError } from '../errors.js';
import { Logger } from '../logger.js';
import { describeProblem, type Problem } from '../packs/pack-problems.js';
import { inject, injectable } from '../di.js';
import { CommandJudge } from '../sandbox/command-judge.js';
import { assessCommand, judgeCommand } from '../sandbox/command-assessment.js';
import { KernelState } from '../sandbox/kernel-state.js';
import { loadParser } from '../sandbox/judge/parser.js';
import { PathSandbox } from '../sandbox/path-sandbox.js';
import { runProcess, runSummary } from '../sandbox/process-runner.js';
import type { Caller, Preview, ToolContext, ToolImplementation, ToolSpec } from '../tools/contract.js';
import type { CallGuard } from '../tools/tool-pipeline.js';
import { ToolRegistry, type PackDefinition } from '../tools/tool-registry.js';
import { FolderWatcher } from '../util/folder-watcher.js';
import { ALWAYS_ALLOWED, commandOutside } from './allowed-tools.js';
import { buildArgv, quoteArgv } from './command-template.js';
import { readSkill, resolveScript, SCRIPT_PLACEHOLDER, type Skill } from './skill.js';
import { oneLine } from './skill-index.js';

export interface SkillFolder {
  dir: string;
  /** `opt-in`: a folder a person named (`memo skills folders add`), e.g. a project's `.claude/skills`. */
  source: 'builtin' | 'extra' | 'opt-in';
}

export interface SkillState {
  name: string;
  dir: string;
  source: SkillFolder['source'];
  status: 'loaded' | 'failed';
  error?: string;
  /** Set when the newest SKILL.md failed and the previous version stays in force. */
  reloadError?: string;
  /** What is off-spec but harmless in a loaded skill, each located in SKILL.md. */
  warnings?: Problem[];
  skill?: Skill;
}

export const SKILL_TOOL_TIMEOUT_MS = 60_000;
const SKILL_OUTPUT_CAP = 64 * 1024;
const READ_FILE_CAP = 256 * 1024;
const FILE_LIST_CAP = 200;
/**
 * How many running turns may follow skills at once. Turns are forgotten when they end (endTurn);
 * past the cap a new activation is refused rather than an older turn forgotten, since a forgotten
 * turn would be unrestricted.
 */
export const ACTIVE_TURNS_CAP = 1000;

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
  /**
   * Which skills with `allowed-tools` each running agent turn has read (activated). The agent loop
   * ends a turn's entry when the turn ends (endTurn), whatever way it ends.
   */
  private readonly activations = new Map<string, Skill[]>();
  /** The shell parser, loaded when a skill with Bash patterns is activated (the guard is synchronous). */
  private parser: Awaited<ReturnType<typeof loadParser>> | null = null;

  constructor(
    @inject(ToolRegistry) private readonly registry: ToolRegistry,
    @inject(CommandJudge) private readonly judge: CommandJudge,
    @inject(Logger) private readonly logger: Logger,
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
      // Reading skills touches nothing beyond the skill folders: Vault only offers them.
      modes: ['vault'],
      tools: [
        {
          spec: {
            name: 'list_skills',
            description: 'List the installed skills: name, description and the command tools each adds. Read one with read_skill before following it.',
            parameters: { type: 'object', properties: {}, additionalProperties: false },
            danger: 'safe',
            effect: 'read',
            keywords: ['abilities', 'capabilities', 'playbooks', 'recipes', 'know-how', 'guides'],
            examples: ['what skills do you have', 'which playbooks are installed'],
          },
          impl: () => {
            const skills = this.loaded().map((s) => ({ name: s.name, description: oneLine(s.description), tools: s.tools.map((t) => t.name) }));
            return { skills, summary: `${skills.length} skill${skills.length === 1 ? '' : 's'}` };
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
            keywords: ['playbook', 'how-to', 'guide', 'steps', 'procedure', 'open'],
            examples: ['show me the instructions of the git-history skill', 'how does that skill say to do it'],
          },
          // the schema makes file a string when given
          impl: (args, ctx) => this.readSkillTool(String(args.name), typeof args.file === 'string' ? args.file : undefined, ctx.caller),
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
      const skill = readSkill(dir, this.registry.schemas, { knownTool: (tool) => this.registry.get(tool) !== undefined });
      const def = this.packFor(skill);
      const had = this.registrations.get(name);
      if (def) this.registrations.set(name, had ? this.registry.replacePack(def) : this.registry.registerPack(def));
      else if (had) {
        had.dispose();
        this.registrations.delete(name);
      }
      state = { name, dir, source, status: 'loaded', skill, ...(skill.warnings.length ? { warnings: skill.warnings } : {}) };
      for (const w of skill.warnings) this.logger.warn(`skill ${name}: ${describeProblem(w)}`);
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
        // only it) is not kernel state for this tool's judge. A bundled script is passed by its real
        // path: that one file (and only it) is not kernel state either; the rest of the folder stays closed.
        let state = this.state;
        if (state && decl.cwd === 'skill') state = state.except(skill.dir);
        if (state && decl.scriptPath) state = state.except(decl.scriptPath);
        const judge = state && state !== this.state ? new CommandJudge(state) : this.judge;
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
          ...(decl.modes ? { modes: decl.modes } : {}),
          ...(decl.keywords ? { keywords: decl.keywords } : {}),
          ...(decl.examples ? { examples: decl.examples } : {}),
          ...(decl.editable !== undefined ? { editable: decl.editable } : {}),
        };
        const prepare = async (args: Record<string, unknown>, ctx: ToolContext) => {
          const values: Record<string, string> = {};
          for (const [k, v] of Object.entries(args)) {
            if (typeof v === 'object' && v !== null) continue;
            // A command can do anything with a path: resolved as a write (`.git` and kernel state refused).
            values[k] = decl.paths?.includes(k) ? (await ctx.sandbox.resolve(String(v), 'write')).real : String(v);
          }
          if (decl.script !== undefined) {
            // Checked again before every run: a link made since load could point out of the folder.
            let real: string;
            try {
              real = resolveScript(skill.dir, decl.script);
            } catch (err) {
              throw new MemoError('PATH_PROTECTED', `${decl.name}: the bundled script ${(err as Error).message}.`);
            }
            if (real !== decl.scriptPath)
              throw new MemoError(
                'PATH_PROTECTED',
                `${decl.name}: the bundled script "${decl.script}" now resolves to ${real}, not ${decl.scriptPath}; reload the skill.`,
              );
            values[SCRIPT_PLACEHOLDER] = real;
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
            // The command holds the caller's arguments: quoted after the facts, so none of its lines passes for one.
            return {
              kind: 'command',
              text: '',
              facts: [
                { label: 'runs in', value: p.cwd },
                { label: 'skill', value: `${skill.name}${decl.script !== undefined ? `, running its bundled ${decl.script}` : ''}` },
              ],
              quoted: [{ label: 'command', text: p.display, from: "the skill's template, filled with the caller's arguments" }],
            };
          },
          run: async (args, ctx) => {
            const p = await prepare(args, ctx);
            // Judged again at run time, against the file system as it is now. A network concern that
            // reaches here was answered yes by a person.
            const { network } = await judgeCommand(judge, p.display, { cwd: p.cwd });
            const r = await runProcess(p.argv, {
              cwd: p.cwd,
              signal: ctx.signal,
              timeoutMs: (spec.timeoutMs ?? SKILL_TOOL_TIMEOUT_MS) + 1000,
              maxOutputBytes: SKILL_OUTPUT_CAP,
              // The skill's own folder (its bundled scripts) is shown read-only inside the masked skill folders.
              sandbox: { writable: [ctx.root], reveal: [skill.dir], network },
            });
            return {
              command: p.display,
              exitCode: r.exitCode,
              stdout: r.stdout,
              stderr: r.stderr,
              truncated: r.truncated,
              summary: runSummary(r),
            };
          },
        };
        return { spec, impl };
      }),
    };
  }

  private async readSkillTool(name: string, file: string | undefined, caller: Caller): Promise<unknown> {
    const skill = this.states.get(name)?.skill;
    if (!skill) throw new MemoError('NOT_FOUND', `There is no skill named "${name}" (list_skills shows the installed ones).`);
    // Reading a skill in an agent turn, its instructions or any of its files (SKILL.md can be read as
    // a file too), activates it for the rest of that turn.
    if (caller.turn !== undefined && skill.allowance) await this.activate(caller.turn, skill);
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
      tools: skill.tools.map((t) => ({ name: t.name, description: t.description, command: t.command, ...(t.script ? { script: t.script } : {}) })),
      ...(skill.allowedTools
        ? {
            allowedTools: skill.allowedTools,
            allowedToolsNote:
              'While you follow this skill (for the rest of this turn), only these tools may be called, besides list_skills, read_skill and its own command tools; anything else is refused. Each call is still asked about as usual.',
          }
        : {}),
      ...(skill.otherKeys ? { otherKeys: skill.otherKeys } : {}),
      summary: `skill ${name}: ${skill.body.length} chars, ${files.length} files`,
    };
  }

  /** Records that `turn` follows `skill`; a turn that reads several skills is held to each of them. */
  private async activate(turn: string, skill: Skill): Promise<void> {
    const active = this.activations.get(turn);
    if (!active && this.activations.size >= ACTIVE_TURNS_CAP) {
      // Nothing is forgotten to make room (a forgotten turn would be unrestricted): the skill is not read.
      throw new MemoError(
        'RATE_LIMITED',
        `${ACTIVE_TURNS_CAP} running agent turns already follow skills; read ${skill.name} again when one of them has ended.`,
      );
    }
    this.activations.set(turn, [...(active ?? []).filter((s) => s.name !== skill.name), skill]);
    // Recorded first: if the parser cannot load, the guard refuses every command of the turn (fails closed).
    if (skill.allowance && skill.allowance.commands !== 'any' && skill.allowance.commands.length > 0 && !this.parser) {
      try {
        this.parser = await loadParser();
      } catch (err) {
        this.logger.warn(`the shell parser could not be loaded (${(err as Error).message}): skill ${skill.name} allows no command this turn`);
      }
    }
  }

  /** A turn has ended: the skills it followed no longer restrict anything (its id is never used again). */
  endTurn(turn: string): void {
    this.activations.delete(turn);
  }

  /** The skills a turn has activated (those with allowed-tools), in the order it read them. */
  activeSkills(turn: string): string[] {
    return (this.activations.get(turn) ?? []).map((s) => s.name);
  }

  /**
   * The kernel's call guard for `allowed-tools` (registered by createKernel): a call of a turn that
   * activated skills must be allowed by every one of them (the safe reading of two skills in one
   * turn: each only takes tools away). It never allows anything: an allowed call goes on to the gate.
   */
  readonly guard: CallGuard = {
    check: ({ tool, args, caller }) => {
      if (caller.turn === undefined || this.activations.size === 0) return;
      const active = this.activations.get(caller.turn);
      if (!active || ALWAYS_ALLOWED.includes(tool)) return;
      for (const skill of active) {
        const why = this.outside(skill, tool, args);
        if (why === null) continue;
        throw new MemoError(
          'PERMISSION_DENIED',
          `${tool} is refused: this turn follows the skill "${skill.name}", whose allowed-tools (${skill.allowance!.written.join(', ')}) ${why}. A skill's allowed-tools limits what may be called for the rest of the turn that read it; ask the person, or finish the turn.`,
          { details: { decision: 'deny:skill', skill: skill.name } },
        );
      }
    },
  };

  /** Null when `skill` allows the call; otherwise the end of the sentence saying why not. */
  private outside(skill: Skill, tool: string, args: Record<string, unknown>): string | null {
    const a = skill.allowance;
    if (!a || a.tools.has(tool) || skill.tools.some((t) => t.name === tool)) return null;
    if (tool !== 'run_command') return `do not include ${tool}`;
    if (a.commands === 'any') return null;
    if (a.commands.length === 0) return 'allow no shell command';
    // The parser was loaded when the skill was activated; without it nothing can be checked.
    if (!this.parser) return 'cannot be checked (the shell parser is not loaded)';
    const why = commandOutside(this.parser, typeof args.command === 'string' ? args.command : '', a.commands);
    return why === null ? null : `do not cover this command: ${why}`;
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
