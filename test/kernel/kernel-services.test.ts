/**
 * A host replaces each of the kernel's services with one registration (`createKernel({ services })`),
 * and the kernel uses the replacement everywhere: the pipeline, the gate, write capabilities, packs.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createKernel, type KernelOptions } from '../../kernel/kernel.js';
import { ManualClock } from '../../kernel/clock.js';
import { MemoryLogger } from '../../kernel/logger.js';
import { FixedAnswerPrompter } from '../../kernel/permissions/prompter.js';
import { toDisposable } from '../../kernel/disposable.js';
import type { AuditRecord } from '../../kernel/audit/audit-record.js';
import type { AuditSink } from '../../kernel/audit/audit-sink.js';
import type { ConversationStore } from '../../kernel/agent/agent-services.js';
import type { ProviderRegistry } from '../../kernel/providers/provider-services.js';
import type { ConversationInfo } from '../../kernel/agent/conversation-store.js';
import type { ProviderFactory } from '../../kernel/providers/provider.js';
import { echoPack, ScriptedPrompter, tempDir } from '../helpers/kernel-fixture.js';

function folders() {
  const base = tempDir('memo-services-');
  const root = path.join(base, 'root');
  fs.mkdirSync(root);
  return { root, dataDir: path.join(base, 'data') };
}

function kernelWith(services: NonNullable<KernelOptions['services']>, extra: Partial<KernelOptions> = {}) {
  const k = createKernel({
    ...folders(),
    packs: [echoPack()],
    rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 },
    logger: new MemoryLogger(),
    services,
    ...extra,
  });
  return k;
}

class ArraySink implements AuditSink {
  readonly records: AuditRecord[] = [];
  closed = false;
  append(record: AuditRecord) {
    this.records.push(record);
  }
  tail() {
    return this.records;
  }
  close() {
    this.closed = true;
  }
}

class MemoryConversations implements ConversationStore {
  private readonly rows = new Map<string, ConversationInfo>();
  private onDelete: (id: string) => void = () => {};
  create(init: { title?: string } = {}) {
    const info: ConversationInfo = {
      id: `mem-${this.rows.size + 1}`,
      title: init.title ?? 'untitled',
      provider: null,
      model: null,
      createdAt: '',
      updatedAt: '',
      messages: 0,
    };
    this.rows.set(info.id, info);
    return Promise.resolve(info);
  }
  info(id: string) {
    return Promise.resolve(this.rows.get(id)!);
  }
  exists(id: string) {
    return Promise.resolve(this.rows.has(id));
  }
  list() {
    return Promise.resolve([...this.rows.values()]);
  }
  update() {
    return Promise.resolve();
  }
  delete(id: string) {
    const had = this.rows.delete(id);
    if (had) this.onDelete(id);
    return Promise.resolve(had);
  }
  history() {
    return Promise.resolve([]);
  }
  appendTurn() {
    return Promise.resolve();
  }
  activity() {
    return Promise.resolve([]);
  }
  setDeleteListener(listener: (id: string) => void) {
    this.onDelete = listener;
  }
  close() {
    return Promise.resolve();
  }
}

describe('replacing the kernel services', () => {
  it('builds each kernel its own services: two kernels in one process share none', async () => {
    const a = kernelWith({});
    const b = kernelWith({});
    expect(a.registry).not.toBe(b.registry);
    expect(a.gate).not.toBe(b.gate);
    expect(a.limiter).not.toBe(b.limiter);
    expect(a.packs).not.toBe(b.packs);
    b.registerPack({ id: 'only-in-b', tools: [] });
    expect(a.registry.pack('only-in-b')).toBeUndefined();
    await a.shutdown();
    await b.shutdown();
  });

  it('creates a data folder only its owner can open, and leaves an existing one as it is', async () => {
    const dirs = folders();
    const k = createKernel({ ...dirs, logger: new MemoryLogger() });
    expect(fs.statSync(dirs.dataDir).mode & 0o777).toBe(0o700);
    await k.shutdown();
    const existing = tempDir('memo-existing-data-');
    fs.chmodSync(existing, 0o750);
    const k2 = createKernel({ root: dirs.root, dataDir: existing, logger: new MemoryLogger() });
    expect(fs.statSync(existing).mode & 0o777).toBe(0o750);
    await k2.shutdown();
  });

  it('asks the replacement prompter', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    const k = kernelWith({ prompter });
    const r = await k.invoke({ tool: 'echo_medium', args: { text: 'x' }, caller: { kind: 'host' } });
    expect(r.ok).toBe(true);
    expect(prompter.asked.map((a) => a.tool)).toEqual(['echo_medium']);
    await k.shutdown();
  });

  it('times handlers out on the replacement clock', async () => {
    const clock = new ManualClock();
    const k = kernelWith({ clock });
    k.registerPack({
      id: 'slow',
      tools: [
        {
          spec: { name: 'never_ends', description: 'd', parameters: { type: 'object' }, danger: 'safe', effect: 'read', timeoutMs: 5000 },
          impl: () => new Promise(() => {}),
        },
      ],
    });
    const pending = k.invoke({ tool: 'never_ends', args: {}, caller: { kind: 'host' } });
    await new Promise((r) => setImmediate(r));
    clock.advance(5000);
    const r = await pending;
    expect(!r.ok && r.error.code).toBe('TIMEOUT');
    await k.shutdown();
  });

  it('logs to the replacement logger', async () => {
    const logger = new MemoryLogger();
    const k = createKernel({ ...folders(), services: { logger } });
    const broken = tempDir('memo-broken-packs-');
    fs.mkdirSync(path.join(broken, 'no-manifest'));
    await k.loadPacks([{ dir: broken, source: 'extra' }]);
    expect(logger.lines.some((l) => l.level === 'warn' && l.message.includes('pack no-manifest'))).toBe(true);
    await k.shutdown();
  });

  it('records every outcome in the replacement audit sink, and writes no audit file', async () => {
    const sink = new ArraySink();
    const dirs = folders();
    const k = createKernel({ ...dirs, packs: [echoPack()], services: { auditSink: sink } });
    await k.invoke({ tool: 'echo_safe', args: { text: 'a' }, caller: { kind: 'host' } });
    await k.invoke({ tool: 'no_such_tool', args: {}, caller: { kind: 'host' } });
    expect(sink.records.map((r) => [r.tool, r.outcome])).toEqual([
      ['echo_safe', 'ok'],
      ['no_such_tool', 'error'],
    ]);
    expect(k.audit).toBe(sink);
    expect(fs.existsSync(path.join(dirs.dataDir, 'agent-audit.jsonl'))).toBe(false);
    await k.shutdown();
    expect(sink.closed).toBe(true);
  });

  it('makes the replacement from the kernel config when given a function', async () => {
    let seen = '';
    const k = createKernel({
      ...folders(),
      services: {
        auditSink: (config) => {
          seen = config.dataDir;
          return new ArraySink();
        },
      },
    });
    expect(seen).toBe(k.config.dataDir);
    await k.shutdown();
  });

  it('mints write capabilities only for conversations the replacement store holds, and revokes them when it deletes one', async () => {
    const store = new MemoryConversations();
    const k = kernelWith({ conversationStore: store });
    expect(k.conversations).toBe(store);
    await expect(k.capabilities.mint('mem-9')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const conv = await store.create({ title: 't' });
    const cap = await k.capabilities.mint(conv.id);
    expect(await k.capabilities.check(cap)).toBe(conv.id);
    await store.delete(conv.id);
    expect(k.capabilities.size).toBe(0);
    await k.shutdown();
  });

  it('lets packs contribute provider kinds to the replacement registry', async () => {
    const kinds = new Map<string, ProviderFactory>();
    const registry: ProviderRegistry = {
      register: (kind, factory) => {
        kinds.set(kind, factory);
        return toDisposable(() => kinds.delete(kind));
      },
      kinds: () => [...kinds.keys()].sort(),
      create: () => {
        throw new Error('not used');
      },
    };
    const k = kernelWith({ providerRegistry: registry }, { prompter: new FixedAnswerPrompter('deny-once') });
    await k.loadPacks(['providers']);
    expect(k.providers).toBe(registry);
    expect([...kinds.keys()]).toEqual(expect.arrayContaining(['anthropic', 'gemini', 'openai-compatible']));
    await k.shutdown();
    expect(kinds.size).toBe(0);
  });
});
