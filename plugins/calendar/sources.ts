/**
 * The calendars a person added (sources.json), their CalDAV passwords, and their answers about AI
 * access (consent.json), all in the pack's data folder, which no tool can reach. Only the person
 * changes them, through `memo calendar add|remove|consent`; tools read them. A password is stored as
 * the name of an environment variable, or in a 0600 file of its own; it is never shown, only said
 * to be there.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { JsonFileStore, MemoError, writeFileAtomic, type Logger } from 'memo-kernel/pack';

export interface FileSource {
  id: string;
  kind: 'file';
  /** Path of an .ics file, relative to the workspace root; read through the sandbox. */
  path: string;
}

export interface SubscriptionSource {
  id: string;
  kind: 'subscription';
  /** http(s) URL (webcal:// is stored as https://). */
  url: string;
}

export interface CaldavSource {
  id: string;
  kind: 'caldav';
  url: string;
  username: string;
  /** The environment variable holding the password; else the password is in credentials/<id>.secret. */
  passwordEnv?: string;
  /** Calendars (by name or URL) the tools may write to; `*` for all of them. Empty: read only. */
  writable: string[];
}

export type Source = FileSource | SubscriptionSource | CaldavSource;

/** The local calendar: always there, owned by the pack. */
export const LOCAL_ID = 'local';

const ID = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** True when the person marked this CalDAV calendar writable (by name or URL, or `*`). */
export function isWritable(source: CaldavSource, cal: { name: string; url: string }): boolean {
  return source.writable.some((w) => w === '*' || w === cal.name || w === cal.url);
}

/** The consent service a source's events are gated by; null for the person's own calendars (local, files). */
export function serviceOf(source: Source): string | null {
  if (source.kind === 'subscription') return 'subscriptions';
  if (source.kind === 'caldav') return `caldav:${source.id}`;
  return null;
}

