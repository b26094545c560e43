/**
 * A panel's person commands (kernel/packs/console-panels.ts): checked when a pack registers them,
 * run by the console only when the command group is the pack's own, with the command's output as
 * the result. Real kernel, real HTTP on loopback.
 */
import type { PackApi } from '../../kernel/packs/pack-api.js';
import { ConsolePanels } from '../../kernel/packs/console-panels.js';
import { consoleFixture, post, raw, type ConsoleFixture } from './console-helpers.js';

/** A pack with a command group `notes-admin` whose `mark` subcommand prints JSON, and a panel with its own and a foreign command. */
const pack = {
  id: 'notes-admin',
  version: '1.0.0',
  tools: [],
  activate: (api: PackApi) => {
    api.commands.register({
      name: 'notes-admin',
      description: 'test commands',
      subcommands: [
        {
          name: 'mark',
          description: 'marks a note',
          arguments: [{ name: 'note', required: true }, { name: 'colour' }],
          options: [{ flags: '--json', description: 'print JSON' }],
          run: (ctx) => {
            if (ctx.args.note === 'missing') {
              ctx.print({ ok: false, error: { code: 'NOT_FOUND', message: 'There is no note "missing".' } });
              return 1;
            }
            ctx.print(ctx.options.json ? { ok: true, result: { note: ctx.args.note, colour: ctx.args.colour ?? null } } : 'marked');
            return 0;
          },
        },
      ],
    });
    api.panels.register({
      id: 'marks',
      title: 'Marks',
      commands: [
        { id: 'mark-red', label: 'Mark red', command: 'notes-admin mark', args: { colour: 'red' } },
        { id: 'foreign', label: 'Someone else’s', command: 'calendar consent' },
      ],
    });
  },
};

describe('web console: panel commands', () => {
  let c: ConsoleFixture;
  let cookie: string;
  beforeAll(async () => {
    c = await consoleFixture({ packs: [pack] });
    cookie = await c.login();
  });
  afterAll(() => c.close());

  it('runs the pack’s own subcommand with the person’s arguments under the fixed ones, as JSON', async () => {
    const r = await post(c.origin, '/ui/api/panels/notes-admin/marks/mark-red', cookie, { args: { note: 'Plan', colour: 'blue' } });
    expect(JSON.parse(r.body)).toEqual({ ok: true, summary: 'memo notes-admin mark', value: { note: 'Plan', colour: 'red' } });
    const failed = await post(c.origin, '/ui/api/panels/notes-admin/marks/mark-red', cookie, { args: { note: 'missing' } });
    expect(JSON.parse(failed.body)).toEqual({ ok: false, error: { code: 'NOT_FOUND', message: 'There is no note "missing".' } });
  });

  it('does not run a command group of another pack, and says it is not available', async () => {
    const panels = JSON.parse((await raw(`${c.origin}/ui/api/panels`, { headers: { Cookie: cookie } })).body);
    const marks = panels.find((p: any) => p.id === 'marks');
    expect(marks.commands.map((x: any) => [x.id, x.available])).toEqual([
      ['mark-red', true],
      ['foreign', false],
    ]);
    expect((await post(c.origin, '/ui/api/panels/notes-admin/marks/foreign', cookie, { args: {} })).status).toBe(404);
  });

  it('refuses a panel whose commands are not "group sub", repeat an id, or fix arguments that are not text', () => {
    const panels = new ConsolePanels();
    expect(() => panels.register('p', { id: 'x', title: 'X', commands: [{ id: 'a', label: 'A', command: 'rm -rf' }] }, [])).toThrow(
      /command must be "group subcommand"/,
    );
    expect(() =>
      panels.register('p', { id: 'x', title: 'X', actions: [{ id: 'a', label: 'A', tool: 't' }], commands: [{ id: 'a', label: 'B', command: 'g s' }] }, ['t']),
    ).toThrow(/"a" is declared twice/);
    expect(() =>
      panels.register('p', { id: 'x', title: 'X', commands: [{ id: 'a', label: 'A', command: 'g s', args: { n: 1 as unknown as string } }] }, []),
    ).toThrow(/args must be an object of strings/);
  });
});
