import { isLoopback, MemoError, ProviderError, type PackApi, type Preview, type ProviderConfig, type TypedToolImplementation } from 'memo-kernel/pack';
import { CUSTOM, isKind, PRESETS, presetsOf, resolveEndpoint, type Kind } from './presets.js';
import type { ToolArgs } from './tool-args.js';

export const MASKED_KEY = '[stored, masked]';

type ConfigureArgs = ToolArgs['configure_provider'];

export interface Plan {
  next: ProviderConfig;
  previous: ProviderConfig | undefined;
  /** One line per field that changes (keys masked). */
  changes: string[];
  warnings: string[];
}

const refuse = (message: string) => new MemoError('VALIDATION', message);

function keyShown(c: ProviderConfig | undefined): string | undefined {
  if (!c) return undefined;
  if (c.apiKey) return MASKED_KEY;
  if (c.apiKeyEnv) return `from $${c.apiKeyEnv}`;
  return undefined;
}

function endpointOf(c: ProviderConfig | undefined): string | undefined {
  if (!c || !isKind(c.kind)) return undefined;
  try {
    return resolveEndpoint(c.kind, c).baseUrl;
  } catch {
    return undefined;
  }
}

/** A configuration as it may be shown: the key replaced by where it comes from. */
export function maskedConfig(c: ProviderConfig): Record<string, unknown> {
  const { apiKey: _key, headers, ...rest } = c;
  return {
    ...rest,
    apiKey: keyShown(c) ?? 'none',
    ...(headers ? { headers: Object.fromEntries(Object.keys(headers).map((k) => [k, '[masked]'])) } : {}),
  };
}

/**
 * Merges the arguments into the stored configuration of that name and checks the result. An
 * update keeps the fields it does not mention; a new kind starts afresh; a new preset without a
 * baseUrl drops the stored baseUrl (the preset brings its own); a key replaces a key variable and
 * the other way round.
 */
export function planConfiguration(args: ConfigureArgs, existing: ProviderConfig | undefined, env: NodeJS.ProcessEnv = process.env): Plan {
  if (args.apiKey !== undefined && args.apiKeyEnv !== undefined) throw refuse('Give either apiKey or apiKeyEnv, not both.');
  const kind = args.kind ?? existing?.kind;
  if (!kind) throw refuse(`A new provider needs a kind (openai-compatible, anthropic or gemini).`);
  if (!isKind(kind)) throw refuse(`Unknown kind "${kind}" (openai-compatible, anthropic or gemini).`);

  const next: ProviderConfig = existing && existing.kind === kind ? { ...existing } : { name: args.name, kind };
  next.name = args.name;
  next.kind = kind;
  if (args.preset !== undefined) {
    next.preset = args.preset;
    if (args.baseUrl === undefined) delete next.baseUrl;
  }
  if (args.baseUrl !== undefined) next.baseUrl = args.baseUrl.trim().replace(/\/+$/, '');
  if (args.model !== undefined) next.model = args.model;
  if (args.contextWindow !== undefined) next.contextWindow = args.contextWindow;
  if (args.apiKey !== undefined) {
    next.apiKey = args.apiKey;
    delete next.apiKeyEnv;
  }
  if (args.apiKeyEnv !== undefined) {
    next.apiKeyEnv = args.apiKeyEnv;
    delete next.apiKey;
  }

  const warnings = check(next, kind, env);
  // The kernel probes local models before giving them tools; only this pack knows which presets are local.
  next.local = resolveEndpoint(kind, next).local;

  const changes: string[] = [];
  type Shown = string | number | undefined;
  const show = (v: Shown) => (v === undefined ? '(none)' : String(v));
  const line = (field: string, before: Shown, after: Shown) => {
    if (before === after) return;
    changes.push(existing ? `${field}: ${show(before)} -> ${show(after)}` : `${field}: ${show(after)}`);
  };
  line('kind', existing?.kind, next.kind);
  line('preset', existing?.preset, next.preset);
  line('baseUrl', existing?.baseUrl, next.baseUrl);
  // Where requests (and the key) go, when the preset decides it rather than a baseUrl line above.
  const endpointBefore = existing ? endpointOf(existing) : undefined;
  const endpointAfter = endpointOf(next);
  if (endpointAfter !== endpointBefore && !next.baseUrl && endpointAfter) {
    const after = `${endpointAfter} (the ${next.preset ?? next.kind} preset's)`;
    changes.push(existing ? `endpoint: ${show(endpointBefore)} -> ${after}` : `endpoint: ${after}`);
  }
  line('model', existing?.model, next.model);
  line('contextWindow', existing?.contextWindow, next.contextWindow);
  const keyBefore = keyShown(existing);
  const keyAfter = keyShown(next);
  if (keyBefore === MASKED_KEY && keyAfter === MASKED_KEY) {
    if (existing?.apiKey !== next.apiKey) changes.push(`apiKey: ${MASKED_KEY} -> a new key, ${MASKED_KEY.slice(1, -1)}`);
  } else line('apiKey', keyBefore, keyAfter);
  return { next, previous: existing, changes, warnings };
}

