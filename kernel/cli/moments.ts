/** Moments as the CLI shows them to a person: a UTC time to the minute and how far it is from now. */

/** `2026-11-30T20:15Z`: ISO 8601 in UTC, to the minute (seconds only clutter a list). */
export function minuteIso(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16) + 'Z';
}

/** `in 12 min`, `in 3 h`, `in 2 days`, `5 min ago`: the distance from `now` (minutes rounded up, so a fresh 30-minute approval says 30; hours and days to the nearest). */
export function relative(ms: number, now: number): string {
  const delta = ms - now;
  const abs = Math.abs(delta);
  let text: string;
  if (abs < 60_000) text = '<1 min';
  else if (abs < 120 * 60_000) text = `${Math.ceil(abs / 60_000)} min`;
  else if (abs < 48 * 3_600_000) text = `${Math.round(abs / 3_600_000)} h`;
  else text = `${Math.round(abs / 86_400_000)} days`;
  return delta >= 0 ? `in ${text}` : `${text} ago`;
}

/** `2026-11-30T20:15Z (in 12 min)`. */
export function moment(ms: number, now: number): string {
  return `${minuteIso(ms)} (${relative(ms, now)})`;
}
