/**
 * `memo calendar add|list|remove|sync|consent|export`, for people. Adding a calendar and answering
 * about AI access change the pack's settings directly, not through a tool: they are the person's
 * decisions (seed 003), and no tool may make them, so an agent can never allow itself a calendar
 * or point the pack at a URL of its choosing. Listing goes through list_calendars.
 */
import { commandDone as done, commandFailed as fail, commandGuarded as guarded, MemoError, type PackApi } from 'memo-kernel/pack';
import type { CalendarRuntime } from './runtime.js';
import { feedUrl, LOCAL_ID, serviceOf, shownUrl, type Source } from './sources.js';

type PackCommand = Parameters<PackApi['commands']['register']>[0];

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

function list(value: unknown): string[] {
  return typeof value === 'string'
    ? value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [];
}

/** The service a person names: `subscriptions`, `caldav:<id>`, or a CalDAV account's id alone. */
function serviceNamed(rt: CalendarRuntime, name: string): string {
  if (name === 'subscriptions' || name.startsWith('caldav:')) return name;
  const s = rt.settings.source(name);
  const service = s ? serviceOf(s) : null;
  if (service) return service;
  throw new MemoError(
    'VALIDATION',
    `"${name}" is not a calendar service: answer for "subscriptions" (every subscribed ICS URL) or a CalDAV account ("caldav:<name>"). The local calendar and ICS files need no consent.`,
  );
}

async function syncOne(rt: CalendarRuntime, s: Source, timeoutMs: number, signal: AbortSignal): Promise<{ id: string; status: string; reason?: string }> {
  if (s.kind === 'file') return { id: s.id, status: 'read when asked' };
  const r = await rt.refresh(s, timeoutMs, signal);
  return r.status === 'failed' ? { id: s.id, status: 'failed', reason: r.reason } : { id: s.id, status: r.status };
}

