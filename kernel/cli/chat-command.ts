import * as readline from 'node:readline';
import type { Command } from 'commander';
import { cliRecorded } from './admin-record.js';
import type { AgentEvent, AgentStep } from '../agent/agent-loop.js';
import { readAttachment, type Attachment } from '../agent/chat-attachments.js';
import { compactConversation, runChatTurn, type ChatTurnResult } from '../agent/chat-turn.js';
import { isLocalProvider } from '../agent/capability-probe.js';
import type { ModelProvider, ProviderConfig, ProviderConfigurationService } from '../providers/provider.js';
import { fallbackTitle } from '../agent/conversation-title.js';
import { describeProvider, ProviderSettings } from '../providers/provider-settings.js';
import { withCommandStore } from '../state/command-store.js';
import { SystemClock } from '../clock.js';
import { isMemoError } from '../errors.js';
import { StderrLogger } from '../logger.js';
import type { Kernel } from '../kernel.js';
import { approvalDisplay, displayLines, visibleLine } from '../control/preview-format.js';
import {
  ApprovalWithdrawn,
  FixedAnswerPrompter,
  type ApprovalFace,
  isPermissionAnswer,
  ANSWER_HELP,
  type PermissionAnswer,
  type PermissionRequest,
  type Prompter,
} from '../permissions/prompter.js';
import * as path from 'node:path';
import { BACKENDS, isBackendId, type AccessMode, type BackendId, type Effort } from '../agent/cli-backends/backends.js';
import { CliBackends, isCliBackendProvider } from '../agent/cli-backends/cli-turn.js';
import { loopbackEndpoint } from '../mcp/mcp-http-server.js';
import type { Detection } from '../agent/cli-backends/cli-detector.js';
import { systemPrompt } from '../agent/system-prompt.js';
import type { AccessMode as TurnMode } from '../tools/contract.js';
import { isAccessMode, modeCommand, modeLine, modeTools, MODE_NAMES } from './chat-modes.js';

/** What main.ts lends this module: booting, printing and the exit code. */
export interface CliContext {
  boot(prompter: Prompter): Promise<Kernel>;
  dataDir(): string;
  setExit(code: number): void;
  usage(message: string): Error;
  notFound(message: string): Error;
}

