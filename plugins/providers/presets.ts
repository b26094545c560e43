import { isLoopback, ProviderError, type ProviderConfig } from 'memo-kernel/pack';

export const KINDS = ['openai-compatible', 'anthropic', 'gemini'] as const;
export type Kind = (typeof KINDS)[number];

export interface Preset {
  kind: Kind;
  baseUrl: string;
  /** A hosted service: a key is required, and this is the variable it conventionally lives in. */
  keyEnv?: string;
  /** A server on this machine: its base URL must stay on a loopback address. */
  local?: boolean;
}

/** Known endpoints. `custom` (any kind) has none: it needs `baseUrl`. */
export const PRESETS: Record<string, Preset> = {
  openai: { kind: 'openai-compatible', baseUrl: 'https://api.openai.com/v1', keyEnv: 'OPENAI_API_KEY' },
  groq: { kind: 'openai-compatible', baseUrl: 'https://api.groq.com/openai/v1', keyEnv: 'GROQ_API_KEY' },
  openrouter: { kind: 'openai-compatible', baseUrl: 'https://openrouter.ai/api/v1', keyEnv: 'OPENROUTER_API_KEY' },
  xai: { kind: 'openai-compatible', baseUrl: 'https://api.x.ai/v1', keyEnv: 'XAI_API_KEY' },
  'opencode-zen': { kind: 'openai-compatible', baseUrl: 'https://opencode.ai/zen/v1', keyEnv: 'OPENCODE_API_KEY' },
  // The OpenCode Go subscription: the same key as Zen, its own endpoint (its OpenAI-compatible models only).
  'opencode-go': { kind: 'openai-compatible', baseUrl: 'https://opencode.ai/zen/go/v1', keyEnv: 'OPENCODE_API_KEY' },
  ollama: { kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:11434/v1', local: true },
  lmstudio: { kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:1234/v1', local: true },
  llamacpp: { kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:8080/v1', local: true },
  anthropic: { kind: 'anthropic', baseUrl: 'https://api.anthropic.com/v1', keyEnv: 'ANTHROPIC_API_KEY' },
  gemini: { kind: 'gemini', baseUrl: 'https://generativelanguage.googleapis.com/v1beta', keyEnv: 'GEMINI_API_KEY' },
};

export const CUSTOM = 'custom';

/** The presets a kind accepts (`custom` included). */
export function presetsOf(kind: Kind): string[] {
  return [
    ...Object.entries(PRESETS)
      .filter(([, p]) => p.kind === kind)
      .map(([name]) => name),
    CUSTOM,
  ];
}

export function isKind(kind: string): kind is Kind {
  return (KINDS as readonly string[]).includes(kind);
}

/** Where a configuration sends its requests, and what it needs. */
export interface Endpoint {
  /** The effective preset: the configured one, or `custom` for a bare base URL. */
  preset: string;
  /** Without a trailing slash. */
  baseUrl: string;
  /** `host[:port]`, for messages (never the path or credentials). */
  host: string;
  /** True when the base URL is the preset's own (not overridden). */
  presetUrl: boolean;
  /** The conventional key variable of a hosted preset. */
  keyEnv?: string;
  /** A key is required before any request. */
  needsKey: boolean;
  local: boolean;
}

/**
 * Resolves a configuration's preset and base URL. A configuration without a preset is `custom`
 * when it has a base URL; `anthropic`/`gemini` without either use their own endpoint.
 */
export function resolveEndpoint(kind: Kind, config: ProviderConfig): Endpoint {
  let preset = config.preset;
  if (!preset) {
    if (config.baseUrl) preset = CUSTOM;
    else if (kind === 'openai-compatible') {
      throw new ProviderError(`Provider "${config.name}" needs a preset (${presetsOf(kind).join(', ')}) or a baseUrl.`, null, false, 'config');
    } else preset = kind;
  }
  const known = PRESETS[preset];
  if (preset !== CUSTOM && (!known || known.kind !== kind)) {
    throw new ProviderError(
      `Provider "${config.name}": "${preset}" is not a preset of the ${kind} kind (use one of ${presetsOf(kind).join(', ')}).`,
      null,
      false,
      'config',
    );
  }
  const raw = config.baseUrl || known?.baseUrl;
  if (!raw) throw new ProviderError(`Provider "${config.name}" uses the custom preset and needs a baseUrl.`, null, false, 'config');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ProviderError(`Provider "${config.name}": baseUrl is not a URL.`, null, false, 'config');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ProviderError(`Provider "${config.name}": baseUrl must be http or https.`, null, false, 'config');
  }
  const baseUrl = raw.replace(/\/+$/, '');
  return {
    preset,
    baseUrl,
    host: url.host,
    presetUrl: !!known && baseUrl === known.baseUrl,
    ...(known?.keyEnv ? { keyEnv: known.keyEnv } : {}),
    needsKey: !!known?.keyEnv,
    local: !!known?.local || isLoopback(url.hostname),
  };
}

/** Appends a path to a base URL unless the base already ends with it. */
export function endpointUrl(baseUrl: string, suffix: string): string {
  return baseUrl.endsWith(suffix) ? baseUrl : `${baseUrl}${suffix}`;
}
