// generated from plugin.json by memo plugins types; do not edit

/** Each tool of this pack, by name: the arguments its handler is given (validated against plugin.json). */
export interface ToolArgs {
  /** Reads real events from the person's calendars for a date range: the local calendar, ICS files, and the external calendars (subscriptions, CalDAV accounts) whose service the person allowed. Recurring events are expanded into occurrences. Each occurrence has id (calendar:uid, for update/delete), source, calendar, title, start, end (exclusive; dates for all-day events), allDay, timeZone, location, attendees (a count), recurring, recurrenceId and overridden for moved instances. left_out names the services not shown and why. */
  get_calendar_events: {
    /** Start of the range: a date (2026-03-08, its midnight) or a date-time (2026-03-08T09:00, read in timeZone; or with Z or an offset). */
    start: string;
    /** End of the range (exclusive for a date-time; a date includes that whole day). Default: the end of the start's day, or 24 hours after a date-time. */
    end?: string;
    /** IANA time zone (Europe/Istanbul) the range and the results are read in. Default: the pack setting, else this machine's zone. */
    timeZone?: string;
    /** Only these calendars, by id (list_calendars gives them; local is the pack's own). Default: all. */
    sources?: string[];
    /** false: only the person's own calendars (local, files). Default true, which still shows external calendars only for the services the person allowed. */
    includeExternal?: boolean;
    /** Most occurrences to return (default 500), earliest first. */
    limit?: number;
  };
  /** Lists the calendars: the local one, ICS files, subscriptions and CalDAV accounts (with their calendars), each with its kind, whether the AI may read it (consent per service), whether Memo may write to it, and when it was last refreshed. Passwords are never shown. */
  list_calendars: Record<string, never>;
  /** Creates an event in the local calendar (default) or in a CalDAV calendar the person marked writable (calendar: "work" or "work/Personal"). The person sees the fields before it is written. Returns the event's id (calendar:uid). */
  create_calendar_event: {
    /** local (default), a CalDAV account (its only writable calendar), or account/calendar. */
    calendar?: string;
    /** The event's title. */
    title: string;
    /** A date (2026-03-10) for an all-day event, or a date-time (2026-03-10T09:00, read in timeZone; or with Z or an offset). */
    start: string;
    /** For an all-day event its last day (a date); else a date-time. Default: one day, or one hour after start. */
    end?: string;
    /** IANA time zone the event is kept in (its recurrences follow that zone's DST). Default: the pack setting, else this machine's zone. */
    timeZone?: string;
    /** Where it happens (an empty text clears it). */
    location?: string;
    /** Notes (an empty text clears them). */
    description?: string;
    /** An RFC 5545 RRULE such as FREQ=WEEKLY;BYDAY=MO,WE;COUNT=10 (an empty text on update makes the event single). */
    recurrence?: string;
  };
  /** Changes fields of an event in the local calendar or a writable CalDAV calendar: the whole series, or with occurrence one instance only (moved or renamed on its own). The person sees each field's old and new value; the write is refused if the event changed after that preview (ETag). */
  update_calendar_event: {
    /** The event's id as get_calendar_events gives it (calendar:uid). */
    id: string;
    /** Only this occurrence of a recurring event: its recurrenceId from get_calendar_events. Default: the whole event (every occurrence). */
    occurrence?: string;
    /** The event's title. */
    title?: string;
    /** A date (2026-03-10) for an all-day event, or a date-time (2026-03-10T09:00, read in timeZone; or with Z or an offset). */
    start?: string;
    /** For an all-day event its last day (a date); else a date-time. Default: one day, or one hour after start. */
    end?: string;
    /** IANA time zone the event is kept in (its recurrences follow that zone's DST). Default: the pack setting, else this machine's zone. */
    timeZone?: string;
    /** Where it happens (an empty text clears it). */
    location?: string;
    /** Notes (an empty text clears them). */
    description?: string;
    /** An RFC 5545 RRULE such as FREQ=WEEKLY;BYDAY=MO,WE;COUNT=10 (an empty text on update makes the event single). */
    recurrence?: string;
  };
  /** Deletes an event (every occurrence of a recurring one) or, with occurrence, one instance of a series, from the local calendar or a writable CalDAV calendar. The preview says what is lost; asked every time; refused if the event changed after the preview (ETag). */
  delete_calendar_event: {
    /** The event's id as get_calendar_events gives it (calendar:uid). */
    id: string;
    /** Only this occurrence of a recurring event: its recurrenceId from get_calendar_events. Default: the whole event (every occurrence). */
    occurrence?: string;
  };
}
