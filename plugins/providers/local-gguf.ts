/**
 * The `llama-cpp` kind: a GGUF model run in this process through node-llama-cpp (prebuilt
 * llama.cpp binaries shipped as npm packages; nothing is downloaded or built at run time).
 *
 * node-llama-cpp is imported on the first request (it is heavy); the model, one context and one
 * LlamaChat are loaded once per provider instance and reused (llama.cpp keeps the evaluated prefix,
 * so a conversation that grows is not evaluated again from the start). Tool definitions become
 * node-llama-cpp "functions" without handlers: LlamaChat.generateResponse stops when the model
 * calls one and returns the calls, which are answered as `toolCalls`. Nothing here executes a
 * function; the kernel's pipeline runs every tool.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type {
  ChatHistoryItem,
  ChatModelFunctionCall,
  ChatModelFunctions,
  ChatModelResponse,
  ChatWrapper,
  Llama,
  LlamaChat,
  LlamaContext,
  LlamaModel,
} from 'node-llama-cpp';
import {
  isProviderError,
  ProviderError,
  type ChatMessage,
  type ChatRequest,
  type ChatResponse,
  type ModelProvider,
  type ProviderConfig,
  type ProviderFactory,
  type ToolCallRequestPart,
  type ToolDefinition,
} from 'memo-kernel/pack';
import { cancelled, clamp } from './http.js';
import { checkModelFile, readGgufHeader, type GgufHeader } from './local-gguf-file.js';
import { dropOptionalNulls, gbnfParameters } from './local-gguf-schema.js';
import { pickDefinition } from './schema.js';

export const LLAMA_CPP_KIND = 'llama-cpp';
export const GGUF_PRESET = 'gguf';
/** The reply bound when the request gives none. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 512;
/**
 * The context created when the configuration sets no `contextWindow`: the model's trained length,
 * at most this. A model trained for 128K tokens would otherwise reserve gigabytes of KV cache.
 */
export const DEFAULT_CONTEXT_CAP = 8192;

type NodeLlamaCpp = typeof import('node-llama-cpp');

/** Host settings of the kind (not part of a provider configuration). */
export interface LocalGgufOptions {
  /** `auto` (CUDA, Vulkan or Metal when a prebuilt binary works here, else CPU) or `false` (CPU). */
  gpu?: 'auto' | false;
  /**
   * CPU threads; default: the cores this process may use but one (at least one). One core stays for
   * the kernel (its event loop, the MCP endpoint, other calls), and llama.cpp's threads, which wait
   * on each other at every step, are not all held up when another program takes a core: on 2 cores
   * beside a CPU hog, a short chat with 2 threads took over 120 s, with 1 thread 4.5 s.
   */
  threads?: number;
  /** The chat format; default `auto`: resolved from the model's chat template. */
  chatWrapper?: ChatWrapper;
}

export interface LocalGgufProvider extends ModelProvider {
  /** Frees the model and its context (a later request loads them again). */
  dispose(): Promise<void>;
}

interface Runtime {
  file: string;
  model: LlamaModel;
  context: LlamaContext;
  chat: LlamaChat;
  contextSize: number;
}

const fail = (message: string, detail: string) => new ProviderError(message, null, false, detail);
const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0]!.trim(); // split always returns one element

// ---------------------------------------------------------------------------------------------
// node-llama-cpp and the llama.cpp backend: one per process and set of options.

let modulePromise: Promise<NodeLlamaCpp> | undefined;
const runtimes = new Map<string, { llama: Promise<Llama>; log: Log }>();

function loadModule(): Promise<NodeLlamaCpp> {
  modulePromise ??= import('node-llama-cpp').catch((err: unknown) => {
    modulePromise = undefined;
    // An optional package (memo-kernel's peerDependencies): a checkout installs it with its devDependencies,
    // a host app's project only when asked (README, Install weight: with the overrides that keep out the GPU builds).
    throw fail(
      `node-llama-cpp could not be loaded (${errorText(err)}). It is optional and not installed with memo-kernel as a dependency: run \`npm install node-llama-cpp@3.21.1\` in your project (see the README's Install weight for the overrides that leave out its CUDA and Vulkan builds), or \`npm install\` in a Memo checkout.`,
      'llama-cpp import failed',
    );
  });
  return modulePromise;
}

