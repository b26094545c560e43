/**
 * A repeating task's next occurrence: completing a task with a repeat rule and a due date creates the
 * next one, due on the rule's first occurrence after this one (ical.js expands the RFC 5545 rule, as
 * the calendar pack does). Dates are the task's own days (in its zone, or floating), so a weekly task
 * due on a Monday stays due on Mondays across a daylight-saving change. A COUNT is carried down by
 * one; the last occurrence (COUNT=1, or past UNTIL) makes none.
 */
import ICAL from 'ical.js';

export interface NextOccurrence {
  due_date: string;
  due_time: string | null;
  repeat_rule: string;
}

const pad = (n: number) => String(n).padStart(2, '0');

export function nextOccurrence(rule: string, dueDate: string, dueTime: string | null): NextOccurrence | null {
  const recur = ICAL.Recur.fromString(rule);
  const [year, month, day] = dueDate.split('-').map(Number) as [number, number, number];
  const subDaily = ['SECONDLY', 'MINUTELY', 'HOURLY'].includes(String(recur.freq));
  const [hour, minute] = (dueTime ?? '00:00').split(':').map(Number) as [number, number];
  // A sub-daily rule needs a time to step from; a daily or longer one steps whole days and keeps the time.
  const start = ICAL.Time.fromData({ year, month, day, hour, minute, second: 0, isDate: !subDaily });
  const count = recur.count;
  if (count !== null && count !== undefined && count <= 1) return null;
  const it = recur.iterator(start);
  for (let i = 0; i < 10_000; i++) {
    const t = it.next();
    if (!t) return null;
    if (t.compare(start) <= 0) continue;
    let next = rule;
    if (count !== null && count !== undefined) next = rule.replace(/(^|;)COUNT=\d+/i, `$1COUNT=${count - 1}`);
    return {
      due_date: `${t.year}-${pad(t.month)}-${pad(t.day)}`,
      due_time: subDaily ? `${pad(t.hour)}:${pad(t.minute)}` : dueTime,
      repeat_rule: next,
    };
  }
  return null;
}
