import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import type { Prompter } from '../../../kernel/permissions/prompter.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';

export const PLUGINS = path.resolve('plugins');
export const FIXTURES = path.resolve('test/fixtures/calendar');

export interface CalendarFixture extends Fixture {
  call(tool: string, args: Record<string, unknown>): Promise<ToolResult>;
  /** Runs `memo calendar <sub>` in this process, as the CLI would; returns the exit code and what it printed. */
  command(sub: string, args?: Record<string, string | undefined>, options?: Record<string, unknown>): Promise<{ code: number; out: unknown[] }>;
  /** Copies a fixture .ics into the workspace root and adds it as a file calendar. */
  addFixture(name: string, file: string): Promise<void>;
  /** The pack's data folder (sources.json, consent.json, calendar.sqlite). */
  packData: string;
}

/** A real kernel with the calendar pack loaded from `plugins/`, a prompter that allows once unless a test says otherwise. */
export async function calendarKernel(
  options: { config?: Record<string, unknown>; prompter?: Prompter; root?: string; dataDir?: string } = {},
): Promise<CalendarFixture> {
  const fx = makeKernel({
    packs: [],
    ...(options.prompter ? { prompter: options.prompter } : {}),
    ...(options.root ? { root: options.root } : {}),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
  });
  const statuses = await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['calendar'] }]);
  const mine = statuses.find((s) => s.id === 'calendar');
  if (mine?.status !== 'loaded') throw new Error(`calendar did not load: ${mine?.error ?? 'not found'}`);
  fx.kernel.packs.setConfig('calendar', { timeZone: 'UTC', ...options.config });
  if (!options.prompter) fx.prompter.setFallback('allow-once');
  const command: CalendarFixture['command'] = async (sub, args = {}, opts = {}) => {
    const group = fx.kernel.commands.get('calendar');
    const s = group?.command.subcommands.find((c) => c.name === sub);
    if (!s) throw new Error(`no memo calendar ${sub}`);
    const out: unknown[] = [];
    const code = await s.run({
      args,
      options: opts,
      signal: new AbortController().signal,
      invoke: (tool, a) => fx.kernel.invoke({ tool, args: a, caller: { kind: 'cli' } }),
      print: (v) => out.push(v),
      record: (change) => fx.kernel.admin.record({ ...change, by: 'cli' }),
    });
    return { code: typeof code === 'number' ? code : 0, out };
  };
  return Object.assign(fx, {
    call: (tool: string, args: Record<string, unknown>) => fx.kernel.invoke({ tool, args, caller: { kind: 'agent' as const } }),
    command,
    addFixture: async (name: string, file: string) => {
      fs.mkdirSync(path.join(fx.root, 'calendars'), { recursive: true });
      fs.copyFileSync(path.join(FIXTURES, file), path.join(fx.root, 'calendars', file));
      const r = await command('add', { kind: 'file', name, location: `calendars/${file}` }, { json: true });
      if (r.code !== 0) throw new Error(`adding ${file} failed: ${JSON.stringify(r.out)}`);
    },
    packData: path.join(fx.dataDir, 'packs-data', 'calendar'),
  });
}

export function value(r: ToolResult): any {
  if (!r.ok) throw new Error(`expected success, got ${r.error.code}: ${r.error.message}`);
  return r.value;
}

export function error(r: ToolResult): { code: string; message: string } {
  if (r.ok) throw new Error(`expected an error, got ${JSON.stringify(r.value).slice(0, 300)}`);
  return r.error;
}

/** The occurrences' titles with their start (and end) as the tool shows them. */
export function brief(events: Array<{ title: string; start: string; end: string }>): string[] {
  return events.map((e) => `${e.start} ${e.title}`);
}