/** llama.cpp's own warnings and errors, kept (not printed over the chat) to explain a failure. */
interface Log {
  lines: string[];
  /** Lines ever logged (the buffer keeps the last 20). */
  total: number;
}

function remember(log: Log, level: string, message: string): void {
  if (level !== 'warn' && level !== 'error' && level !== 'fatal') return;
  const line = message.trim();
  if (!line) return;
  log.lines.push(line);
  log.total++;
  if (log.lines.length > 20) log.lines.shift();
}

/** The lines logged since `total` was `since`. */
function logSince(log: Log, since: number): string[] {
  const n = Math.min(log.total - since, log.lines.length);
  return n > 0 ? log.lines.slice(-n) : [];
}

/** The cores this process may use but one, at least one (see LocalGgufOptions.threads). */
function defaultThreads(): number {
  return Math.max(1, os.availableParallelism() - 1);
}

function backend(mod: NodeLlamaCpp, options: LocalGgufOptions): { llama: Promise<Llama>; log: Log } {
  const gpu = options.gpu ?? 'auto';
  const maxThreads = options.threads ?? defaultThreads();
  const key = JSON.stringify([gpu, maxThreads]);
  let entry = runtimes.get(key);
  if (!entry) {
    const log: Log = { lines: [], total: 0 };
    const llama = mod
      .getLlama({
        gpu,
        maxThreads,
        // Only the prebuilt binaries shipped in @node-llama-cpp/* packages: never a download or a build.
        build: 'never',
        skipDownload: true,
        usePrebuiltBinaries: true,
        progressLogs: false,
        logLevel: mod.LlamaLogLevel.warn,
        logger: (level, message) => remember(log, level, message),
      })
      .catch((err: unknown) => {
        runtimes.delete(key);
        const noBinary = err instanceof mod.NoBinaryFoundError;
        throw fail(
          noBinary
            ? `No prebuilt llama.cpp binary works on this machine (${process.platform} ${process.arch}): reinstall Memo's dependencies with npm ci so the @node-llama-cpp/${process.platform}-${process.arch} package is present.`
            : `llama.cpp could not start: ${errorText(err)}.`,
          noBinary ? 'llama-cpp no prebuilt binary' : 'llama-cpp backend failed',
        );
      });
    entry = { llama, log };
    runtimes.set(key, entry);
  }
  return entry;
}

/**
 * The llama.cpp backend the providers made with these options share. There is one native backend
 * per process: a second `getLlama()` disposed elsewhere would free it under them, so code that
 * needs the backend (grammars, tests) takes this one. It is not disposed here: node-llama-cpp frees
 * it when the process exits (its `dispose()` can wait for a garbage collection, since the memory
 * estimator's model handles release the backend from finalizers).
 */
export async function localGgufBackend(options: LocalGgufOptions = {}): Promise<Llama> {
  return backend(await loadModule(), options).llama;
}

// ---------------------------------------------------------------------------------------------
// Requests.

/** The window of a model: the configured one (never above what the model was trained for), else the trained length capped. */
export function windowFor(config: ProviderConfig, trained: number | undefined): number | undefined {
  const configured = typeof config.contextWindow === 'number' && config.contextWindow > 0 ? Math.floor(config.contextWindow) : undefined;
  if (configured) return trained ? Math.min(configured, trained) : configured;
  return trained ? Math.min(trained, DEFAULT_CONTEXT_CAP) : undefined;
}

/** node-llama-cpp functions for the request's tools: descriptions and parameter schemas, no handlers. */
export function toFunctions(tools: ToolDefinition[]): ChatModelFunctions | undefined {
  if (!tools.length) return undefined;
  const out: Record<string, { description?: string; params?: unknown }> = {};
  for (const t of tools.map(pickDefinition)) {
    const params = gbnfParameters(t.parameters);
    out[t.name] = { ...(t.description ? { description: t.description } : {}), ...(params ? { params } : {}) };
  }
  return out as ChatModelFunctions;
}

