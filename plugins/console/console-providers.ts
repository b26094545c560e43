/**
 * Providers from the console: add or update, probe, remove. A configuration of a kind the providers
 * pack owns is checked by that pack's own `providers.configuration` service, exactly as `memo
 * provider add` does (unknown preset, a remote URL on a local preset, a key over plain http are
 * refused); kinds other packs contribute are stored as given, as the CLI stores them. Keys are
 * write-only: sent once, stored (mode 0600), shown only as "set" from then on.
 */
import { describeProvider, isMemoError, type PackAdministration, type PackApi, type ProviderConfig, type ProviderConfigurationService } from 'memo-kernel/pack';

/** What the providers page works with: the administration view, the stored configurations, and other packs' offers. */
export interface ProviderAccess {
  admin: PackAdministration;
  settings: PackApi['providers']['settings'];
  lookup: PackApi['lookup'];
}

export interface ProviderRefusal {
  status: number;
  code: string;
  message: string;
}

const FIELDS = ['kind', 'preset', 'baseUrl', 'model', 'apiKeyEnv', 'apiKey'] as const;

/** The configuration a console form stands for, or why it is not one. Empty fields are "not given". */
function formConfig(body: unknown): ProviderConfig | ProviderRefusal {
  const b = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
  const bad = (message: string): ProviderRefusal => ({ status: 400, code: 'BAD_REQUEST', message });
  if (typeof b.name !== 'string' || !b.name.trim()) return bad('Give the provider a name.');
  const config: Record<string, unknown> = { name: b.name.trim() };
  for (const f of FIELDS) {
    const v = b[f];
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string') return bad(`${f} must be text.`);
    config[f] = f === 'apiKey' ? v : v.trim();
  }
  if (!config.kind) return bad('Choose the kind (wire format) of the provider.');
  if (b.contextWindow !== undefined && b.contextWindow !== null && b.contextWindow !== '') {
    const cw = Number(b.contextWindow);
    if (!Number.isInteger(cw) || cw < 1024) return bad('contextWindow must be a whole number of tokens (at least 1024).');
    config.contextWindow = cw;
  }
  return config as unknown as ProviderConfig;
}

/**
 * Stores a provider from the console's form. A stored key (or key variable) the form leaves empty
 * is kept, since the page never has it to send back, but only while the key would still go where it
 * was saved for: same kind, preset and address. Otherwise an empty key field is refused, so nobody
 * can point a stored key at another server and read it there.
 */
export async function saveProvider(
  access: ProviderAccess,
  body: unknown,
): Promise<{ provider: Record<string, unknown>; warnings: string[]; created: boolean } | ProviderRefusal> {
  const given = formConfig(body);
  if ('code' in given) return given;
  const settings = access.settings;
  const existing = settings.get(given.name);
  let config: ProviderConfig = given;
  if (existing && given.apiKey === undefined && given.apiKeyEnv === undefined && (existing.apiKey || existing.apiKeyEnv)) {
    const sameDestination =
      existing.kind === given.kind && (existing.preset ?? '') === (given.preset ?? '') && (existing.baseUrl ?? '') === (given.baseUrl ?? '');
    if (!sameDestination) {
      return {
        status: 400,
        code: 'VALIDATION',
        message: `The provider "${given.name}" would send its stored key somewhere else (its kind, preset or address changed): enter the key again, or keep the address.`,
      };
    }
    if (existing.apiKey) config = { ...config, apiKey: existing.apiKey };
    else if (existing.apiKeyEnv) config = { ...config, apiKeyEnv: existing.apiKeyEnv };
  }
  let warnings: string[] = [];
  try {
    const owner = access.lookup<ProviderConfigurationService>('providers.configuration');
    if (owner?.kinds.includes(config.kind)) {
      const plan = owner.plan(config);
      config = plan.next;
      warnings = plan.warnings;
    }
  } catch (err) {
    if (isMemoError(err)) return { status: 400, code: err.code, message: err.message };
    throw err;
  }
  // On the audit trail first (by the console), then stored; a change whose line cannot be written is not made.
  try {
    await access.admin.changes.putProvider(config);
  } catch (err) {
    if (isMemoError(err) && err.details?.decision === 'deny:audit-unavailable') return { status: 503, code: 'AUDIT_UNAVAILABLE', message: err.message };
    if (isMemoError(err)) return { status: 400, code: err.code, message: err.message };
    return { status: 503, code: 'UNAVAILABLE', message: `The change was not saved, and is undone: ${(err as Error)?.message ?? String(err)}` };
  }
  return { provider: describeProvider(config, settings.active()?.name), warnings, created: !existing };
}

/** Checks (again) whether a provider's model can call tools, as `memo provider probe` does. */
export async function probeProvider(
  access: ProviderAccess,
  name: string,
  model: unknown,
  signal: AbortSignal,
): Promise<{ provider: string; model: string; toolCalling: boolean; reason: string } | ProviderRefusal> {
  const config = access.settings.get(name);
  if (!config) return { status: 404, code: 'NOT_FOUND', message: `There is no provider "${name}".` };
  const m = typeof model === 'string' && model.trim() ? model.trim() : config.model;
  if (!m) return { status: 400, code: 'NO_MODEL', message: `Provider ${name} has no default model: give one to probe.` };
  let verdict: { toolCalling: boolean; reason: string };
  try {
    const provider = access.admin.providers.create(config);
    verdict = await access.admin.providers.probe(provider, config, m, { force: true, signal });
  } catch (err) {
    verdict = { toolCalling: false, reason: `unreachable: ${(err as Error).message}` };
  }
  return { provider: name, model: m, toolCalling: verdict.toolCalling, reason: verdict.reason };
}