function shortArgs(args: Record<string, unknown>): string {
  const first = Object.values(args)[0];
  if (first === undefined) return '';
  const text = typeof first === 'string' ? first : JSON.stringify(first);
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 37)}…` : text);
}

function stepLine(step: AgentStep): string {
  const outcome = step.outcome === 'ok' ? step.summary : `${step.code}: ${step.summary}`;
  return `  [${step.iteration}] ${step.tool}(${shortArgs(step.args)})\n      → ${outcome.replace(/\s+/g, ' ').slice(0, 100)} (${(step.durationMs / 1000).toFixed(2)}s)`;
}

interface ChatOptions {
  provider?: string;
  model?: string;
  web?: boolean;
  mode?: string;
  saveDefault?: boolean;
  prompt?: string;
  json?: boolean;
  approve?: string;
  resume?: string;
  baseUrl?: string;
  apiKeyEnv?: string;
  tools?: boolean;
  history?: string | true;
  rotateKey?: boolean;
  attach?: string[];
  backend?: string;
  backends?: boolean;
  computerAccess?: boolean;
  effort?: string;
  /** Set by the interactive chat: replies stream into the terminal as they arrive. */
  streamReplies?: boolean;
}

const EFFORTS: readonly Effort[] = ['low', 'medium', 'high'];

/** Web search only offers web_search alone, which a CLI (it has tools of its own) cannot be limited to: its turns are refused. */
const WEB_WITH_CLI = 'Web search only does not apply to a CLI backend: its turns are refused until /vault or /computer (or /backend off)';

/** How a turn's access reads in the transcript (seed 003: said plainly). */
function accessLine(access: AccessMode): string {
  return access === 'computer'
    ? "Computer access: the CLI's own file, shell and web tools are allowed this turn; those calls are not gated or audited by Memo"
    : "Vault only: the CLI's own file, shell and web tools are off; every tool call goes through Memo's gate and audit";
}

function detectionLine(d: Detection): string {
  const spec = BACKENDS[d.backend];
  if (d.found) return `  ${spec.id.padEnd(7)}${spec.label}  ${d.version}  ${d.path}${d.cached ? '  (checked earlier)' : ''}`;
  return `  ${spec.id.padEnd(7)}${spec.label}  not detected: ${d.reason}
         set up: install it, then ${spec.signIn}`;
}

/** The provider configuration a chat uses: inline (`--base-url`), named, or the active one. */
function resolveConfig(opts: ChatOptions, settings: ProviderSettings, ctx: CliContext): ProviderConfig {
  if (opts.baseUrl) {
    if (!opts.provider) throw ctx.usage('--base-url needs --provider KIND (e.g. openai-compatible)');
    return {
      name: 'inline',
      kind: opts.provider,
      preset: 'custom',
      baseUrl: opts.baseUrl,
      ...(opts.model ? { model: opts.model } : {}),
      ...(opts.apiKeyEnv ? { apiKeyEnv: opts.apiKeyEnv } : {}),
    };
  }
  const config = opts.provider ? settings.get(opts.provider) : settings.active();
  if (!config)
    throw ctx.usage(
      opts.provider
        ? `There is no provider "${opts.provider}" (memo provider list).`
        : 'No provider is configured: add one with `memo provider add NAME --kind openai-compatible --preset openai --model gpt-4o --api-key-env OPENAI_API_KEY`, or pass one inline with --provider KIND --base-url URL --model M.',
    );
  return opts.model ? { ...config, model: opts.model } : config;
}

/** A prompter that asks on the chat's own readline: one reader of stdin at a time. */
class ChatPrompter implements ApprovalFace {
  readonly name = 'terminal';
  constructor(
    private readonly rl: readline.Interface,
    private readonly clock = new SystemClock(),
  ) {}
  ask(req: PermissionRequest, signal: AbortSignal): Promise<PermissionAnswer> {
    const keys: Array<[string, PermissionAnswer, string]> = [
      ['y', 'allow-once', 'allow once'],
      ['c', 'allow-conversation', 'in this chat'],
      ['s', 'allow-session', 'this session'],
      ['a', 'allow-forever', 'always'],
      ['n', 'deny-once', 'deny'],
      ['N', 'deny-forever', 'never'],
    ];
    // Only the answers that mean something for this call (no standing ones for deletes and judged commands).
    const offered = keys.filter(([, a]) => req.answers.includes(a));
    const out = process.stderr;
    out.write(`\n  ┌ ${visibleLine(req.tool)} wants to run (${req.danger}, ${req.effect})\n`);
    // The facts first, never cut; the body; what the model wrote last, quoted (see preview-format.ts).
    for (const line of displayLines(approvalDisplay(req), { bodyLines: 30 })) out.write(`  │ ${line}\n`);
    out.write(`  │ arguments: ${visibleLine(JSON.stringify(req.args) ?? 'none')}\n`);
    return new Promise((resolve) => {
      let done = false;
      const finish = (a: PermissionAnswer) => {
        if (done) return;
        done = true;
        signal.removeEventListener('abort', onAbort);
        resolve(a);
      };
      const onAbort = () => {
        const why = signal.reason instanceof ApprovalWithdrawn ? signal.reason : null;
        out.write(why?.why === 'answered' ? `\n  (${why.message})\n` : '\n  (denied: the turn stopped or the 60 s passed)\n');
        finish('deny-once');
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const ask = () => {
        const left = Math.max(0, Math.ceil((req.deadline - this.clock.now()) / 1000));
        // The signal withdraws the question too, so the next prompt is not swallowed by this one.
        this.rl.question(`  └ ${offered.map(([k, , l]) => `[${k}] ${l}`).join('  ')} (${left} s): `, { signal }, (line) => {
          if (done) return;
          const hit = offered.find(([k]) => k === line.trim());
          if (hit) finish(hit[1]);
          else ask();
        });
      };
      ask();
    });
  }
}

/** Runs `use` on the provider configurations (data/providers.json, or the shared database); what it changed is saved before this resolves. */
function withProviders<R>(ctx: CliContext, use: (settings: ProviderSettings) => R): Promise<R> {
  const logger = new StderrLogger();
  return withCommandStore(ctx.dataDir(), logger, (db) => new ProviderSettings(path.join(ctx.dataDir(), 'providers.json'), logger, db), use);
}

export function registerChatCommands(program: Command, ctx: CliContext): void {
  const provider = program.command('provider').description('model providers (data/providers.json)');
  provider
    .command('add <name>')
    .description('add or replace a provider configuration')
    .requiredOption('--kind <kind>', 'wire format: openai-compatible, anthropic, gemini')
    .option('--preset <preset>', 'openai, groq, openrouter, xai, opencode-zen, opencode-go, ollama, lmstudio, llamacpp, custom')
    .option('--base-url <url>', 'endpoint (required for custom)')
    .option('--model <model>', 'default model')
    .option('--api-key-env <VAR>', 'read the API key from this environment variable (preferred)')
    .option('--api-key-stdin', 'read the API key from standard input and store it (file mode 0600)')
    .option('--context-window <tokens>', 'the model window, if the pack does not know it')
    .action(
      async (
        name: string,
        o: { kind: string; preset?: string; baseUrl?: string; model?: string; apiKeyEnv?: string; apiKeyStdin?: boolean; contextWindow?: string },
      ) => {
        let apiKey: string | undefined;
        if (o.apiKeyStdin) {
          // Never from argv: arguments are visible to every process on the machine.
          apiKey = (
            await new Promise<string>((resolve) => {
              let s = '';
              process.stdin.on('data', (d: Buffer) => (s += d.toString('utf8'))).on('end', () => resolve(s));
            })
          ).trim();
          if (!apiKey) throw ctx.usage('--api-key-stdin read an empty key');
        }
        const cw = o.contextWindow === undefined ? undefined : Number(o.contextWindow);
        if (cw !== undefined && (!Number.isInteger(cw) || cw < 1024)) throw ctx.usage('--context-window must be a whole number of tokens (at least 1024)');
        let config: ProviderConfig = {
          name,
          kind: o.kind,
          ...(o.preset ? { preset: o.preset } : {}),
          ...(o.baseUrl ? { baseUrl: o.baseUrl } : {}),
          ...(o.model ? { model: o.model } : {}),
          ...(o.apiKeyEnv ? { apiKeyEnv: o.apiKeyEnv } : {}),
          ...(apiKey ? { apiKey } : {}),
          ...(cw ? { contextWindow: cw } : {}),
        };
        // The pack that owns the kind checks the configuration exactly as its configure_provider
        // tool does (unknown preset, a remote URL on a local preset, ...); kinds other packs
        // contribute are stored as given.
        const kernel = await ctx.boot(new FixedAnswerPrompter('deny-once'));
        try {
          const owner = kernel.shared.lookup<ProviderConfigurationService>('providers.configuration');
          if (owner?.kinds.includes(o.kind)) {
            const plan = owner.plan(config);
            config = plan.next;
            for (const w of plan.warnings) process.stderr.write(`memo: warning: ${w}\n`);
          }
        } catch (err) {
          if (isMemoError(err)) throw ctx.usage(err.message);
          throw err;
        } finally {
          await kernel.shutdown();
        }
        let active: string | undefined;
        try {
          const replaced = await withProviders(ctx, (settings) => settings.get(config.name) !== undefined);
          active = await cliRecorded(ctx, { action: 'provider.add', target: config.name, change: { ...config, ...(replaced ? { replaced: true } : {}) } }, () =>
            withProviders(ctx, (settings) => {
              settings.put(config);
              return settings.active()?.name;
            }),
          );
        } catch (err) {
          if (isMemoError(err)) throw ctx.usage(err.message);
          throw err;
        }
        process.stdout.write(`Stored provider ${name}${active === name ? ' (active)' : ''}.\n`);
      },
    );
  provider
    .command('list')
    .option('--json', 'print JSON')
    .description('configured providers, keys masked')
    .action(async (o: { json?: boolean }) => {
      const list = await withProviders(ctx, (settings) => settings.list().map((c) => describeProvider(c, settings.active()?.name)));
      if (o.json) return void process.stdout.write(JSON.stringify(list) + '\n');
      if (!list.length) return void process.stdout.write('No providers configured (memo provider add).\n');
      // describeProvider's fields are strings or absent; anything else is shown as JSON rather than [object Object].
      const text = (v: unknown, absent = ''): string => (v === undefined || v === null ? absent : typeof v === 'string' ? v : JSON.stringify(v));
      for (const p of list)
        process.stdout.write(
          `${p.active ? '*' : ' '} ${text(p.name)}  ${text(p.kind)}${p.preset ? `/${text(p.preset)}` : ''}  ${text(p.model, '-')}  ${text(p.baseUrl)}  key: ${text(p.apiKey)}\n`,
        );
    });
  provider
    .command('remove <name>')
    .description('remove a provider configuration')
    .action(async (name: string) => {
      if (!(await withProviders(ctx, (settings) => settings.get(name) !== undefined))) throw ctx.notFound(`There is no provider "${name}".`);
      await cliRecorded(ctx, { action: 'provider.remove', target: name }, () => withProviders(ctx, (settings) => settings.remove(name)));
      process.stdout.write(`Removed ${name}.\n`);
    });
  provider
    .command('use <name>')
    .description('make a provider the active one')
    .action(async (name: string) => {
      try {
        await withProviders(ctx, (settings) => {
          if (!settings.get(name)) settings.use(name); // NOT_FOUND, saying so, before anything is recorded
        });
      } catch (err) {
        throw ctx.notFound((err as Error).message);
      }
      await cliRecorded(ctx, { action: 'provider.use', target: name }, () => withProviders(ctx, (settings) => settings.use(name)));
      process.stdout.write(`${name} is now the active provider.\n`);
    });
  provider
    .command('probe [name]')
    .description("check (again) whether a provider's model can call tools")
    .option('--model <model>', 'the model to probe')
    .option('--json', 'print JSON')
    .action(async (name: string | undefined, o: { model?: string; json?: boolean }) => {
      const kernel = await ctx.boot(new FixedAnswerPrompter('deny-once'));
      try {
        const settings = kernel.providerSettings;
        const config = name ? settings.get(name) : settings.active();
        if (!config) throw ctx.notFound(name ? `There is no provider "${name}".` : 'No provider is configured.');
        const model = o.model ?? config.model;
        if (!model) throw ctx.usage('No model: pass --model.');
        const p = kernel.providers.create(config);
        const verdict = await kernel.probe
          .probe(p, config, model, { force: true })
          .catch((err: Error) => ({ toolCalling: false, reason: `unreachable: ${err.message}`, checkedAt: Date.now(), cached: false }));
        if (o.json) process.stdout.write(JSON.stringify({ provider: config.name, model, ...verdict }) + '\n');
        else process.stdout.write(`${config.name}/${model}: ${verdict.toolCalling ? 'can call tools' : `cannot call tools (${verdict.reason})`}\n`);
        ctx.setExit(verdict.toolCalling ? 0 : 1);
      } finally {
        await kernel.shutdown();
      }
    });

  program
    .command('chat')
    .description('chat with the agent in the terminal, or run one scripted turn with -p')
    .option('--provider <name>', 'a configured provider (or, with --base-url, a wire format)')
    .option('--model <model>', "the model (default: the provider's)")
    .option('--base-url <url>', 'inline provider endpoint')
    .option('--api-key-env <VAR>', 'inline provider key variable')
    .option(
      '--mode <mode>',
      'the access mode of the turns: vault (Vault only), computer (every enabled tool) or web (web_search alone); default: the stored one',
    )
    .option('--save-default', 'with --mode: store it as the default access mode of every chat (on the audit trail)')
    .option('--web', 'the same as --mode web')
    .option('--no-tools', 'chat without tools')
    .option('-p, --prompt <text>', 'run one turn without a terminal and print the answer')
    .option('--json', 'with -p: print the stop reason, each tool step and the answer as one JSON object')
    .option('--approve <answer>', `with -p: answer permission prompts with this (${ANSWER_HELP}); otherwise denied`)
    .option('--resume <id>', 'continue a stored conversation')
    .option(
      '--attach <path>',
      'attach a text file (inside the workspace root, read through the sandbox) to the message; repeatable',
      (v: string, all: string[] = []) => [...all, v],
    )
    .option('--history [words]', 'list recent conversations, or search your own (decrypted) history for these words, and exit')
    .option('--rotate-key', 'encrypt every stored conversation with a new key, drop the old one, and exit')
    .option('--backend <cli>', "run turns through an agent CLI: claude, codex or agy (Memo's tools reach it over MCP)")
    .option('--computer-access', 'with --backend: let the CLI use its own file, shell and web tools too (default: Vault only)')
    .option('--backends', "list the agent CLIs found on PATH (and the login shell's), with their versions, and exit")
    .option('--effort <level>', 'reasoning effort for models that have one: low, medium or high')
    .action(async (o: ChatOptions) => {
      if (o.approve !== undefined && !isPermissionAnswer(o.approve)) throw ctx.usage(`--approve must be one of ${ANSWER_HELP}`);
      if (o.backend !== undefined && !isBackendId(o.backend)) throw ctx.usage('--backend must be one of claude, codex, agy');
      if (o.effort !== undefined && !EFFORTS.includes(o.effort as Effort)) throw ctx.usage('--effort must be one of low, medium, high');
      if (o.computerAccess && !o.backend) throw ctx.usage('--computer-access applies to a CLI backend: add --backend claude|codex|agy');
      if (o.mode !== undefined && !isAccessMode(o.mode)) throw ctx.usage('--mode must be one of vault, computer, web');
      if (o.web && o.mode !== undefined && o.mode !== 'web') throw ctx.usage('--web is --mode web: give one of them');
      if (o.saveDefault && o.mode === undefined && !o.web) throw ctx.usage('--save-default stores the mode given with --mode');
      if (o.backends) return listBackends(o, ctx);
      if (o.history !== undefined || o.rotateKey) return housekeeping(o, ctx);
      if (o.prompt !== undefined) return scripted(o, ctx);
      if (!process.stdin.isTTY) throw ctx.usage('memo chat needs a terminal; use -p "<prompt>" for one scripted turn');
      return interactive(o, ctx);
    });
}

/** Lines for `/history [words]`: the recent conversations, or the hits of a search through them. */
async function historyLines(kernel: Kernel, words: string, current?: string): Promise<string[]> {
  const store = kernel.conversations;
  if (!words) return (await store.list(10)).map((c) => `${c.id === current ? '*' : ' '} ${c.id}  ${c.updatedAt}  ${c.messages} msgs  ${c.title}`);
  if (!store.search) return ['(this conversation store cannot search)'];
  const hits = await store.search(words, 20);
  if (hits.length === 0) return [`(nothing in your conversations matches "${words}")`];
  return hits.map((h) => `  ${h.conversationId}  ${h.title}${h.seq === null ? '  (title)' : `  #${h.seq} ${h.role}: ${h.snippet}`}`);
}

/** `--backends`: what detection finds, and how to set up what it does not. */
async function listBackends(o: ChatOptions, ctx: CliContext): Promise<void> {
  const kernel = await ctx.boot(new FixedAnswerPrompter('deny-once'));
  try {
    const found = await new CliBackends(kernel).detector.detectAll();
    if (o.json) process.stdout.write(JSON.stringify({ backends: found }) + '\n');
    else {
      process.stdout.write('Agent CLIs (memo chat --backend NAME):\n');
      for (const d of found) process.stdout.write(detectionLine(d) + '\n');
    }
  } finally {
    await kernel.shutdown();
  }
}

/** `--history` and `--rotate-key`: the conversation store only, no provider needed. */
async function housekeeping(o: ChatOptions, ctx: CliContext): Promise<void> {
  const kernel = await ctx.boot(new FixedAnswerPrompter('deny-once'));
  try {
    const store = kernel.conversations;
    if (o.rotateKey) {
      if (!store.rotateKey) throw ctx.usage('This conversation store does not support key rotation.');
      const r = await store.rotateKey();
      process.stdout.write(o.json ? JSON.stringify(r) + '\n' : `Conversations re-encrypted with key ${r.keyId} (${r.values} values); the old key is gone.\n`);
      return;
    }
    const words = typeof o.history === 'string' ? o.history : '';
    if (o.json) {
      const out = words ? { hits: store.search ? await store.search(words, 50) : [] } : { conversations: await store.list(50) };
      process.stdout.write(JSON.stringify(out) + '\n');
    } else for (const line of await historyLines(kernel, words)) process.stdout.write(line + '\n');
  } finally {
    await kernel.shutdown();
  }
}

interface Session {
  kernel: Kernel;
  provider: ModelProvider;
  config: ProviderConfig;
  model: string;
  toolsEnabled: boolean;
  warnings: string[];
  /** The access mode of the next turns (--mode, /vault, /computer, /web; /agent: the stored default). */
  mode: TurnMode;
  /** The agent CLIs, made on first use (`--backend`, `/backend`). */
  backends?: CliBackends;
  /** The provider the chat started with, to return to from a CLI backend (`/backend off`). */
  home?: { provider: ModelProvider; config: ProviderConfig; model: string };
}

/** Switches the session to an agent CLI backend. */
function useBackend(s: Session, id: BackendId, access: AccessMode, effort: Effort | undefined, model?: string): void {
  s.backends ??= new CliBackends(s.kernel, { start: () => loopbackEndpoint(s.kernel) });
  const provider = s.backends.provider(id, { access, ...(effort ? { effort } : {}) });
  s.provider = provider;
  s.config = { name: provider.name, kind: provider.kind };
  s.model = model ?? '';
  s.toolsEnabled = true;
}

async function open(o: ChatOptions, ctx: CliContext, prompter: Prompter): Promise<Session> {
  const kernel = await ctx.boot(prompter);
  const chosen = o.web ? 'web' : (o.mode as TurnMode | undefined);
  if (chosen && o.saveDefault) {
    try {
      await kernel.admin.setDefaultMode(chosen, 'cli');
    } catch (err) {
      await kernel.shutdown();
      throw err;
    }
    process.stderr.write(`memo: the default access mode is now ${MODE_NAMES[chosen]} (${chosen}).\n`);
  }
  if (o.backend) {
    // A CLI backend's Computer access lets its own tools run ungated: it is never a stored default's doing.
    const mode = chosen ?? (o.computerAccess ? 'computer' : 'vault');
    const s: Session = {
      kernel,
      provider: null as unknown as ModelProvider,
      config: { name: '', kind: '' },
      model: '',
      toolsEnabled: true,
      warnings: mode === 'web' ? [WEB_WITH_CLI] : [],
      mode,
    };
    useBackend(s, o.backend as BackendId, mode === 'computer' ? 'computer' : 'vault', o.effort as Effort | undefined, o.model);
    return s;
  }
  try {
    const config = resolveConfig(o, kernel.providerSettings, ctx);
    const model = o.model ?? config.model;
    if (!model) throw ctx.usage(`Provider ${config.name} has no default model: pass --model.`);
    let provider: ModelProvider;
    try {
      provider = kernel.providers.create(config);
    } catch (err) {
      throw ctx.usage((err as Error).message);
    }
    const warnings: string[] = [];
    let toolsEnabled = o.tools !== false;
    // The provider says so itself (its pack knows the presets), or the configuration does.
    if (toolsEnabled && (provider.local === true || isLocalProvider(config))) {
      try {
        const verdict = await kernel.probe.probe(provider, config, model);
        if (!verdict.toolCalling) {
          toolsEnabled = false;
          warnings.push(`${model} cannot call tools (${verdict.reason}): chatting without tools.`);
        }
      } catch (err) {
        throw ctx.notFound(`The local model could not be checked for tool calling: ${(err as Error).message}`);
      }
    }
    return { kernel, provider, config, model, toolsEnabled, warnings, mode: chosen ?? kernel.providerSettings.defaultMode() };
  } catch (err) {
    await kernel.shutdown();
    throw err;
  }
}

/** The transcript's notices for a turn: a compaction (seed 003 says so in the transcript) and a model switch. */
function notices(r: ChatTurnResult): string[] {
  const out: string[] = [];
  for (const m of r.mentions.references) out.push(`(@${m.mention} is the ${m.type} "${m.title}")`);
  for (const m of r.mentions.unresolved) out.push(`(@${m.mention} was sent as plain text: ${m.reason})`);
  if (r.switchedFrom)
    out.push(`(this conversation continues with another model; earlier replies came from ${r.switchedFrom.provider ?? '?'}/${r.switchedFrom.model ?? '?'})`);
  if (r.compaction) out.push(`(the ${r.compaction.replaced} oldest message(s) were compacted into a summary to fit the model's window)`);
  else if (r.compactionError) out.push(`(compacting the older conversation failed: ${r.compactionError})`);
  return out;
}

