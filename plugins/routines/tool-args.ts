// generated from plugin.json by memo plugins types; do not edit

/** Each tool of this pack, by name: the arguments its handler is given (validated against plugin.json). */
export interface ToolArgs {
  /** Creates a scheduled routine from the user's plain-language description: each run is an agent turn that asks `prompt` with only `tools` available. Turn the user's words into a structured schedule: kind cron (a 5-field cron expression and an IANA time_zone: 'every weekday at 8:30 in Istanbul' is cron '30 8 * * 1-5', time_zone 'Europe/Istanbul'), once (at: a local date-time YYYY-MM-DDTHH:MM in time_zone), or every (every N minutes or hours, optionally from start_at). Never guess: when the words leave the time, the days, the time zone or what to do unclear, list the questions in `unclear` (the routine is then not created and the user is asked) or ask the user first. The user approves the routine once, after seeing the schedule read back, the next 3 run times and each tool its runs may use without asking. */
  create_routine: {
    /** A short title (Morning brief). */
    name: string;
    /** The user's own words for the routine, verbatim: shown beside the read-back so the user can check they match. */
    request?: string;
    /** What each run asks the model, complete on its own (the run has no conversation): 'Summarise today's calendar events and unread inbox items.' */
    prompt: string;
    /** When it runs. cron: cron + time_zone. once: at + time_zone. every: every + unit (+ start_at + time_zone). */
    schedule: {
      kind: 'cron' | 'once' | 'every';
      /** 5 fields: minute hour day-of-month month day-of-week (0 or 7 = Sunday). '30 8 * * 1-5' = weekdays at 08:30. */
      cron?: string;
      /** For once: local date and time, YYYY-MM-DDTHH:MM, in time_zone. */
      at?: string;
      /** IANA time zone (Europe/Istanbul, America/New_York, UTC). */
      time_zone?: string;
      /** For every: the interval (at least 5 minutes). */
      every?: number;
      unit?: 'minutes' | 'hours';
      /** For every: the first run, YYYY-MM-DDTHH:MM in time_zone. Default: one interval from now. */
      start_at?: string;
    };
    /** The only tools each run may call (exact names); in Vault only, only tools that mode offers. The user's approval of the routine pre-approves them for its runs, except deletes, tools that always ask, and commands the judge cannot vouch for, which are asked every time. */
    tools?: string[];
    /** When Memo was not running at a run time: skip it, run it once when Memo is back, or (default) run it once only if the missed time is less than misfire_grace_minutes old. */
    misfire?: 'skip' | 'run_once' | 'run_once_if_recent';
    misfire_grace_minutes?: number;
    /** Questions the user's words leave open (which time zone, what 'morning' means, which days). Any entry: nothing is created and the questions are returned to ask the user. */
    unclear?: string[];
  };
  /** Lists the scheduled routines: each with its id, name, schedule in words, status (active, paused, done, cancelled), next run time, the provider and model it runs with, its tools, the access mode it runs in, and its last result (status, when, and the answer or error, shortened). */
  list_routines: {
    /** Only routines in this state. Default: all but cancelled ones. */
    status?: 'active' | 'paused' | 'done' | 'cancelled' | 'all';
    limit?: number;
  };
  /** Cancels a scheduled routine by id (list_routines gives ids): it never runs again, a run in progress is stopped, and pending retries are dropped. Its history is kept. The preview shows what stops. */
  cancel_routine: {
    id: string;
  };
  /** A routine's runs, newest first (list_routines gives ids): when each was due, started and ended, how it was triggered, its status and stop reason, its tool steps, and its answer or error. */
  routine_history: {
    id: string;
    /** How many runs (default 20). */
    limit?: number;
  };
  /** Runs a routine once now, outside its schedule (list_routines gives ids); its schedule is unchanged. The run goes on after this returns: routine_history shows how it ended. Needs the person's confirmation. */
  run_routine_now: {
    id: string;
  };
}
