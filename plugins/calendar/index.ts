/**
 * The built-in `calendar` pack: real events from the pack's own local calendar (SQLite), ICS files,
 * subscribed ICS URLs and CalDAV accounts, expanded by ical.js. External calendars reach the model
 * only for the services the person allowed (seed 003). `activate` contributes `memo calendar ...`;
 * the database opens on the first call that needs it.
 */
import { defineTools, type Disposable, type PackApi } from 'memo-kernel/pack';
import { calendarCommand } from './commands.js';
import { getCalendarEvents, listCalendars } from './read-tools.js';
import { register, unregister } from './runtime.js';
import type { ToolArgs } from './tool-args.js';
import { createEvent, deleteEvent, updateEvent } from './write-tools.js';

export const tools = defineTools<ToolArgs>({
  get_calendar_events: getCalendarEvents,
  list_calendars: listCalendars,
  create_calendar_event: createEvent,
  update_calendar_event: updateEvent,
  delete_calendar_event: deleteEvent,
});

export function activate(api: PackApi): Disposable {
  const rt = register(api);
  api.commands.register(calendarCommand(rt));
  return { dispose: () => void unregister(rt) };
}
