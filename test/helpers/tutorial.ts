/**
 * A tutorial page run as a test: its fenced code blocks, in page order, are the steps a reader
 * takes, and each one runs as written, in a fresh folder, with `memo` on PATH (this checkout's
 * bin/memo). The page is the test's input, so a sample that drifts from the code fails here.
 *
 * How a block is read (the words after the language are ignored by VitePress's highlighter):
 *
 *   ```LANG [path]         writes `path` (relative to the current folder) with the block's text;
 *                          a later block with the same path replaces it, as the reader would
 *   ```sh  (or bash)       runs the block's commands with bash (`set -euo pipefail`) in the current
 *                          folder; a `cd` carries over to the next block; `exit=N` expects exit N
 *   ```sh background       starts the block's one command and leaves it running until `stop()`;
 *                          the `[output]` block after it is awaited in what it prints
 *   ```text [output]       what the block before printed: every line but `...` appears, in order
 *                          (spaces collapsed; a line matches anywhere inside a printed line, and
 *                          `...` inside a line stands for any text on that line: `(pid ...)`)
 *   ```LANG no-run         shown, not run; `noRun` lists them so a test can refuse any
 *
 * Any other block is an error: a sample nobody runs. `rewrite` lets a test replace a command it
 * cannot run here (an install from the registry) with one that has the same effect (a link to this
 * checkout); each rewrite is recorded in `rewritten` for the test to state.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from './cleanup.js';
import { tempDir } from './kernel-fixture.js';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');

export interface TutorialBlock {
  lang: string;
  /** The `[...]` label: a file's path, or `output`. */
  label?: string | undefined;
  words: string[];
  text: string;
  /** 1-based line of the opening fence in the page. */
  line: number;
}

