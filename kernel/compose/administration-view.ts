/**
 * The administration view a privileged built-in pack gets (`api.administration()`, see
 * kernel/compose/pack-administration.ts for what it holds and who may have it). Built on the kernel's
 * own services; every change names the pack as the face it came through (`by: <pack id>`).
 */
import * as path from 'node:path';
import { auditRawMatches, searchAuditRecords } from '../audit/audit-search.js';
import { verifyAuditFile } from '../audit/audit-verify.js';
import { runChatTurn } from '../agent/chat-turn.js';
import { BACKENDS, isBackendId } from '../agent/cli-backends/backends.js';
import { CliBackends } from '../agent/cli-backends/cli-turn.js';
import { MemoError } from '../errors.js';
import { systemPrompt } from '../agent/system-prompt.js';
import type { Disposable } from '../disposable.js';
import type { AdminActions } from './admin-actions.js';
import type { AgentKernel } from '../agent/agent-kernel.js';
import type { PackCommands } from '../packs/pack-commands.js';
import type { ConsolePanels } from '../packs/console-panels.js';
import type { PackHttp } from '../packs/pack-http.js';
import type { PackManager } from '../packs/pack-manager.js';
import type { ApprovalBroker } from '../permissions/approval-broker.js';
import type { PermissionStore } from '../permissions/permission-store.js';
import type { PackAdministration } from './pack-administration.js';
import { describeSandbox, osSandboxStatus } from '../sandbox/os-sandbox.js';
import { instanceId } from '../storage/instance-id.js';

/**
 * `kernel`'s administration view for `packId`. `own` takes what must end when the pack unloads: the
 * watches it opens (approvals, audit) are released then, whether or not the pack released them.
 */
/** The parts of a kernel the administration view is built on (kernel.ts's Kernel is one). */
export interface AdministeredKernel extends AgentKernel {
  readonly admin: AdminActions;
  readonly approvals: ApprovalBroker;
  readonly commands: PackCommands;
  readonly packs: PackManager;
  readonly panels: ConsolePanels;
  readonly permissions: PermissionStore;
  readonly http: PackHttp;
}

