/**
 * The built-in `calendar` pack: real events from the pack's own local calendar (SQLite), ICS files,
 * subscribed ICS URLs and CalDAV accounts, expanded by ical.js. External calendars reach the model
 * only for the services the person allowed (seed 003). `activate` contributes `memo calendar ...`,
 * the web console's consent panel and the background refresh `memo serve` runs; the database
 * opens on the first call that needs it.
 */
import { defineTools, type Disposable, type ItemRef, type JsonValue, type PackApi, type Preview, type ToolContext } from 'memo-kernel/pack';
import { calendarCommand } from './commands.js';
import { register, unregister } from './runtime.js';
import { calendarEvents } from './service.js';
import { syncService } from './sync-service.js';
import type { ToolArgs } from './tool-args.js';

// The tools' code (typeorm, ical.js, tsdav: about a second of imports) loads on the first call, so
// CLI commands that never touch a calendar do not pay for it.
const reads = () => import('./read-tools.js');
const writes = () => import('./write-tools.js');

type WriteTool = 'createEvent' | 'updateEvent' | 'deleteEvent';
function write<A>(name: WriteTool) {
  return {
    preview: async (args: A, ctx: ToolContext): Promise<Preview> => ((await writes())[name].preview as (a: A, c: ToolContext) => Promise<Preview>)(args, ctx),
    run: async (args: A, ctx: ToolContext): Promise<unknown> => ((await writes())[name].run as (a: A, c: ToolContext) => Promise<unknown>)(args, ctx),
  };
}

/** The events a result names (seed 003: linked items): a listing's events, or the event a write made or changed. */
function eventItems(value: JsonValue): ItemRef[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  const listed = Array.isArray(value.events) ? value.events : [value];
  const out: ItemRef[] = [];
  for (const e of listed) {
    if (typeof e !== 'object' || e === null || Array.isArray(e)) continue;
    if (typeof e.id === 'string' && e.id.includes(':') && typeof e.title === 'string') out.push({ type: 'event', id: e.id, title: e.title || e.id });
  }
  return out;
}

export const tools = defineTools<ToolArgs>({
  get_calendar_events: { run: async (args, ctx) => (await reads()).getCalendarEvents(args, ctx), items: eventItems },
  list_calendars: async (args, ctx) => (await reads()).listCalendars(args, ctx),
  create_calendar_event: { ...write<ToolArgs['create_calendar_event']>('createEvent'), items: eventItems },
  update_calendar_event: { ...write<ToolArgs['update_calendar_event']>('updateEvent'), items: eventItems },
  delete_calendar_event: write<ToolArgs['delete_calendar_event']>('deleteEvent'),
});

export function activate(api: PackApi): Disposable {
  const rt = register(api);
  api.commands.register(calendarCommand(rt));
  // The web console's panel. Consent is the person's answer, never a tool the agent could call:
  // its actions run `memo calendar consent` for the person logged in to the console.
  api.panels.register({
    id: 'consent',
    title: 'Calendar consent',
    description:
      'Whether the AI may read events from a calendar service: "subscriptions" (every subscribed ICS URL) or "caldav:NAME". The local calendar and ICS files need no consent.',
    commands: [
      { id: 'answers', label: 'Show the answers', command: 'calendar consent', fields: [] },
      { id: 'allow', label: 'Allow the AI to read it', command: 'calendar consent', args: { answer: 'allow' } },
      { id: 'deny', label: 'Keep it from the AI', command: 'calendar consent', args: { answer: 'deny' } },
    ],
  });
  // The calendar's page: the week ahead and the calendars it reads, each a read through the pipeline.
  api.panels.register({
    id: 'calendar',
    title: 'Calendar',
    description: 'The next seven days across every calendar the AI may read, and the calendars themselves (local, ICS files and subscriptions, CalDAV).',
    lists: [
      {
        id: 'upcoming',
        title: 'Upcoming events',
        tool: 'get_calendar_events',
        dates: { start: 0, end: 7 },
        args: { limit: 200 },
        rows: 'events',
        columns: [
          { key: 'title', label: 'Event', item: 'event', itemId: 'id' },
          { key: 'start', label: 'Starts' },
          { key: 'end', label: 'Ends' },
          { key: 'location', label: 'Where' },
          { key: 'source', label: 'Calendar' },
        ],
        refreshSeconds: 300,
        empty: 'Nothing in the next seven days.',
      },
      {
        id: 'sources',
        title: 'Calendars',
        tool: 'list_calendars',
        rows: 'calendars',
        columns: [
          { key: 'id', label: 'Calendar' },
          { key: 'kind', label: 'Kind' },
          { key: 'readable', label: 'The AI may read it' },
          { key: 'consent', label: 'Consent' },
          { key: 'events', label: 'Events' },
          { key: 'last_checked', label: 'Last checked', time: true },
        ],
      },
    ],
  });
  api.services.register(syncService(rt));
  // Other packs (the vault's desktop bridge, the canvas) read and create events through this, never by import.
  api.provide('calendar.events', calendarEvents(api));
  return { dispose: () => void unregister(rt) };
}