/** Every fenced block of a Markdown page, in order (``` and ~~~ fences; nested fences are not used). */
export function tutorialBlocks(markdown: string): TutorialBlock[] {
  const blocks: TutorialBlock[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, info] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      if (lines[j]!.trim().startsWith(fence!) && lines[j]!.trim().replace(/[`~]/g, '') === '') break;
      body.push(lines[j]!.startsWith(indent!) ? lines[j]!.slice(indent!.length) : lines[j]!);
    }
    if (j === lines.length) throw new Error(`line ${i + 1}: a code fence is never closed`);
    const label = /\[([^\]]+)\]/.exec(info!)?.[1];
    const rest = info!
      .replace(/\[[^\]]*\]/, ' ')
      .trim()
      .split(/\s+/)
      .filter(Boolean);
    blocks.push({ lang: (rest[0] ?? '').replace(/[{:].*$/, ''), label, words: rest.slice(1), text: body.join('\n') + '\n', line: i + 1 });
    i = j;
  }
  return blocks;
}

/** The commands of a shell block: comment and blank lines dropped, `\` continuations joined. */
export function shellCommands(text: string): string[] {
  const out: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = pending ? raw.trim() : raw;
    if (!pending && (line.trim() === '' || line.trim().startsWith('#'))) continue;
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1).trimEnd() + ' ';
      continue;
    }
    out.push((pending + line).trim());
    pending = '';
  }
  if (pending) out.push(pending.trim());
  return out;
}

const collapse = (s: string) => s.replace(/[ \t]+/g, ' ').trim();

/** Where `expected` (an [output] block) is missing from `printed`, or null when every line is there in order. */
export function missingOutput(expected: string, printed: string): string | null {
  const haystack = printed.split('\n').map(collapse).join('\n');
  let from = 0;
  for (const want of expected.split('\n').map(collapse)) {
    if (want === '' || want === '...') continue;
    const pattern = new RegExp(
      want
        .split('...')
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^\\n]*?'),
      'g',
    );
    pattern.lastIndex = from;
    const found = pattern.exec(haystack);
    if (!found) return want;
    from = found.index + found[0].length;
  }
  return null;
}

/** The fields of an audit line the tutorial tests look at. */
export interface AuditLine {
  tool?: string;
  pack?: string;
  caller?: { kind: string };
  args?: Record<string, unknown>;
  decision?: string;
  outcome?: string;
  error?: { code: string };
  summary?: string;
}

/** The tool-call lines of a data folder's audit trail (its events left out), oldest first. */
export function auditCalls(dataDir: string): AuditLine[] {
  return fs
    .readFileSync(path.join(dataDir, 'agent-audit.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as AuditLine)
    .filter((e) => e.tool !== undefined);
}

export interface TutorialOptions {
  /** Extra environment for every command (a model server's URL). */
  env?: Record<string, string>;
  /** Replaces a command before it runs: return it unchanged, another command, or null to skip it. */
  rewrite?: (command: string) => string | null;
  /** Deadline for one shell block or one awaited output (default 120 s). */
  timeoutMs?: number;
}

export interface StepRecord {
  block: TutorialBlock;
  /** What a shell block printed (stdout and stderr, interleaved as they came). */
  output?: string;
  exitCode?: number | null;
}

export class Tutorial {
  readonly page: string;
  readonly blocks: TutorialBlock[];
  /** The folder the reader starts in (a fresh temp folder, removed when the test file ends). */
  readonly home: string;
  readonly steps: StepRecord[] = [];
  readonly rewritten: Array<{ from: string; to: string | null }> = [];
  readonly noRun: TutorialBlock[] = [];
  private cwd: string;
  private readonly background: ChildProcess[] = [];
  private readonly env: NodeJS.ProcessEnv;

  constructor(
    page: string,
    private readonly options: TutorialOptions = {},
  ) {
    this.page = path.resolve(ROOT, page);
    this.blocks = tutorialBlocks(fs.readFileSync(this.page, 'utf8'));
    const base = tempDir('memo-tutorial-');
    this.home = path.join(base, 'work');
    const bin = path.join(base, 'bin');
    fs.mkdirSync(this.home);
    fs.mkdirSync(path.join(base, 'home'));
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'memo'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(ROOT, 'bin', 'memo')}" "$@"\n`, { mode: 0o755 });
    this.cwd = this.home;
    this.env = {
      ...process.env,
      PATH: `${bin}${path.delimiter}${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
      HOME: path.join(base, 'home'),
      NODE_OPTIONS: '',
      // npm as a reader's would run, minus the network: a step that needs the registry fails here.
      npm_config_offline: 'true',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
      ...options.env,
    };
  }

  /** The folder the next step runs in. */
  get folder(): string {
    return this.cwd;
  }

  /** Runs every block in order; throws naming the page's line when a step fails. */
  async run(): Promise<this> {
    for (let i = 0; i < this.blocks.length; i++) {
      const block = this.blocks[i]!;
      const where = `${path.relative(ROOT, this.page)}:${block.line}`;
      if (block.words.includes('no-run')) {
        this.noRun.push(block);
        continue;
      }
      if (block.label === 'output') {
        const last = this.steps.at(-1);
        if (!last || last.output === undefined) throw new Error(`${where}: an [output] block follows no command`);
        const missing = missingOutput(block.text, last.output);
        if (missing !== null) throw new Error(`${where}: the command before printed no line with "${missing}". It printed:\n${last.output}`);
        continue;
      }
      if (block.lang === 'sh' || block.lang === 'bash') {
        if (block.words.includes('background')) {
          const next = this.blocks[i + 1];
          if (next?.label !== 'output') throw new Error(`${where}: a background command needs the [output] block it waits for`);
          this.steps.push({ block, output: await this.startBackground(block, next.text, where) });
          i++;
          continue;
        }
        const { output, exitCode } = await this.runShell(block, where);
        this.steps.push({ block, output, exitCode });
        continue;
      }
      if (block.label) {
        const file = path.resolve(this.cwd, block.label);
        if (!file.startsWith(this.home + path.sep)) throw new Error(`${where}: [${block.label}] is outside the tutorial's folder`);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, block.text);
        this.steps.push({ block });
        continue;
      }
      throw new Error(`${where}: a \`\`\`${block.lang} block that is neither a file ([path]), a command (sh) nor [output]: mark it no-run or give it a path`);
    }
    return this;
  }

  /** Every background command, stopped (SIGTERM, then SIGKILL after 10 s). */
  async stop(): Promise<void> {
    await Promise.all(
      this.background.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  private script(block: TutorialBlock): string {
    const commands: string[] = [];
    for (const command of shellCommands(block.text)) {
      const to = this.options.rewrite ? this.options.rewrite(command) : command;
      if (to !== command) this.rewritten.push({ from: command, to });
      if (to !== null) commands.push(to);
    }
    return commands.join('\n');
  }

  private runShell(block: TutorialBlock, where: string): Promise<{ output: string; exitCode: number | null }> {
    const expected = Number(/^exit=(\d+)$/.exec(block.words.find((w) => w.startsWith('exit=')) ?? '')?.[1] ?? 0);
    const cwdFile = path.join(path.dirname(this.home), '.cwd');
    // The folder the block ends in is the next block's: `cd` carries over as it does for a reader.
    const script = `set -euo pipefail\ntrap 'pwd > "${cwdFile}"' EXIT\n${this.script(block)}\n`;
    return new Promise((resolve, reject) => {
      const child = killWhenDone(spawn('bash', ['-c', script], { cwd: this.cwd, env: this.env, stdio: ['ignore', 'pipe', 'pipe'] }));
      let output = '';
      child.stdout.on('data', (d) => (output += d));
      child.stderr.on('data', (d) => (output += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), this.options.timeoutMs ?? 120_000);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        try {
          this.cwd = fs.readFileSync(cwdFile, 'utf8').trim() || this.cwd;
        } catch {
          /* the shell died before its trap: keep the folder */
        }
        if (code !== expected) reject(new Error(`${where}: the commands exited ${code} (expected ${expected}):\n${script}\n--- printed:\n${output}`));
        else resolve({ output, exitCode: code });
      });
    });
  }

  private startBackground(block: TutorialBlock, awaited: string, where: string): Promise<string> {
    const commands = this.script(block).split('\n').filter(Boolean);
    if (commands.length !== 1) throw new Error(`${where}: a background block holds exactly one command`);
    const child = killWhenDone(spawn('bash', ['-c', `exec ${commands[0]}`], { cwd: this.cwd, env: this.env, stdio: ['ignore', 'pipe', 'pipe'] }));
    this.background.push(child);
    let output = '';
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${where}: "${commands[0]}" did not print the [output] lines in time:\n${output}`)),
        this.options.timeoutMs ?? 120_000,
      );
      const check = (d: Buffer) => {
        output += d.toString();
        if (missingOutput(awaited, output) === null) {
          clearTimeout(timer);
          resolve(output);
        }
      };
      child.stdout.on('data', check);
      child.stderr.on('data', check);
      child.on('exit', (code) => {
        clearTimeout(timer);
        if (missingOutput(awaited, output) !== null)
          reject(new Error(`${where}: "${commands[0]}" exited ${code} before printing the [output] lines:\n${output}`));
      });
    });
  }
}