/** Refuses combinations that cannot work or would leak the key; returns warnings for the rest. */
function check(c: ProviderConfig, kind: Kind, env: NodeJS.ProcessEnv): string[] {
  const warnings: string[] = [];
  if (c.preset !== undefined && !presetsOf(kind).includes(c.preset)) {
    throw refuse(`"${c.preset}" is not a preset of the ${kind} kind (use one of ${presetsOf(kind).join(', ')}).`);
  }
  if (kind === 'openai-compatible' && !c.preset && !c.baseUrl)
    throw refuse(`An openai-compatible provider needs a preset (${presetsOf(kind).join(', ')}) or a baseUrl.`);
  if (c.preset === CUSTOM && !c.baseUrl) throw refuse('The custom preset needs a baseUrl.');
  let url: URL | undefined;
  if (c.baseUrl !== undefined) {
    try {
      url = new URL(c.baseUrl);
    } catch {
      throw refuse(`baseUrl "${c.baseUrl}" is not a URL.`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse('baseUrl must start with http:// or https://.');
    if (url.username || url.password) throw refuse('baseUrl must not carry credentials: give the key as apiKey or apiKeyEnv.');
    if (url.search || url.hash) throw refuse('baseUrl must not have a query or a fragment.');
  }
  const preset = c.preset ? PRESETS[c.preset] : undefined;
  if (preset?.local && url && !isLoopback(url.hostname)) {
    throw refuse(
      `The ${c.preset} preset is a server on this machine: its baseUrl must be a loopback address (127.0.0.1, localhost, ::1). Use the custom preset for a server elsewhere.`,
    );
  }
  const hasKey = !!(c.apiKey || c.apiKeyEnv);
  if (hasKey && url && url.protocol === 'http:' && !isLoopback(url.hostname)) {
    throw refuse(`baseUrl ${url.origin} is plain http on another machine: the key would travel unencrypted. Use https.`);
  }
  try {
    resolveEndpoint(kind, c);
  } catch (err) {
    if (err instanceof ProviderError) throw refuse(err.message);
    throw err;
  }
  if (preset?.keyEnv && url && c.baseUrl !== preset.baseUrl) {
    warnings.push(`${hasKey ? 'The key' : 'Requests'} will go to ${url.host}, not to the ${c.preset} preset's ${new URL(preset.baseUrl).host}.`);
  }
  if (c.apiKeyEnv && !env[c.apiKeyEnv]) warnings.push(`$${c.apiKeyEnv} is not set in this process: set it before chatting.`);
  const needsKey = preset?.keyEnv !== undefined || (!c.preset && !c.baseUrl && kind !== 'openai-compatible');
  if (needsKey && !hasKey) {
    const fallback = preset?.keyEnv ?? PRESETS[kind]?.keyEnv;
    warnings.push(
      `No key configured: ${fallback && !c.baseUrl && env[fallback] ? `$${fallback} is used` : `set apiKeyEnv${fallback ? ` (e.g. ${fallback})` : ''} or give apiKey`}.`,
    );
  }
  return warnings;
}

function previewOf(plan: Plan): Preview {
  const head = plan.previous ? `Update provider "${plan.next.name}":` : `Add provider "${plan.next.name}":`;
  const body = plan.changes.length ? plan.changes.map((l) => `  ${l}`) : ['  (nothing changes)'];
  return { kind: 'fields', text: [head, ...body, ...plan.warnings.map((w) => `warning: ${w}`)].join('\n') };
}

/** The `configure_provider` tool, bound to the pack's api once activate() has run. */
export function configureProvider(getApi: () => PackApi | undefined): TypedToolImplementation<ConfigureArgs> {
  const settings = () => {
    const api = getApi();
    if (!api) throw new MemoError('TOOL_FAILED', 'The providers pack is not active (its activate() has not run).');
    return api.providers.settings;
  };
  return {
    // A provider is a person's setting: where conversations, and its key, are sent. Asked every time,
    // whatever is stored and under global always-allow too (a concern), and refused where nobody can
    // be asked: an agent cannot quietly point the next conversation at another server.
    assess: () => ({
      verdict: 'ask',
      rule: 'provider-setting',
      reason: 'A model provider decides where conversations, and its key, are sent: a person answers every change to one.',
    }),
    preview: (args): Preview => {
      try {
        return previewOf(planConfiguration(args, settings().get(args.name)));
      } catch (err) {
        return { kind: 'text', text: `Provider "${args.name}" will not be stored: ${(err as Error).message}` };
      }
    },
    run: async (args) => {
      const store = settings();
      const plan = planConfiguration(args, store.get(args.name));
      store.put(plan.next);
      // With a shared database the result says "stored" only once the row is committed; a failed write is undone and is this call's error.
      await store.saved();
      const active = store.active()?.name === plan.next.name;
      const provider = maskedConfig(plan.next);
      return {
        stored: true,
        created: !plan.previous,
        active,
        provider,
        changes: plan.changes,
        warnings: plan.warnings,
        summary: `${plan.previous ? 'updated' : 'added'} provider ${plan.next.name} (${plan.next.kind}${plan.next.preset ? `/${plan.next.preset}` : ''}${plan.next.model ? `, ${plan.next.model}` : ''}), key ${provider.apiKey === MASKED_KEY ? 'stored, masked' : String(provider.apiKey)}`,
      };
    },
  };
}
