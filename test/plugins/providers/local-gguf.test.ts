/**
 * The in-process GGUF provider (`llama-cpp` kind) against a tiny random llama model that the test
 * writes itself (test/helpers/tiny-gguf.ts): nothing is downloaded. The model's answers are noise,
 * so the tests check the plumbing: loading, the reply shape, usage, the window from the GGUF
 * metadata, the model's own tokenizer, cancellation, clear errors for bad files, the kernel's
 * tool-calling probe (which a random model fails, as weak local models do), and, with a chat
 * format that forces a function call, that calls come back as toolCalls without being run.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChatMLChatWrapper, type ChatWrapperGenerateContextStateOptions, type ChatWrapperGeneratedContextState } from 'node-llama-cpp';
import { CapabilityProbe } from '../../../kernel/agent/capability-probe.js';
import { ManualClock, ProviderError, type ChatMessage, type ChatRequest, type ProviderConfig, type ToolDefinition } from '../../../kernel/index.js';
import { activate } from '../../../plugins/providers/index.js';
import { checkModelFile, readGgufHeader } from '../../../plugins/providers/local-gguf-file.js';
import { dropOptionalNulls, gbnfParameters } from '../../../plugins/providers/local-gguf-schema.js';
import {
  DEFAULT_CONTEXT_CAP,
  localGgufBackend,
  localGgufFactory,
  toFunctions,
  toLlamaHistory,
  windowFor,
  type LocalGgufProvider,
} from '../../../plugins/providers/local-gguf.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { tinyGguf, writeTinyGguf } from '../../helpers/tiny-gguf.js';
import { configWith, type ConfigOverrides } from './conversation.js';

// One CPU thread: the model is tiny, and more threads only contend on a shared 2-core machine.
const make = localGgufFactory({ gpu: false, threads: 1 });
const noFetch = { fetch: (() => Promise.reject(new Error('no network'))) as typeof fetch };

const TOOLS: ToolDefinition[] = [
  {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', minLength: 1, maxLength: 12 }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'],
      additionalProperties: false,
    },
  },
];

function request(model: string, messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest {
  return { model, messages, tools: [], temperature: 0, maxOutputTokens: 8, signal: new AbortController().signal, ...extra };
}

async function rejection(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (err) {
    return err as ProviderError;
  }
  throw new Error('expected a rejection');
}

describe('llama-cpp provider (in-process GGUF)', () => {
  let dir: string;
  let small: string; // context_length 256
  let roomy: string; // context_length 1024: room for node-llama-cpp's function-calling instructions
  const providers: LocalGgufProvider[] = [];
  const provider = (extra: ConfigOverrides = {}, factory = make): LocalGgufProvider => {
    const p = factory(configWith({ name: 'tiny', kind: 'llama-cpp', preset: 'gguf', model: small }, extra), noFetch) as LocalGgufProvider;
    providers.push(p);
    return p;
  };

  beforeAll(() => {
    dir = tempDir('memo-gguf-');
    small = writeTinyGguf(dir, { contextLength: 256, seed: 7 }, 'tiny-256.gguf').file;
    roomy = writeTinyGguf(dir, { contextLength: 1024, seed: 11 }, 'tiny-1024.gguf').file;
  });
  afterAll(async () => {
    // The models and contexts. The process's llama.cpp backend is freed by node-llama-cpp at exit.
    for (const p of providers) await p.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('the generated model file', () => {
    it('is a GGUF v3 file whose header holds the architecture and context length, the same bytes for the same seed', () => {
      const bytes = fs.readFileSync(small);
      expect(bytes.subarray(0, 4).toString('latin1')).toBe('GGUF');
      expect(bytes.readUInt32LE(4)).toBe(3);
      expect(readGgufHeader(small)).toEqual({ architecture: 'llama', contextLength: 256 });
      expect(tinyGguf({ contextLength: 256, seed: 7 }).equals(bytes)).toBe(true);
      expect(tinyGguf({ contextLength: 256, seed: 8 }).equals(bytes)).toBe(false);
      // The header reader skips the vocabulary's arrays when they come first.
      const reordered = writeTinyGguf(dir, { contextLength: 512, tokenizerFirst: true }, 'reordered.gguf').file;
      expect(readGgufHeader(reordered)).toEqual({ architecture: 'llama', contextLength: 512 });
    });
  });

  describe('chat', () => {
    it('loads the model and answers within the token bound, with usage', async () => {
      const p = provider();
      const r = await p.chat(
        request(small, [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'Hello world, what is the magic number?' },
        ]),
      );
      expect(typeof r.content).toBe('string');
      expect(r.toolCalls).toEqual([]);
      expect(r.usage!.outputTokens).toBeGreaterThan(0);
      expect(r.usage!.outputTokens).toBeLessThanOrEqual(8);
      // The whole rendered prompt: ChatML markers, both messages, BOS.
      expect(r.usage!.inputTokens).toBeGreaterThan(p.countTokens!('Hello world, what is the magic number?', small));
      expect(['maxTokens', 'eogToken', 'stopGenerationTrigger']).toContain(r.finishReason);
    });

    it('takes the window from the GGUF metadata, before and after loading; a configured one is capped by it', async () => {
      const fresh = provider();
      expect(fresh.contextWindow(small)).toBe(256);
      expect(provider({ contextWindow: 128 }).contextWindow(small)).toBe(128);
      expect(provider({ contextWindow: 100000 }).contextWindow(small)).toBe(256);
      expect(provider({ model: roomy }).contextWindow(roomy)).toBe(1024);
      await fresh.chat(request(small, [{ role: 'user', content: 'hi' }], { maxOutputTokens: 1 }));
      expect(fresh.contextWindow(small)).toBe(256);
      // A model trained for a long context gets a capped one unless configured.
      expect(windowFor({ name: 'x', kind: 'llama-cpp' }, 131072)).toBe(DEFAULT_CONTEXT_CAP);
      expect(windowFor({ name: 'x', kind: 'llama-cpp', contextWindow: 32768 }, 131072)).toBe(32768);
      expect(windowFor({ name: 'x', kind: 'llama-cpp', contextWindow: 4096 }, undefined)).toBe(4096);
      // A path that is not a model file: the configured value, else unknown.
      expect(provider({ model: path.join(dir, 'missing.gguf') }).contextWindow(path.join(dir, 'missing.gguf'))).toBeUndefined();
    });

    it("counts tokens with the model's own tokenizer once loaded, and not before", async () => {
      const p = provider();
      expect(p.countTokens!('hello world', small)).toBeUndefined();
      await p.chat(request(small, [{ role: 'user', content: 'hi' }], { maxOutputTokens: 1 }));
      // "▁hello" and "▁world" are pieces of the tiny vocabulary; " zq" falls back to "▁", "z", "q".
      expect(p.countTokens!('hello world', small)).toBe(2);
      expect(p.countTokens!('hello zq', small)).toBe(4);
      // Special-token text is counted as the plain text it is.
      expect(p.countTokens!('<|im_end|>', small)).toBeGreaterThan(1);
      expect(p.countTokens!('hello', '/another/model.gguf')).toBeUndefined();
    });

    it('stops a generation when the request is cancelled, and answers the next request', async () => {
      const p = provider();
      await p.chat(request(small, [{ role: 'user', content: 'hi' }], { maxOutputTokens: 1 }));
      const ac = new AbortController();
      // Far more tokens than the 256-token context holds: without the abort this would run long.
      const pending = p.chat(request(small, [{ role: 'user', content: 'Tell me a very long story.' }], { maxOutputTokens: 100000, signal: ac.signal }));
      setTimeout(() => ac.abort(), 20);
      const err = await rejection(pending);
      expect(err).toBeInstanceOf(ProviderError);
      expect(err).toMatchObject({ message: 'The request was cancelled.', status: null, retryable: false });
      const before = new AbortController();
      before.abort();
      await expect(p.chat(request(small, [{ role: 'user', content: 'hi' }], { signal: before.signal }))).rejects.toMatchObject({
        message: 'The request was cancelled.',
      });
      const after = await p.chat(request(small, [{ role: 'user', content: 'hello again' }], { maxOutputTokens: 3 }));
      expect(after.usage!.outputTokens).toBeGreaterThan(0);
    });
  });

  describe('model files a person must fix', () => {
    const ask = (model: string | undefined) => {
      const p = provider(model === undefined ? { model: '' } : { model });
      return rejection(p.chat(request(model ?? '', [{ role: 'user', content: 'hi' }])));
    };

    it('names a missing file, a relative path, another extension, a directory and no model at all', async () => {
      const missing = path.join(dir, 'nope.gguf');
      expect(await ask(missing)).toMatchObject({
        name: 'ProviderError',
        message: `There is no model file at ${missing}: check the path of provider "tiny".`,
        status: null,
        retryable: false,
      });
      expect((await ask('models/tiny.gguf')).message).toBe(
        'Provider "tiny": the model "models/tiny.gguf" is not an absolute path; give the full path of the .gguf file.',
      );
      expect((await ask(path.join(dir, 'model.bin'))).message).toMatch(/is not a \.gguf file; the llama-cpp kind loads GGUF models only/);
      fs.mkdirSync(path.join(dir, 'folder.gguf'), { recursive: true });
      expect((await ask(path.join(dir, 'folder.gguf'))).message).toBe(`${path.join(dir, 'folder.gguf')} is a directory, not a .gguf file.`);
      expect((await ask(undefined)).message).toMatch(/^Provider "tiny" has no model: set model to the absolute path of a \.gguf file/);
      // The kind has one preset (or none).
      expect(() => provider({ preset: 'ollama' })).toThrow('Provider "tiny": "ollama" is not a preset of the llama-cpp kind (use gguf, or none).');
      expect(provider({ preset: undefined }).kind).toBe('llama-cpp');
    });

    it('refuses a file that is not GGUF before loading anything', async () => {
      const html = path.join(dir, 'download.gguf');
      fs.writeFileSync(html, '<!DOCTYPE html><title>404</title>');
      const err = await ask(html);
      expect(err).toMatchObject({ status: null, retryable: false });
      expect(err.message).toBe(`${html} is not a GGUF model: it does not start with the GGUF signature (a damaged or incomplete download, or another format).`);
      expect(() => checkModelFile('tiny', html)).toThrow(ProviderError);
    });

    it('says llama.cpp could not load a truncated model, and a request after the file is fixed works', async () => {
      const cut = path.join(dir, 'cut.gguf');
      const whole = fs.readFileSync(small);
      fs.writeFileSync(cut, whole.subarray(0, Math.floor(whole.length / 2)));
      const p = provider({ model: cut });
      const err = await rejection(p.chat(request(cut, [{ role: 'user', content: 'hi' }])));
      expect(err).toBeInstanceOf(ProviderError);
      expect(err).toMatchObject({ status: null, retryable: false });
      // llama.cpp's own reason, not only node-llama-cpp's "Failed to load model".
      expect(err.message.startsWith(`llama.cpp could not load ${cut}: tensor '`)).toBe(true);
      expect(err.message).toMatch(
        /' data is not within the file bounds, model is corrupted or incomplete\. The file may be damaged or incomplete, or of an architecture this llama\.cpp does not know\.$/,
      );
      expect(err.detail).toMatch(/^llama-cpp load failed: Failed to load model; /);
      fs.writeFileSync(cut, whole);
      const ok = await p.chat(request(cut, [{ role: 'user', content: 'hi' }], { maxOutputTokens: 2 }));
      expect(typeof ok.content).toBe('string');
    });
  });

  describe('tools', () => {
    it("the kernel's probe finds that the random model cannot call tools, and chat without tools still works", async () => {
      const config: ProviderConfig = { name: 'tiny', kind: 'llama-cpp', preset: 'gguf', model: roomy };
      const p = provider(config);
      const verdict = await new CapabilityProbe(new ManualClock()).probe(p, config, roomy);
      expect(verdict).toMatchObject({ toolCalling: false, cached: false });
      expect(verdict.reason).toMatch(/answered without calling the test tool/);
      const r = await p.chat(request(roomy, [{ role: 'user', content: 'Say hello.' }], { maxOutputTokens: 4 }));
      expect(typeof r.content).toBe('string');
      expect(r.toolCalls).toEqual([]);
    });

    it("says so when the tool descriptions do not fit the model's context", async () => {
      const p = provider();
      const err = await rejection(p.chat(request(small, [{ role: 'user', content: 'What is the weather in Paris?' }], { tools: TOOLS })));
      expect(err).toBeInstanceOf(ProviderError);
      expect(err).toMatchObject({ status: null, retryable: false });
      expect(err.message).toBe(
        "The conversation does not fit this model's context of 256 tokens (tool descriptions count too): start a new conversation, use fewer tools, or set a larger contextWindow if the model allows it.",
      );
      expect(err.detail).toMatch(/^llama-cpp context overflow: /);
    });

    it('returns the calls a model makes as toolCalls with generated ids, and executes nothing', async () => {
      // A chat format that puts the model into function calling from its first token: the
      // grammar then makes even random weights write a valid call of a declared function.
      class ForcedCall extends ChatMLChatWrapper {
        override generateContextState(options: ChatWrapperGenerateContextStateOptions): ChatWrapperGeneratedContextState {
          const state = super.generateContextState(options);
          if (!options.availableFunctions || !Object.keys(options.availableFunctions).length) return state;
          return {
            contextText: state.contextText,
            stopGenerationTriggers: state.stopGenerationTriggers,
            functionCall: { initiallyEngaged: true, disengageInitiallyEngaged: [] },
          };
        }
      }
      const p = provider({ model: roomy }, localGgufFactory({ gpu: false, threads: 1, chatWrapper: new ForcedCall() }));
      const tools = TOOLS.map((t) => ({
        ...t,
        handler: () => {
          throw new Error('a tool must never be run by the provider');
        },
      }));
      const messages: ChatMessage[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await p.chat(request(roomy, messages, { tools, maxOutputTokens: 200 }));
      expect(first.finishReason).toBe('functionCalls');
      expect(first.toolCalls.length).toBeGreaterThan(0);
      const ids = new Set<string>();
      for (const call of first.toolCalls) {
        expect(call.id).toMatch(/^call_[0-9a-f]{16}$/);
        ids.add(call.id);
        expect(call.name).toBe('get_weather');
        expect(call.parseError).toBeUndefined();
        // The grammar follows the schema: city is a string; unit, optional, is an enum value or left out.
        expect(typeof call.arguments.city).toBe('string');
        if ('unit' in call.arguments) expect(['celsius', 'fahrenheit']).toContain(call.arguments.unit);
        expect(Object.keys(call.arguments).every((k) => k === 'city' || k === 'unit')).toBe(true);
      }
      expect(ids.size).toBe(first.toolCalls.length);
      // The kernel runs the tool and sends the result back: the model continues after it.
      messages.push(
        { role: 'assistant', content: first.content, toolCalls: first.toolCalls },
        ...first.toolCalls.map((c): ChatMessage => ({ role: 'tool', toolCallId: c.id, name: c.name, content: '{"temperature": 21}' })),
      );
      const second = await p.chat(request(roomy, messages, { maxOutputTokens: 4 }));
      expect(typeof second.content).toBe('string');
      expect(second.toolCalls).toEqual([]);
    });

    it('maps the conversation to node-llama-cpp history: calls inside the model turn, results by id, the answer after them in the same turn', () => {
      const functions = toFunctions([...TOOLS, { name: 'now', description: 'The time', parameters: { type: 'object', properties: {} } }]);
      const history = toLlamaHistory(
        [
          { role: 'system', content: 'sys' },
          { role: 'user', content: 'weather and time?' },
          {
            role: 'assistant',
            content: 'Checking.',
            toolCalls: [
              { id: 'a', name: 'get_weather', arguments: { city: 'Paris' } },
              { id: 'b', name: 'now', arguments: {} },
            ],
          },
          { role: 'tool', toolCallId: 'b', name: 'now', content: '12:00' },
          { role: 'tool', toolCallId: 'a', name: 'get_weather', content: '{"temperature": 21}', isError: false },
          { role: 'assistant', content: 'Sunny, noon.' },
          { role: 'tool', toolCallId: 'zzz', name: 'orphan', content: 'late' },
          { role: 'assistant', content: '', toolCalls: [{ id: 'c', name: 'now', arguments: {} }] },
        ],
        functions,
      );
      expect(history).toEqual([
        { type: 'system', text: 'sys' },
        { type: 'user', text: 'weather and time?' },
        {
          type: 'model',
          response: [
            'Checking.',
            {
              type: 'functionCall',
              name: 'get_weather',
              description: 'Current weather for a city',
              params: { city: 'Paris' },
              result: { temperature: 21 },
              startsNewChunk: true,
            },
            { type: 'functionCall', name: 'now', description: 'The time', params: undefined, result: '12:00' },
            'Sunny, noon.',
          ],
        },
        { type: 'user', text: 'Result of orphan: late' },
        {
          type: 'model',
          response: [
            { type: 'functionCall', name: 'now', description: 'The time', params: undefined, result: 'No result: the call was not run.', startsNewChunk: true },
          ],
        },
      ]);
    });
  });

  describe('tool parameter schemas for the grammar', () => {
    const SCHEMAS = {
      flat: TOOLS[0]!.parameters,
      refs: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: { point: { type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } }, required: ['x', 'y'] } },
        definitions: {
          tree: {
            type: 'object',
            properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/definitions/tree' } } },
            required: ['name'],
          },
        },
        properties: { at: { $ref: '#/$defs/point' }, tree: { $ref: '#/definitions/tree' } },
        required: ['at'],
      },
      mixed: {
        type: 'object',
        properties: {
          id: { type: ['string', 'integer'] },
          when: { type: 'string', format: 'date-time' },
          email: { type: 'string', format: 'email', pattern: '.+@.+' },
          tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3, uniqueItems: true },
          pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }] },
          mode: { const: 'fast' },
          level: { enum: [1, 2, 'three', null, { x: 1 }] },
          any: {},
          either: { anyOf: [{ type: 'string' }, { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] }] },
          meta: { type: 'object', additionalProperties: { type: 'string' } },
          loose: { type: 'object' },
          both: { allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { properties: { b: { type: 'boolean' } } }] },
          nullable: { type: ['string', 'null'], maxLength: 10 },
        },
        required: ['id', 'when'],
      },
      empty: { type: 'object', properties: {}, additionalProperties: false },
    } satisfies Record<string, Record<string, unknown>>;

    it('converts into schemas node-llama-cpp builds grammars from', async () => {
      // The providers' own backend: one native llama.cpp backend per process.
      const llama = await localGgufBackend({ gpu: false, threads: 1 });
      for (const [name, schema] of Object.entries(SCHEMAS)) {
        const params = gbnfParameters(schema);
        if (name === 'empty') {
          expect(params).toBeUndefined();
          continue;
        }
        const grammar = await llama.createGrammarForJsonSchema(params as never);
        expect(grammar.grammar.length).toBeGreaterThan(0);
      }
    });

    it('makes optional properties nullable, keeps required ones, inlines references and cuts recursion', () => {
      const flat = gbnfParameters(SCHEMAS.flat)!;
      expect(flat).toEqual({
        type: 'object',
        properties: { city: { type: 'string', minLength: 1, maxLength: 12 }, unit: { oneOf: [{ enum: ['celsius', 'fahrenheit'] }, { type: 'null' }] } },
      });
      const refs = gbnfParameters(SCHEMAS.refs) as any;
      expect(refs.properties.at).toEqual({ type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } } });
      const tree = refs.properties.tree.oneOf[0];
      expect(tree.properties.name).toEqual({ type: 'string' });
      // The second appearance of the recursive reference is any JSON value.
      expect(tree.properties.children.oneOf[0].items.description).toBe('(recursive)');
      const mixed = gbnfParameters(SCHEMAS.mixed) as any;
      expect(mixed.properties.id).toEqual({ type: ['string', 'integer'] });
      expect(mixed.properties.email.oneOf[0]).toEqual({ type: 'string' });
      expect(mixed.properties.level.oneOf[0]).toEqual({ enum: [1, 2, 'three', null] });
      expect(mixed.properties.meta.oneOf[0]).toEqual({ type: 'object', properties: {}, additionalProperties: { type: 'string' } });
      expect(mixed.properties.loose.oneOf[0]).toEqual({ type: 'object', properties: {}, additionalProperties: true });
      expect(mixed.properties.both.oneOf[0]).toEqual({
        type: 'object',
        properties: { a: { type: 'string' }, b: { oneOf: [{ type: 'boolean' }, { type: 'null' }] } },
      });
    });

    it('removes the nulls the grammar wrote for optional properties, nested ones included', () => {
      const schema = SCHEMAS.refs;
      expect(dropOptionalNulls({ at: { x: 1, y: 2 }, tree: null }, schema)).toEqual({ at: { x: 1, y: 2 } });
      expect(dropOptionalNulls({ at: { x: 1, y: 2 }, tree: { name: 't', children: [{ name: 'c', children: null }] } }, schema)).toEqual({
        at: { x: 1, y: 2 },
        tree: { name: 't', children: [{ name: 'c' }] },
      });
      expect(dropOptionalNulls({ city: 'Paris', unit: null }, TOOLS[0]!.parameters)).toEqual({ city: 'Paris' });
    });
  });

  it('is registered by the providers pack as the llama-cpp kind', () => {
    const kinds: string[] = [];
    const offered: string[] = [];
    const d = activate({ providers: { register: (kind: string) => void kinds.push(kind) }, provide: (token: string) => void offered.push(token) } as never);
    d.dispose();
    expect(kinds).toContain('llama-cpp');
    // And it offers its configuration checks to `memo provider add` (provider-add.test.ts).
    expect(offered).toEqual(['providers.configuration']);
  });
});