async function runOne(
  s: Session,
  o: ChatOptions,
  conversationId: string,
  prompt: string,
  signal: AbortSignal,
  onEvent?: (e: AgentEvent) => void,
  titleSignal?: AbortSignal,
  attachments: readonly Attachment[] = [],
): Promise<ChatTurnResult> {
  return runChatTurn(s.kernel, {
    attachments,
    provider: s.provider,
    model: s.model,
    conversationId,
    userMessage: prompt,
    systemPrompt: systemPrompt(s.kernel, s.mode === 'web' ? 'web' : 'agent'),
    mode: s.mode,
    toolsEnabled: s.toolsEnabled,
    ...(o.effort ? { effort: o.effort as Effort } : {}),
    ...(o.streamReplies ? { stream: true } : {}),
    signal,
    sessionId: `chat:${conversationId}`,
    ...(onEvent ? { onEvent } : {}),
    ...(titleSignal ? { titleSignal } : {}),
  });
}

async function scripted(o: ChatOptions, ctx: CliContext): Promise<void> {
  const prompter: Prompter = o.approve ? new FixedAnswerPrompter(o.approve as PermissionAnswer) : new FixedAnswerPrompter('deny-once');
  const s = await open(o, ctx, prompter);
  const ac = new AbortController();
  const onSigint = () => ac.abort();
  process.once('SIGINT', onSigint);
  try {
    for (const w of s.warnings) process.stderr.write(`memo: warning: ${w}\n`);
    const attachments: Attachment[] = [];
    for (const p of o.attach ?? []) {
      try {
        attachments.push(await readAttachment(s.kernel, p));
      } catch (err) {
        throw ctx.usage(`--attach ${p}: ${(err as Error).message}`);
      }
    }
    const conv = o.resume
      ? await s.kernel.conversations.info(o.resume).catch((err: unknown) => {
          throw isMemoError(err) && err.code === 'NOT_FOUND' ? ctx.notFound(`There is no conversation ${o.resume}.`) : err;
        })
      : await s.kernel.conversations.create({ title: fallbackTitle(o.prompt!), provider: s.config.name, model: s.model });
    const r = await runOne(
      s,
      o,
      conv.id,
      o.prompt!,
      ac.signal,
      o.json
        ? undefined
        : (e) => {
            if (e.type === 'tool_end') process.stderr.write(stepLine(e.step) + '\n');
            if (e.type === 'backend') process.stderr.write(`memo: ${e.label} ${e.version} · ${accessLine(e.access)}\n`);
          },
      undefined,
      attachments,
    );
    for (const n of notices(r)) process.stderr.write(`memo: ${n}\n`);
    if (o.json) {
      process.stdout.write(
        JSON.stringify({
          conversationId: conv.id,
          provider: s.config.name,
          model: r.model || s.model,
          mode: s.mode,
          ...(isCliBackendProvider(s.provider) ? { access: s.provider.access } : {}),
          stopReason: r.stopReason,
          answer: r.answer,
          ...(r.error ? { error: r.error } : {}),
          steps: r.steps,
          iterations: r.iterations,
          usage: r.usage,
          ...(r.compaction ? { compacted: r.compaction.replaced } : {}),
          ...(r.compactionError ? { compactionError: r.compactionError } : {}),
          warnings: s.warnings,
        }) + '\n',
      );
    } else {
      if (r.answer) process.stdout.write(r.answer + '\n');
      if (r.error) process.stderr.write(`memo: ${r.stopReason}: ${r.error}\n`);
    }
    ctx.setExit(r.stopReason === 'final' ? 0 : 1);
    // The answer is out; the title (one small request) is stored before the kernel shuts down.
    await r.title;
  } finally {
    process.off('SIGINT', onSigint);
    await s.kernel.shutdown();
  }
}