/** webcal:// is https:// by convention; only http(s) is fetched. */
export function feedUrl(url: string): string {
  const u = new URL(url.replace(/^webcals?:\/\//i, 'https://'));
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new MemoError('VALIDATION', `A subscription is an http(s) or webcal URL, not ${u.protocol}.`);
  if (u.username || u.password) throw new MemoError('VALIDATION', 'A subscription URL may not carry a user name or password.');
  return u.href;
}

/** What a person sees of a URL: scheme, host and path, never credentials or a query (private feed tokens live there). */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname.length > 1 ? '/…' : '/'}`;
  } catch {
    return '(unreadable URL)';
  }
}

function parseSources(json: unknown): { sources: Source[] } {
  const list = (json as { sources?: unknown })?.sources;
  if (!Array.isArray(list)) throw new Error('has no "sources" list');
  for (const s of list as Array<Record<string, unknown>>) {
    if (typeof s?.id !== 'string' || !ID.test(s.id)) throw new Error('has a source without a kebab-case id');
    if (!['file', 'subscription', 'caldav'].includes(String(s.kind))) throw new Error(`has a source "${s.id}" of unknown kind`);
    if (s.kind === 'caldav' && !Array.isArray(s.writable)) s.writable = [];
  }
  return { sources: list as Source[] };
}

export type ConsentAnswer = 'allow' | 'deny';

function parseConsent(json: unknown): { services: Record<string, ConsentAnswer> } {
  const services = (json as { services?: unknown })?.services;
  if (!services || typeof services !== 'object' || Array.isArray(services)) throw new Error('has no "services" object');
  for (const [k, v] of Object.entries(services)) if (v !== 'allow' && v !== 'deny') throw new Error(`gives "${k}" an answer other than allow or deny`);
  return { services: services as Record<string, ConsentAnswer> };
}

/** Why a service's events are or are not read. */
export type ConsentState = 'allowed' | 'declined' | 'not asked' | 'unreadable';

export class CalendarSettings {
  private readonly sourcesFile: JsonFileStore<{ sources: Source[] }>;
  private readonly consentFile: JsonFileStore<{ services: Record<string, ConsentAnswer> }>;

  constructor(
    readonly dir: string,
    logger: Logger,
  ) {
    this.sourcesFile = new JsonFileStore({
      file: path.join(dir, 'sources.json'),
      logger,
      empty: () => ({ sources: [] }),
      parse: parseSources,
      whileUnusable: 'no added calendar is read',
    });
    this.consentFile = new JsonFileStore({
      file: path.join(dir, 'consent.json'),
      logger,
      empty: () => ({ services: {} }),
      parse: parseConsent,
      whileUnusable: 'no external calendar is shown to the AI',
    });
  }

  sources(): Source[] {
    return this.sourcesFile.read().sources;
  }

  source(id: string): Source | undefined {
    return this.sources().find((s) => s.id === id);
  }

  /** Adds or replaces a source (the person's `memo calendar add`). */
  putSource(source: Source): void {
    if (!ID.test(source.id) || source.id === LOCAL_ID)
      throw new MemoError('VALIDATION', `"${source.id}" cannot name a calendar: use lower-case letters, digits and dashes (and not "local", the pack's own).`);
    if (this.sourcesFile.problem) throw new MemoError('CONFLICT', `${this.sourcesFile.problem}: fix or remove it first.`);
    this.sourcesFile.update((v) => ({ sources: [...v.sources.filter((s) => s.id !== source.id), source] }));
  }

  removeSource(id: string): boolean {
    const had = this.sources().some((s) => s.id === id);
    if (had) this.sourcesFile.update((v) => ({ sources: v.sources.filter((s) => s.id !== id) }));
    fs.rmSync(this.secretFile(id), { force: true });
    return had;
  }

  // -------------------------------------------------------------------------------------------
  // Passwords

  private secretFile(id: string): string {
    return path.join(this.dir, 'credentials', `${id}.secret`);
  }

  storePassword(id: string, password: string): void {
    fs.mkdirSync(path.join(this.dir, 'credentials'), { recursive: true, mode: 0o700 });
    writeFileAtomic(this.secretFile(id), password, 0o600);
  }

  /** The password in force for a CalDAV source; VALIDATION saying how to give one when there is none. */
  password(source: CaldavSource, env: NodeJS.ProcessEnv = process.env): string {
    if (source.passwordEnv) {
      const v = env[source.passwordEnv];
      if (!v)
        throw new MemoError(
          'VALIDATION',
          `The password of CalDAV account "${source.id}" is read from $${source.passwordEnv}, which is not set in this process.`,
        );
      return v;
    }
    try {
      return fs.readFileSync(this.secretFile(source.id), 'utf8');
    } catch {
      throw new MemoError('VALIDATION', `CalDAV account "${source.id}" has no stored password: add it again with --password-env VAR or --password-stdin.`);
    }
  }

  /** How the password is kept, for listings: never the password itself. */
  passwordShown(source: CaldavSource): string {
    if (source.passwordEnv) return `from $${source.passwordEnv}${process.env[source.passwordEnv] ? '' : ' (not set)'}`;
    return fs.existsSync(this.secretFile(source.id)) ? '[stored, masked]' : 'none';
  }

  /** Every stored password, for masking error messages. */
  secrets(): string[] {
    const out: string[] = [];
    for (const s of this.sources())
      if (s.kind === 'caldav')
        try {
          out.push(this.password(s));
        } catch {
          // No password: nothing to mask.
        }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Consent (seed 003: asked per calendar service; the answers, never the caller, decide)

  /** Each service's state. An unreadable consent file makes every service `unreadable`: not allowed. */
  consentState(service: string): ConsentState {
    const answers = this.consentFile.read();
    if (this.consentFile.problem) return 'unreadable';
    const a = answers.services[service];
    return a === 'allow' ? 'allowed' : a === 'deny' ? 'declined' : 'not asked';
  }

  /** Drops the answer about a service that is gone (a removed CalDAV account: one added later under its name is asked anew). */
  forgetConsent(service: string): void {
    if (this.consentFile.problem || !(service in this.answered())) return;
    this.consentFile.update((v) => ({ services: Object.fromEntries(Object.entries(v.services).filter(([k]) => k !== service)) }));
  }

  setConsent(service: string, answer: ConsentAnswer): void {
    this.consentFile.update((v) => ({ services: { ...v.services, [service]: answer } }));
  }

  /** The services the person has answered about. */
  answered(): Record<string, ConsentAnswer> {
    return { ...this.consentFile.read().services };
  }

  get sourcesProblem(): string | null {
    return this.sourcesFile.problem;
  }

  get consentProblem(): string | null {
    return this.consentFile.problem;
  }
}