/** A tool result as node-llama-cpp renders it (JSON): a JSON object or list as itself, other text as a string. */
function resultValue(content: string): unknown {
  const t = content.trim();
  if ((t.startsWith('{') && t.endsWith('}')) || (t.startsWith('[') && t.endsWith(']'))) {
    try {
      return JSON.parse(t) as unknown;
    } catch {
      // plain text
    }
  }
  return content;
}

/**
 * The kernel's messages as node-llama-cpp's chat history. An assistant turn's tool calls become
 * function calls inside its model response, each holding the result of the tool message that
 * answers it (matched by id); the assistant text after those results continues the same response,
 * as node-llama-cpp itself records a turn with function calls. A result without its call becomes
 * user text; a call never answered says so.
 */
export function toLlamaHistory(messages: ChatMessage[], functions: ChatModelFunctions | undefined): ChatHistoryItem[] {
  const out: ChatHistoryItem[] = [];
  const pending = new Map<string, ChatModelFunctionCall>();
  const answered = new Set<ChatModelFunctionCall>();
  let afterResults = false;
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        out.push({ type: 'system', text: m.content });
        break;
      case 'user':
        out.push({ type: 'user', text: m.content });
        break;
      case 'assistant': {
        const last = out[out.length - 1];
        const item: ChatModelResponse = afterResults && last?.type === 'model' ? last : { type: 'model', response: [] };
        if (item !== last) out.push(item);
        if (m.content) item.response.push(m.content);
        (m.toolCalls ?? []).forEach((c, i) => {
          const fn = functions?.[c.name];
          const args = c.arguments ?? {};
          const call: ChatModelFunctionCall = {
            type: 'functionCall',
            name: c.name,
            // A function without parameters is called without any (`name()`), as the model saw it.
            params: fn && !fn.params && !Object.keys(args).length ? undefined : args,
            result: undefined,
            ...(fn?.description ? { description: fn.description } : {}),
            ...(i === 0 ? { startsNewChunk: true } : {}),
          };
          item.response.push(call);
          pending.set(c.id, call);
        });
        break;
      }
      case 'tool': {
        const call = pending.get(m.toolCallId);
        if (call && !answered.has(call)) {
          call.result = resultValue(m.content);
          answered.add(call);
        } else {
          out.push({ type: 'user', text: `Result of ${m.name}: ${m.content}` });
        }
        break;
      }
    }
    afterResults = m.role === 'tool';
  }
  for (const call of pending.values()) if (!answered.has(call)) call.result = 'No result: the call was not run.';
  return out;
}

function toolCallsOf(calls: Array<{ functionName: string; params: unknown }> | undefined, tools: ToolDefinition[]): ToolCallRequestPart[] {
  const schemas = new Map(tools.map((t) => [t.name, t.parameters]));
  return (calls ?? []).map((c) => {
    const id = `call_${randomBytes(8).toString('hex')}`;
    const params = c.params;
    if (params === undefined || params === null) return { id, name: c.functionName, arguments: {} };
    if (typeof params !== 'object' || Array.isArray(params)) {
      return {
        id,
        name: c.functionName,
        arguments: {},
        parseError: `the arguments are ${Array.isArray(params) ? 'a list' : `a ${typeof params}`}, not an object`,
      };
    }
    const schema = schemas.get(c.functionName);
    const cleaned = schema ? dropOptionalNulls(params, schema) : params;
    return { id, name: c.functionName, arguments: cleaned as Record<string, unknown> };
  });
}

