/**
 * An agent turn run as a routine: the same loop and the same pipeline as a chat turn, with the
 * caller a routine (`{ kind: 'routine', id: routineId, sessionId: per run }`), the provider and
 * model the routine pinned when it was approved, and the tools the person approved with the
 * routine pre-approved for this run alone. Packs reach it as `api.agent.run(...)`.
 */
import { isMemoError, MemoError } from '../errors.js';
import type { AgentKernel as Kernel } from './agent-kernel.js';
import { isLocalProvider } from './capability-probe.js';
import { runTurn } from './agent-loop.js';
import type { AgentToolInfo, PackAgent, PinnedModel, RoutineTurnOptions } from '../packs/pack-agent.js';

export type { AgentToolInfo, PackAgent, PinnedModel, RoutineTurnOptions };

/** A routine's session id: one per run, so nothing approved during a run outlives it. */
function runSession(routineId: string, runId: string): string {
  return `routine:${routineId}:${runId}`;
}

export function packAgent(kernel: Kernel, stopping: AbortSignal): PackAgent {
  const active = () => {
    const config = kernel.providerSettings.active();
    return config?.model ? { provider: config.name, model: config.model } : null;
  };
  return {
    active,
    async modelFor(caller) {
      // A call with no stored conversation (a routine's run, a host's own id) has no chat to follow.
      const info = caller.conversationId
        ? await kernel.conversations.info(caller.conversationId).catch((err: unknown) => {
            if (isMemoError(err) && err.code === 'NOT_FOUND') return null;
            throw err;
          })
        : null;
      if (!info?.provider) {
        const now = active();
        return now ? { ...now, from: 'active' } : null;
      }
      const config = kernel.providerSettings.get(info.provider);
      const model = info.model || config?.model;
      if (!config || !model)
        throw new MemoError(
          'VALIDATION',
          config
            ? `This conversation's provider "${info.provider}" has no model set, so a routine would not know which to run: choose a model in the chat, or give the provider a default model, and ask again.`
            : `This conversation runs on "${info.provider}", which is not a configured model provider (memo provider list), and a routine runs only with one: configure it (memo provider add) or ask from a chat that uses a configured provider.`,
        );
      return { provider: config.name, model, from: 'conversation' };
    },
    tools() {
      return kernel.registry
        .list()
        .filter((t) => kernel.registry.isEnabled(t.pack.id))
        .map((t) => ({
          name: t.spec.name,
          plugin: t.pack.id,
          danger: t.spec.danger,
          effect: t.spec.effect,
          ...(t.spec.confirm ? { confirm: t.spec.confirm } : {}),
          asksEveryTime: t.spec.effect === 'delete' || t.spec.confirm === 'always',
          modes: [...(t.spec.modes ?? [])],
        }));
    },
    async run(opts) {
      if (!opts.routineId || !opts.runId) throw new MemoError('VALIDATION', 'A routine turn needs a routine id and a run id.');
      const config = kernel.providerSettings.get(opts.provider);
      if (!config)
        throw new MemoError(
          'NOT_FOUND',
          `The routine's provider "${opts.provider}" is no longer configured (memo provider list); add it again or recreate the routine.`,
        );
      const provider = kernel.providers.create(config);
      let toolsEnabled = true;
      if (provider.local === true || isLocalProvider(config)) {
        const verdict = await kernel.probe.probe(provider, config, opts.model);
        toolsEnabled = verdict.toolCalling;
        // Nobody is there to read a warning: a routine that needs tools fails, saying why, rather than answering without them.
        if (!toolsEnabled && (opts.tools === undefined || opts.tools.length > 0))
          throw new MemoError(
            'VALIDATION',
            `The routine's model ${opts.model} (${opts.provider}) cannot call tools (${verdict.reason}), and the routine needs them.`,
          );
      }
      const sessionId = runSession(opts.routineId, opts.runId);
      const grant = kernel.gate.preApprove(sessionId, opts.preApproved ?? []);
      // The pack's unloading (or the kernel's shutdown) stops its runs as the caller's signal would.
      const signal = opts.signal ? AbortSignal.any([opts.signal, stopping]) : stopping;
      try {
        return await runTurn(kernel, {
          provider,
          model: opts.model,
          conversationId: sessionId,
          history: [],
          userMessage: opts.prompt,
          ...(opts.systemPrompt ? { systemPrompt: opts.systemPrompt } : {}),
          ...(opts.tools ? { scope: opts.tools } : {}),
          ...(opts.mode ? { mode: opts.mode } : {}),
          toolsEnabled,
          signal,
          ...(opts.maxIterations ? { maxIterations: opts.maxIterations } : {}),
          ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
          routine: { id: opts.routineId, sessionId },
        });
      } finally {
        grant.dispose();
      }
    },
  };
}