export function administrationView(kernel: AdministeredKernel, packId: string, own: (d: Disposable) => void): PackAdministration {
  const open = new Set<Disposable>();
  own({ dispose: () => [...open].forEach((d) => d.dispose()) });
  const held = (d: Disposable): Disposable => {
    const entry = {
      dispose: () => {
        if (open.delete(entry)) d.dispose();
      },
    };
    open.add(entry);
    return entry;
  };
  const by = packId;
  const feed = kernel.audit.onAppend?.bind(kernel.audit);
  // The agent CLIs, made on first use: detection is cached five minutes, and their MCP calls come back through the endpoint memo serve runs.
  let cliBackends: CliBackends | undefined;
  const clis = () =>
    (cliBackends ??= new CliBackends(kernel, {
      endpoint: () => {
        const access = kernel.http.endpoint?.agentAccess?.();
        if (!access) throw new MemoError('VALIDATION', 'An agent CLI calls Memo back through the MCP endpoint memo serve runs, and none is being served.');
        return access;
      },
    }));
  return {
    approvals: {
      pending: () => kernel.approvals.pending(),
      sync: () => kernel.approvals.sync(),
      onChange: (listener) => held(kernel.approvals.onChange(listener)),
      answer: (id, reply) => kernel.approvals.answerAnywhere(id, reply, by),
    },
    audit: {
      tail: (limit) => kernel.audit.tail(limit === undefined ? undefined : { limit }),
      search: (q) => (kernel.audit.search ? kernel.audit.search(q) : Promise.resolve(searchAuditRecords(kernel.audit.tail(), q))),
      lines: async (q, fn) => {
        if (kernel.audit.lines) return kernel.audit.lines(q, fn);
        for (const r of kernel.audit.tail()) {
          const raw = JSON.stringify(r);
          if (auditRawMatches(raw, q)) await fn(raw);
        }
      },
      onAppend: feed && ((listener) => held({ dispose: feed(listener) })),
      verify: async () => {
        const { dataDir, database } = kernel.config;
        // On PostgreSQL every instance's chain is in the database; the data folder's file is not written there.
        if (!database) return verifyAuditFile(path.join(dataDir, 'agent-audit.jsonl'));
        const { verifyAuditDatabase } = await import('../audit/pg-audit-read.js');
        return verifyAuditDatabase(database, dataDir, instanceId(dataDir));
      },
    },
    changes: {
      record: (change) => kernel.admin.record({ ...change, by }),
      setPackEnabled: (id, enabled) => kernel.admin.setPackEnabled(id, enabled, by),
      configurePack: (id, changes) => kernel.admin.configurePack(id, changes, by),
      allow: (tool, minutes) => kernel.admin.allow(tool, minutes, by),
      deny: (tool) => kernel.admin.deny(tool, by),
      revoke: (tool) => kernel.admin.revoke(tool, by),
      setAlwaysAllow: (on) => kernel.admin.setAlwaysAllow(on, by),
      setExternalWrites: (on, client) => kernel.admin.setExternalWrites(on, client, by),
      putProvider: (config) => kernel.admin.putProvider(config, by),
      useProvider: (name) => kernel.admin.useProvider(name, by),
      removeProvider: (name) => kernel.admin.removeProvider(name, by),
    },
    packs: {
      list: () => kernel.packs.list(),
      get: (id) => kernel.packs.get(id),
      config: (id) => kernel.packs.config(id),
    },
    tools: () => kernel.registry.list().map((t) => ({ spec: t.spec, pack: t.pack.id })),
    skills: { list: () => kernel.skills.list() },
    panels: { list: () => kernel.panels.list(), get: (pack, id) => kernel.panels.get(pack, id) },
    subcommand: (pack, command) => {
      const [group, name] = command.split(' ');
      const registered = kernel.commands.get(group ?? '');
      if (!registered || registered.pack !== pack) return undefined;
      return registered.command.subcommands.find((c) => c.name === name);
    },
    permissions: {
      list: (now) => kernel.permissions.list(now),
      get alwaysAllow() {
        return kernel.permissions.alwaysAllow;
      },
      get externalWrites() {
        return kernel.permissions.externalWrites;
      },
      get problem() {
        return kernel.permissions.problem;
      },
    },
    providers: {
      create: (config) => kernel.providers.create(config),
      probe: (provider, config, model, options) => kernel.probe.probe(provider, config, model, options),
    },
    conversations: kernel.conversations,
    chatTurn: (options) => runChatTurn(kernel, options),
    agentClis: {
      detect: async () =>
        (await clis().detector.detectAll()).map((d) => ({
          id: d.backend,
          label: d.label,
          provider: BACKENDS[d.backend].provider,
          found: d.found,
          ...(d.version ? { version: d.version } : {}),
          ...(d.found ? {} : { reason: d.reason }),
        })),
      provider: (id, access) => {
        if (!isBackendId(id)) throw new MemoError('NOT_FOUND', `There is no agent CLI "${id.slice(0, 40)}" (claude, codex or agy).`);
        return clis().provider(id, { access });
      },
    },
    systemPrompt: (mode) => systemPrompt(kernel, mode),
    invoke: (tool, args, signal) => kernel.invoke({ tool, args, caller: { kind: 'host', id: packId }, ...(signal ? { signal } : {}) }),
    sandbox: async () => {
      const status = await osSandboxStatus();
      const fallback = kernel.config.sandboxFallback ?? 'refuse';
      return { available: status.available, fallback, processLimit: status.processLimit.kind, line: describeSandbox(status, fallback) };
    },
    place: { root: kernel.config.root, dataDir: kernel.config.dataDir },
    endpoint: () => {
      const server = kernel.http.endpoint;
      return server && { url: server.url(), rotateToken: () => server.rotateToken() };
    },
  };
}