/** Rejects with `cancelled()` as soon as the signal aborts, leaving the shared work running. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(cancelled());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- passes the shared work's own rejection through unchanged
        reject(err);
      },
    );
  });
}

function generationError(err: unknown, rt: Runtime): ProviderError {
  if (isProviderError(err)) return err;
  const text = errorText(err);
  if (/context size|context shift|fit the context/i.test(text)) {
    return fail(
      `The conversation does not fit this model's context of ${rt.contextSize} tokens (tool descriptions count too): start a new conversation, use fewer tools, or set a larger contextWindow if the model allows it.`,
      `llama-cpp context overflow: ${text}`,
    );
  }
  return fail(`llama.cpp failed while generating: ${text}.`, `llama-cpp generation error: ${text}`);
}

// ---------------------------------------------------------------------------------------------
// The provider.

/** A factory for the `llama-cpp` kind with host settings (tests pick one CPU thread, a chat format). */
export function localGgufFactory(options: LocalGgufOptions = {}): ProviderFactory {
  return (config) => createProvider(config, options);
}

/** The `llama-cpp` kind as registered by the pack. */
export const createLocalGgufProvider: ProviderFactory = localGgufFactory();

function createProvider(config: ProviderConfig, options: LocalGgufOptions): LocalGgufProvider {
  if (config.preset !== undefined && config.preset !== GGUF_PRESET) {
    throw fail(`Provider "${config.name}": "${config.preset}" is not a preset of the llama-cpp kind (use ${GGUF_PRESET}, or none).`, 'config');
  }
  let current: { file: string; runtime: Promise<Runtime> } | undefined;
  let loaded: Runtime | undefined;
  const headers = new Map<string, { stamp: string; header: GgufHeader }>();

  const header = (file: string): GgufHeader => {
    let stamp: string;
    try {
      const st = fs.statSync(file);
      stamp = `${st.size}:${st.mtimeMs}`;
    } catch {
      return {};
    }
    const hit = headers.get(file);
    if (hit && hit.stamp === stamp) return hit.header;
    const h = readGgufHeader(file);
    headers.set(file, { stamp, header: h });
    return h;
  };

  async function load(file: string): Promise<Runtime> {
    const mod = await loadModule();
    const { llama: llamaPromise, log } = backend(mod, options);
    const llama = await llamaPromise;
    const since = log.total;
    // llama.cpp's reason ("error loading model: tensor 'token_embd.weight' data is not within the
    // file bounds, ..."), else node-llama-cpp's message.
    const why = (err: unknown) => {
      const lines = logSince(log, since);
      const reason = lines
        .map((l) => /error loading model:\s*(.+)$/.exec(l)?.[1])
        .filter(Boolean)
        .pop();
      return reason ?? lines.filter((l) => /error|fail|invalid|missing|wrong|unknown|corrupt/i.test(l)).pop() ?? errorText(err);
    };
    let model: LlamaModel;
    try {
      model = await llama.loadModel({ modelPath: file });
    } catch (err) {
      // llama.cpp's log lines reach JavaScript through the event loop: let the last ones in.
      for (let i = 0; i < 10 && !logSince(log, since).length; i++) await new Promise((resolve) => setImmediate(resolve));
      throw fail(
        `llama.cpp could not load ${file}: ${why(err)}. The file may be damaged or incomplete, or of an architecture this llama.cpp does not know.`,
        `llama-cpp load failed: ${errorText(err)}${logSince(log, since).length ? `; ${logSince(log, since).join(' | ')}` : ''}`.slice(0, 1000),
      );
    }
    const contextSize = windowFor(config, model.trainContextSize || header(file).contextLength) ?? DEFAULT_CONTEXT_CAP;
    let context: LlamaContext;
    try {
      context = await model.createContext({ contextSize, ...(options.threads ? { threads: options.threads } : {}) });
    } catch (err) {
      await model.dispose().catch(() => undefined);
      throw fail(
        `llama.cpp could not create a context of ${contextSize} tokens for ${file} (${why(err)}): set a smaller contextWindow.`,
        `llama-cpp context failed: ${errorText(err)}`,
      );
    }
    const chat = new mod.LlamaChat({ contextSequence: context.getSequence(), chatWrapper: options.chatWrapper ?? 'auto' });
    return { file, model, context, chat, contextSize };
  }

  async function release(rt: Runtime): Promise<void> {
    if (loaded === rt) loaded = undefined;
    rt.chat.dispose();
    await rt.context.dispose().catch(() => undefined);
    await rt.model.dispose().catch(() => undefined);
  }

  /** The runtime for a model file: loaded once, reused; another file replaces it. */
  function runtime(file: string): Promise<Runtime> {
    if (current?.file === file) return current.runtime;
    const previous = current?.runtime;
    const entry = {
      file,
      runtime: (async () => {
        if (previous) await previous.then(release, () => undefined);
        const rt = await load(file);
        loaded = rt;
        return rt;
      })(),
    };
    entry.runtime.catch(() => {
      // A failed load is not kept: the next request tries again (the file may have been fixed).
      if (current === entry) current = undefined;
    });
    current = entry;
    return entry.runtime;
  }

  const modelFile = (model: string | undefined) => model || config.model;
  /** The loaded runtime when it is this model's. */
  const loadedFor = (model: string | undefined): Runtime | undefined => {
    const p = modelFile(model);
    return loaded && p && path.isAbsolute(p) && loaded.file === path.normalize(p) && !loaded.model.disposed ? loaded : undefined;
  };

  return {
    name: config.name,
    kind: LLAMA_CPP_KIND,
    local: true,

    async chat(request: ChatRequest): Promise<ChatResponse> {
      const signal = request.signal ?? new AbortController().signal;
      if (signal.aborted) throw cancelled();
      const file = checkModelFile(config.name, modelFile(request.model));
      const rt = await untilAborted(runtime(file), signal);
      const functions = toFunctions(request.tools ?? []);
      const history = toLlamaHistory(request.messages, functions);
      const inputTokens = promptTokens(rt, history, functions);
      const meter = rt.chat.sequence.tokenMeter;
      const before = meter.getState();
      const maxTokens = Math.max(1, Math.floor(request.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS));
      let res: Awaited<ReturnType<LlamaChat['generateResponse']>> & { functionCalls?: Array<{ functionName: string; params: unknown }> };
      try {
        res = await rt.chat.generateResponse(history, {
          functions,
          signal,
          maxTokens,
          temperature: clamp(request.temperature, 0, 2),
          trimWhitespaceSuffix: true,
        });
      } catch (err) {
        if (signal.aborted) throw cancelled();
        throw generationError(err, rt);
      }
      const used = meter.diff(before);
      return {
        content: res.response,
        toolCalls: toolCallsOf(res.functionCalls, request.tools ?? []),
        usage: { inputTokens: inputTokens ?? used.usedInputTokens, outputTokens: used.usedOutputTokens },
        finishReason: res.metadata.stopReason,
      };
    },

    contextWindow(model: string): number | undefined {
      const rt = loadedFor(model);
      if (rt) return rt.contextSize;
      let file: string;
      try {
        file = checkModelFile(config.name, modelFile(model));
      } catch {
        return windowFor(config, undefined);
      }
      return windowFor(config, header(file).contextLength);
    },

    // Exact with the model's own tokenizer once it is loaded; undefined (not a number) before, so
    // the kernel estimates until the first request has loaded it.
    countTokens(text: string, model: string): number {
      const rt = loadedFor(model);
      if (!rt) return undefined as unknown as number;
      return rt.model.tokenize(typeof text === 'string' ? text : String(text ?? ''), false).length;
    },

    async dispose(): Promise<void> {
      const entry = current;
      current = undefined;
      if (entry) await entry.runtime.then(release, () => undefined);
    },
  };
}

/** The prompt's tokens as the chat format renders it (what is evaluated), or undefined if it cannot be rendered here. */
function promptTokens(rt: Runtime, history: ChatHistoryItem[], functions: ChatModelFunctions | undefined): number | undefined {
  try {
    const last = history[history.length - 1];
    const full: ChatHistoryItem[] = last?.type === 'model' ? history : [...history, { type: 'model', response: [] }];
    const state = rt.chat.chatWrapper.generateContextState({ chatHistory: full, ...(functions ? { availableFunctions: functions } : {}) });
    return state.contextText.tokenize(rt.model.tokenizer).length;
  } catch {
    return undefined;
  }
}
