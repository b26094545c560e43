/**
 * The admin lines a kernel wrote, as `action target by face` (target `-` when none): read from the
 * events its trail keeps of what it wrote, so the same check holds on the file and on PostgreSQL.
 */
export function adminActions(kernel: { audit: object }): string[] {
  const events = (kernel.audit as { events?: Array<Record<string, unknown>> }).events;
  if (!events) throw new Error('this audit sink does not keep the events it wrote');
  return events.filter((l) => l.event === 'admin').map((l) => `${String(l.action)} ${typeof l.target === 'string' ? l.target : '-'} by ${String(l.by)}`);
}