async function interactive(o: ChatOptions, ctx: CliContext): Promise<void> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  o.streamReplies = true;
  const s = await open(o, ctx, new ChatPrompter(rl));
  const out = process.stdout;
  let conversationId = o.resume ?? (await s.kernel.conversations.create({ provider: s.config.name, model: s.model })).id;
  // Title requests run beside the conversation; leaving the chat cancels those still running.
  const titles = new AbortController();
  const pendingTitles: Array<Promise<unknown>> = [];
  /** The last turn's reasoning, for /thoughts. */
  let lastThoughts: string[] = [];
  /** Files attached with /attach, sent with the next message. */
  const pending: Attachment[] = [];
  const label = () => (isCliBackendProvider(s.provider) ? `${s.provider.spec.label}${s.model ? ` (${s.model})` : ''}` : `${s.config.name}/${s.model}`);
  out.write(
    `Memo chat · ${label()} · ${modeLine(s.kernel, s.mode, s.toolsEnabled)}\n/new  /history [words]  /tools  /vault  /computer  /web  /agent  /model NAME  /backend claude|codex|agy|off  /effort low|medium|high  /attach PATH  /compact  /thoughts  /exit   Ctrl-C stops a turn, twice exits.\n`,
  );
  if (isCliBackendProvider(s.provider)) out.write(`(${accessLine(s.provider.access)})\n`);
  for (const w of s.warnings) out.write(`warning: ${w}\n`);
  let running: AbortController | null = null;
  let lastSigint = 0;
  const onSigint = () => {
    const now = Date.now();
    if (running && !running.signal.aborted) {
      running.abort();
      out.write('\n(stopping the turn)\n');
    } else if (now - lastSigint < 1500) {
      rl.close();
    } else out.write('\n(press Ctrl-C again to exit)\n');
    lastSigint = now;
  };
  rl.on('SIGINT', onSigint);
  const ask = () =>
    new Promise<string | null>((resolve) => {
      rl.question('you> ', resolve);
      rl.once('close', () => resolve(null));
    });
  try {
    for (;;) {
      const line = await ask();
      if (line === null) break;
      const text = line.trim();
      if (!text) continue;
      if (text === '/exit') break;
      if (text === '/new') {
        conversationId = (await s.kernel.conversations.create({ provider: s.config.name, model: s.model })).id;
        out.write(`New conversation ${conversationId}\n`);
        continue;
      }
      if (text === '/history' || text.startsWith('/history ')) {
        for (const line of await historyLines(s.kernel, text.slice('/history'.length).trim(), conversationId)) out.write(line + '\n');
        continue;
      }
      const switchTo = modeCommand(text);
      if (switchTo) {
        // The mode of the next turns, whatever the provider; /agent: the stored default.
        s.mode = switchTo === 'default' ? s.kernel.providerSettings.defaultMode() : switchTo;
        out.write(`(${modeLine(s.kernel, s.mode, s.toolsEnabled)}${switchTo === 'default' ? ', the stored default' : ''})\n`);
        if (isCliBackendProvider(s.provider)) {
          if (s.mode === 'web') out.write(`(${WEB_WITH_CLI})\n`);
          else {
            s.provider.access = s.mode;
            out.write(`(${accessLine(s.provider.access)})\n`);
          }
        }
        continue;
      }
      if (text === '/backend' || text.startsWith('/backend ')) {
        const name = text.slice('/backend'.length).trim();
        if (!name) {
          s.backends ??= new CliBackends(s.kernel, { start: () => loopbackEndpoint(s.kernel) });
          for (const d of await s.backends.detector.detectAll()) out.write(detectionLine(d) + '\n');
        } else if (name === 'off') {
          if (s.home) Object.assign(s, s.home, { toolsEnabled: o.tools !== false });
          out.write(s.home ? `(back to ${s.config.name}/${s.model})\n` : '(no provider to return to: this chat started on a CLI backend)\n');
        } else if (!isBackendId(name)) out.write('(/backend takes claude, codex, agy or off)\n');
        else {
          if (!isCliBackendProvider(s.provider)) s.home = { provider: s.provider, config: s.config, model: s.model };
          // Computer access for a CLI is chosen for it (--computer-access, /computer on a CLI), never inherited from a stored default.
          const access = isCliBackendProvider(s.provider) ? s.provider.access : o.computerAccess ? 'computer' : 'vault';
          useBackend(s, name, access, o.effort as Effort | undefined);
          s.mode = access;
          const d = await s.backends!.detector.detect(name);
          out.write(`(${label()}${d.found ? ` ${d.version}` : `: not detected, ${d.reason}`}; ${accessLine(access)})\n`);
        }
        continue;
      }
      if (text === '/effort' || text.startsWith('/effort ')) {
        const level = text.slice('/effort'.length).trim();
        if (level && !EFFORTS.includes(level as Effort)) out.write('(/effort takes low, medium or high)\n');
        else {
          if (level) o.effort = level;
          if (isCliBackendProvider(s.provider) && level) s.provider.effort = level as Effort;
          out.write(`(effort: ${o.effort ?? "the model's default"})\n`);
        }
        continue;
      }
      if (text === '/model' || text.startsWith('/model ')) {
        const name = text.slice('/model'.length).trim();
        if (name) s.model = name;
        out.write(`(model: ${label()}; each reply records the model that wrote it)\n`);
        continue;
      }
      if (text.startsWith('/attach ')) {
        const p = text.slice('/attach '.length).trim();
        try {
          const a = await readAttachment(s.kernel, p);
          pending.push(a);
          out.write(`(attached ${a.path}, ${a.text.length} characters: sent with your next message)\n`);
        } catch (err) {
          out.write(`(cannot attach ${p}: ${(err as Error).message})\n`);
        }
        continue;
      }
      if (text === '/compact') {
        running = new AbortController();
        try {
          const c = await compactConversation(s.kernel, { provider: s.provider, model: s.model, conversationId, signal: running.signal });
          out.write(c ? `(compacted the ${c.replaced} oldest message(s) into a summary)\n` : '(nothing to compact yet)\n');
        } catch (err) {
          out.write(`(compacting failed: ${(err as Error).message})\n`);
        } finally {
          running = null;
        }
        continue;
      }
      if (text === '/thoughts') {
        out.write(lastThoughts.length ? `${lastThoughts.join('\n\n')}\n` : '(the last reply came without reasoning)\n');
        continue;
      }
      if (text === '/tools') {
        out.write(`(${modeLine(s.kernel, s.mode, s.toolsEnabled)})\n`);
        const offered = new Set(modeTools(s.kernel, s.mode, s.toolsEnabled));
        for (const t of s.kernel.registry.list()) if (offered.has(t.spec.name)) out.write(`  ${t.spec.name} (${t.spec.danger})\n`);
        continue;
      }
      running = new AbortController();
      const started = Date.now();
      out.write(`┌─ Agent Run ─ ${label()}\n`);
      /** Text printed as it arrived: the answer is not printed again. */
      let streamed = false;
      let live = '';
      const r = await runOne(
        s,
        o,
        conversationId,
        text,
        running.signal,
        (e) => {
          if (e.type === 'tool_start' || e.type === 'tool_end') {
            if (streamed) out.write('\n');
            streamed = false;
            live = '';
          }
          if (e.type === 'tool_end') out.write(stepLine(e.step) + '\n');
          if (e.type === 'compaction') out.write(`  (compacted the ${e.replaced} oldest message(s) into a summary)\n`);
          if (e.type === 'backend') out.write(`  ${e.label} ${e.version} · ${accessLine(e.access)}\n`);
          if (e.type === 'text_delta') {
            if (!streamed) out.write('│ ');
            streamed = true;
            live += e.text;
            out.write(e.text.replace(/\n/g, '\n│ '));
          }
        },
        titles.signal,
        pending.splice(0),
      );
      running = null;
      if (streamed) out.write('\n');
      if (r.title) pendingTitles.push(r.title);
      for (const n of notices(r)) if (!n.includes('compacted into')) out.write(`${n}\n`);
      out.write(`└─ ${r.iterations} iteration(s), ${r.stopReason} (${((Date.now() - started) / 1000).toFixed(1)}s)\n`);
      // Reasoning is shown folded (seed 003): one line, /thoughts opens it. It never goes back to the model.
      lastThoughts = r.reasoning.map((t) => t.text);
      if (lastThoughts.length) out.write(`▸ Thought (${lastThoughts.join(' ').split(/\s+/).length} words): /thoughts shows it\n`);
      // The answer was shown as it arrived: not again.
      if (r.answer && live.trim() !== r.answer.trim()) out.write(`\n${r.answer}\n\n`);
      else if (r.answer) out.write('\n');
      if (r.error) out.write(`(${r.error})\n`);
    }
  } finally {
    rl.close();
    titles.abort();
    await Promise.allSettled(pendingTitles);
    await s.kernel.shutdown();
  }
}