export function calendarCommand(rt: CalendarRuntime): PackCommand {
  return {
    name: 'calendar',
    description: 'calendars: add ICS files, subscriptions and CalDAV accounts, answer about AI access, sync, export the local calendar',
    subcommands: [
      {
        name: 'add',
        description:
          'add a calendar: file NAME PATH (an .ics file in the workspace), subscription NAME URL (https or webcal), caldav NAME URL --username U (--password-env VAR | --password-stdin) [--writable CAL,...|*]',
        arguments: [
          { name: 'kind', required: true, description: 'file, subscription or caldav' },
          { name: 'name', required: true, description: 'a short kebab-case name (work, holidays)' },
          { name: 'location', required: true, description: 'the file path or URL' },
        ],
        options: [
          { flags: '--username <user>', description: 'CalDAV user name' },
          { flags: '--password-env <var>', description: 'the environment variable holding the CalDAV (app) password' },
          { flags: '--password-stdin', description: 'read the CalDAV password from standard input; stored in a 0600 file in the data folder' },
          { flags: '--writable <calendars>', description: 'CalDAV calendars (names, comma-separated, or *) Memo may write to after a preview' },
          { flags: '--json', description: 'print JSON' },
        ],
        run: (ctx) =>
          guarded(ctx, async () => {
            const kind = String(ctx.args.kind);
            const id = String(ctx.args.name);
            const location = String(ctx.args.location);
            let source: Source;
            let password: string | undefined;
            if (kind === 'file') source = { id, kind: 'file', path: location };
            else if (kind === 'subscription') source = { id, kind: 'subscription', url: feedUrl(location) };
            else if (kind === 'caldav') {
              const u = new URL(location);
              if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new MemoError('VALIDATION', 'A CalDAV URL is http(s).');
              if (u.username || u.password)
                throw new MemoError(
                  'VALIDATION',
                  'Give the user name with --username and the password with --password-env or --password-stdin, not in the URL.',
                );
              const username = ctx.options.username;
              if (typeof username !== 'string' || !username) throw new MemoError('VALIDATION', 'A CalDAV account needs --username.');
              const env = ctx.options.passwordEnv;
              if (env !== undefined && ctx.options.passwordStdin) throw new MemoError('VALIDATION', 'Give --password-env or --password-stdin, not both.');
              if (env === undefined && !ctx.options.passwordStdin)
                throw new MemoError('VALIDATION', 'A CalDAV account needs a password: --password-env VAR (preferred) or --password-stdin.');
              source = {
                id,
                kind: 'caldav',
                url: u.href,
                username,
                writable: list(ctx.options.writable),
                ...(typeof env === 'string' ? { passwordEnv: env } : {}),
              };
              if (ctx.options.passwordStdin) {
                password = await readStdin();
                if (!password) throw new MemoError('VALIDATION', 'No password arrived on standard input.');
              }
            } else throw new MemoError('VALIDATION', `Unknown kind "${kind}": file, subscription or caldav.`);
            // On the audit trail before anything is stored (the password never: only that one was given).
            const { url: _url, ...rest } = source as Source & { url?: string };
            await ctx.record({
              action: 'calendar.add',
              target: id,
              change: { ...rest, ...('url' in source ? { url: shownUrl(source.url) } : {}), ...(password ? { password: 'stdin' } : {}) },
            });
            if (password) rt.settings.storePassword(id, password);
            rt.settings.putSource(source);
            const synced = await syncOne(rt, source, rt.fetchTimeoutMs(), ctx.signal);
            const where = source.kind === 'file' ? source.path : shownUrl(source.url);
            const service = serviceOf(source);
            const consent = service ? rt.settings.consentState(service) : null;
            const ask = service && consent !== 'allowed' ? ` The AI does not see its events until you allow it: memo calendar consent ${service} allow.` : '';
            return done(
              ctx,
              { id, kind, location: where, sync: synced, ...(service ? { service, consent } : {}) },
              `Added ${kind} calendar ${id} (${where}): ${synced.status}${synced.reason ? ` (${synced.reason})` : ''}.${ask}`,
            );
          }),
      },
      {
        name: 'list',
        description: 'list the calendars, with AI access and writability',
        options: [{ flags: '--json', description: 'print JSON' }],
        run: async (ctx) => {
          const r = await ctx.invoke('list_calendars', {});
          if (!r.ok) return fail(ctx, r.error.code, r.error.message);
          const v = r.value as { calendars: Array<Record<string, unknown>> };
          const str = (x: unknown) => (typeof x === 'string' ? x : '');
          const lines = v.calendars.map(
            (c) =>
              `${str(c.id)}\t${str(c.kind)}\t${c.service ? `${str(c.service)}: ${str(c.consent)}` : 'own'}\t${c.writable ? 'writable' : 'read-only'}\t${str(c.path) || str(c.url)}`,
          );
          return done(ctx, r.value, lines.join('\n'));
        },
      },
      {
        name: 'remove',
        description: 'remove an added calendar, its cached copy and its stored password',
        arguments: [{ name: 'name', required: true }],
        options: [{ flags: '--json', description: 'print JSON' }],
        run: (ctx) =>
          guarded(ctx, async () => {
            const id = String(ctx.args.name);
            if (id === LOCAL_ID) throw new MemoError('VALIDATION', 'The local calendar is the pack’s own and cannot be removed.');
            const source = rt.settings.source(id);
            if (!source) throw new MemoError('NOT_FOUND', `No added calendar is called "${id}".`);
            await ctx.record({ action: 'calendar.remove', target: id, change: { kind: source.kind } });
            if (!rt.settings.removeSource(id)) throw new MemoError('NOT_FOUND', `No added calendar is called "${id}".`);
            if (source.kind === 'caldav') rt.settings.forgetConsent(`caldav:${id}`);
            const db = await rt.database();
            const { CaldavCalendarRow, CaldavObjectRow, FeedCacheRow } = await import('./schema.js');
            await db.getRepository(FeedCacheRow).delete({ source_id: id });
            await db.getRepository(CaldavObjectRow).delete({ source_id: id });
            await db.getRepository(CaldavCalendarRow).delete({ source_id: id });
            return done(ctx, { id, removed: true }, `Removed calendar ${id}.`);
          }),
      },
      {
        name: 'sync',
        description: 'refresh subscribed calendars and CalDAV accounts now (all, or the one named)',
        arguments: [{ name: 'name' }],
        options: [{ flags: '--json', description: 'print JSON' }],
        run: (ctx) =>
          guarded(ctx, async () => {
            const name = typeof ctx.args.name === 'string' ? ctx.args.name : undefined;
            const sources = rt.settings.sources().filter((s) => !name || s.id === name);
            if (name && !sources.length) throw new MemoError('NOT_FOUND', `No added calendar is called "${name}".`);
            // A person who asks for a sync waits longer than a read does.
            const timeout = Math.max(rt.fetchTimeoutMs(), 30_000);
            const results = await Promise.all(sources.map((s) => syncOne(rt, s, timeout, ctx.signal)));
            const failed = results.filter((r) => r.status === 'failed').length;
            ctx.print(
              ctx.options.json
                ? { ok: failed === 0, result: results }
                : results.map((r) => `${r.id}: ${r.status}${r.reason ? ` (${r.reason})` : ''}`).join('\n') || 'No calendars to sync.',
            );
            return failed ? 1 : 0;
          }),
      },
      {
        name: 'consent',
        description:
          'answer whether the AI may read a calendar service: consent subscriptions allow|deny, consent caldav:NAME allow|deny; with no arguments, show the answers',
        arguments: [{ name: 'service' }, { name: 'answer', description: 'allow or deny' }],
        options: [{ flags: '--json', description: 'print JSON' }],
        run: (ctx) =>
          guarded(ctx, async () => {
            const name = typeof ctx.args.service === 'string' ? ctx.args.service : undefined;
            const answer = ctx.args.answer;
            if (!name) {
              const services = new Set([
                'subscriptions',
                ...rt.settings
                  .sources()
                  .map(serviceOf)
                  .filter((s): s is string => !!s),
                ...Object.keys(rt.settings.answered()),
              ]);
              const states = [...services].sort().map((service) => ({ service, state: rt.settings.consentState(service) }));
              return done(ctx, states, states.map((s) => `${s.service}: ${s.state}`).join('\n'));
            }
            const service = serviceNamed(rt, name);
            if (answer !== 'allow' && answer !== 'deny') throw new MemoError('VALIDATION', 'Answer allow or deny.');
            await ctx.record({ action: 'calendar.consent', target: service, change: { answer } });
            rt.settings.setConsent(service, answer);
            return done(
              ctx,
              { service, state: rt.settings.consentState(service) },
              answer === 'allow' ? `The AI may now read events from ${service}.` : `The AI will not see events from ${service}.`,
            );
          }),
      },
      {
        name: 'export',
        description: 'print the local calendar as one .ics file (memo calendar export > local.ics)',
        run: (ctx) =>
          guarded(ctx, async () => {
            const db = await rt.database();
            const { exportCalendar } = await import('./ics-build.js');
            const { LocalEventRow } = await import('./schema.js');
            ctx.print(exportCalendar((await db.getRepository(LocalEventRow).find({ order: { created_at: 'ASC' } })).map((r) => r.ics)).trimEnd());
            return 0;
          }),
      },
    ],
  };
}
