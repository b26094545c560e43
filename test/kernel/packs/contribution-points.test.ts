/**
 * The contribution points of the pack API, through real fixture packs loaded from disk
 * (test/fixtures/contrib-packs): CLI command groups, services run by start()/shutdown(), services
 * offered to other packs by token, console panels as data, and the host context.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import { BUILTIN_COMMANDS, PackCommands } from '../../../kernel/packs/pack-commands.js';
import { ConsolePanels } from '../../../kernel/packs/console-panels.js';
import { SharedServices } from '../../../kernel/packs/shared-services.js';
import { buildProgram } from '../../../kernel/cli/main.js';
import { builtinPackIds } from '../../../kernel/kernel.js';
import type { BuiltinPackId } from '../../../kernel/builtin-packs.js';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';

const PACKS = path.resolve('test/fixtures/contrib-packs');

const value = (r: ToolResult): any => {
  if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
  return r.value;
};

describe('contribution points of the pack API', () => {
  let fx: Fixture;
  const events = () => {
    const file = path.join(fx.dataDir, 'packs-data', 'contrib-demo', 'events.log');
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n') : [];
  };

  beforeEach(async () => {
    fx = makeKernel({ packs: [] });
    const states = await fx.kernel.loadPacks([{ dir: PACKS, source: 'extra' }]);
    expect(states.map((s) => [s.id, s.status, s.error ?? ''])).toEqual([
      ['contrib-consumer', 'loaded', ''],
      ['contrib-demo', 'loaded', ''],
    ]);
  });
  afterEach(() => fx.close());

  it('lists the command group a pack registers, with its owner', () => {
    const [entry] = fx.kernel.commands.list();
    expect(entry?.pack).toBe('contrib-demo');
    expect(entry?.command.name).toBe('contrib');
    expect(entry?.command.subcommands.map((s) => s.name)).toEqual(['ping']);
  });

  it('starts pack services at start(), which call tools through the pipeline, and stops them at shutdown', async () => {
    expect(fx.kernel.services.list()).toEqual([{ pack: 'contrib-demo', name: 'ticker', state: 'stopped' }]);
    expect(events()).toEqual([]);
    await fx.kernel.start();
    expect(fx.kernel.services.list()).toEqual([{ pack: 'contrib-demo', name: 'ticker', state: 'running' }]);
    expect(events()).toEqual(['service started']);
    const line = fx.kernel.audit.tail({ tool: 'contrib_record' }).at(-1);
    expect(line?.caller).toEqual({ kind: 'host', id: 'contrib-demo/ticker' });
    expect(line?.outcome).toBe('ok');
    await fx.kernel.shutdown();
    expect(events()).toEqual(['service started', 'service stopped']);
  });

  it('stops the services of a pack that unloads, and starts those of a pack loaded while running', async () => {
    await fx.kernel.start();
    fx.kernel.packs.unload('contrib-demo');
    await waitFor(() => events().includes('service stopped'), { what: 'the service to stop' });
    expect(fx.kernel.services.list()).toEqual([]);
    await fx.kernel.loadPacks([{ dir: PACKS, source: 'extra', only: ['contrib-demo'] }]);
    await waitFor(() => fx.kernel.services.list()[0]?.state === 'running', { what: 'the service to run again' });
    expect(events()).toEqual(['service started', 'service stopped', 'service started']);
  });

  it('reports a service whose start fails and keeps the others running', async () => {
    fx.kernel.services.register('other', { name: 'broken', start: () => Promise.reject(new Error('port 1 is taken')) });
    await fx.kernel.start();
    expect(fx.kernel.services.list()).toEqual([
      { pack: 'contrib-demo', name: 'ticker', state: 'running' },
      { pack: 'other', name: 'broken', state: 'failed', error: 'port 1 is taken' },
    ]);
    expect(fx.logger.lines.some((l) => l.message.includes('service other/broken failed to start: port 1 is taken'))).toBe(true);
  });

  it('lets one pack use a service another offers by token, and withdraws it when the provider unloads', async () => {
    const greet = async () => value(await fx.kernel.invoke({ tool: 'consumer_greet', args: { name: 'Ann' }, caller: { kind: 'agent' } }));
    expect(await greet()).toEqual({ greeting: 'hello Ann' });
    expect(fx.kernel.shared.list()).toEqual([{ token: 'contrib.greeter', pack: 'contrib-demo' }]);
    fx.kernel.packs.unload('contrib-demo');
    expect(await greet()).toEqual({ greeting: null });
    expect(fx.kernel.shared.list()).toEqual([]);
  });

  it('lists console panels as data whose actions run the pack tools through the pipeline', async () => {
    expect(fx.kernel.panels.list()).toEqual([
      {
        pack: 'contrib-demo',
        id: 'main',
        title: 'Contrib demo',
        settings: false,
        actions: [{ id: 'ping', label: 'Ping', tool: 'contrib_ping', args: { word: 'from the console' } }],
      },
    ]);
    const action = fx.kernel.panels.get('contrib-demo', 'main')!.actions![0]!;
    const r = value(await fx.kernel.invoke({ tool: action.tool, args: action.args, caller: { kind: 'host', id: 'console' } }));
    expect(r.word).toBe('from the console');
    expect(fx.kernel.audit.tail({ tool: 'contrib_ping' }).at(-1)?.caller).toEqual({ kind: 'host', id: 'console' });
  });

  it('gives packs the host context read-only, and tells them when it changes', async () => {
    const ping = async () => value(await fx.kernel.invoke({ tool: 'contrib_ping', args: { word: 'x' }, caller: { kind: 'agent' } }));
    expect((await ping()).note).toBeNull();
    fx.kernel.hostContext.set('currentNote', { path: 'notes/today.md', title: 'Today' });
    expect((await ping()).note).toEqual({ path: 'notes/today.md', title: 'Today' });
    expect(events()).toEqual(['host changed currentNote']);
    fx.kernel.hostContext.set('currentNote', undefined);
    expect((await ping()).note).toBeNull();
  });

  it('releases everything a pack contributed when it unloads', () => {
    fx.kernel.packs.unload('contrib-demo');
    expect(fx.kernel.commands.list()).toEqual([]);
    expect(fx.kernel.panels.list()).toEqual([]);
    expect(fx.kernel.services.list()).toEqual([]);
    expect(fx.kernel.shared.list()).toEqual([]);
  });
});

describe('contribution point checks', () => {
  it('reserves every command of memo itself, so no pack shadows one', () => {
    const names = buildProgram(() => {}).program.commands.map((c) => c.name());
    expect([...BUILTIN_COMMANDS].filter((n) => n !== 'help').sort()).toEqual([...names].sort());
    const commands = new PackCommands();
    const run = () => 0;
    expect(() => commands.register('p', { name: 'tools', description: 'd', subcommands: [{ name: 'x', description: 'd', run }] })).toThrow(
      /may not register the command "tools"/,
    );
  });

  it('refuses a second pack registering the same command, token or a malformed command', () => {
    const commands = new PackCommands();
    const run = () => 0;
    commands.register('a', { name: 'vault', description: 'd', subcommands: [{ name: 'list', description: 'd', run }] });
    expect(() => commands.register('b', { name: 'vault', description: 'd', subcommands: [{ name: 'list', description: 'd', run }] })).toThrow(
      'Command "vault" of pack "b" is already provided by pack "a".',
    );
    expect(() => commands.register('b', { name: 'Bad Name', description: '', subcommands: [] })).toThrow(
      /name must be kebab-case; description is required; subcommands must list at least one subcommand/,
    );
    const shared = new SharedServices();
    shared.provide('a', 'vault.notes', {});
    expect(() => shared.provide('b', 'vault.notes', {})).toThrow('Service "vault.notes" of pack "b" is already provided by pack "a".');
    expect(() => shared.provide('b', 'notes', {})).toThrow(/tokens are dotted names/);
  });

  it('refuses a panel action that calls a tool of another pack', () => {
    const panels = new ConsolePanels();
    expect(() =>
      panels.register('canvas', { id: 'main', title: 'Canvas', actions: [{ id: 'wipe', label: 'Wipe', tool: 'delete_file' }] }, ['canvas_read']),
    ).toThrow('Panel "main" of pack "canvas" is invalid: action "wipe": tool "delete_file" is not one of the pack\'s tools (canvas_read).');
  });

  it("refuses a panel list whose tool, columns, row actions, dates or refresh are not the pack's or not well formed, naming each problem", () => {
    const panels = new ConsolePanels();
    expect(() =>
      panels.register(
        'canvas',
        {
          id: 'main',
          title: 'Canvas',
          lists: [
            {
              id: 'boards',
              title: 'Boards',
              tool: 'read_file',
              columns: [{ key: 'name; drop', label: '' }],
              rowActions: [{ id: 'wipe', label: 'Wipe', tool: 'delete_file', from: { id: 'id' } }],
              dates: { start: 0.5 },
              refreshSeconds: 1,
            },
          ],
          commands: [{ id: 'qr', label: 'QR', command: 'canvas qr', refresh: { seconds: 2 } }],
        },
        ['canvas_read'],
      ),
    ).toThrow(
      [
        'Panel "main" of pack "canvas" is invalid: command "qr": refresh.seconds must be a whole number from 5 to 3600',
        'list "boards": tool "read_file" is not one of the pack\'s tools (canvas_read)',
        'list "boards": dates must map argument names to whole numbers of days (at most 3660 either way)',
        'list "boards": a column\'s key must be a key of the row (dots for nested keys)',
        'list "boards": column "name; drop" needs a label',
        'list "boards", row action "wipe": tool "delete_file" is not one of the pack\'s tools',
        'list "boards": refreshSeconds must be a whole number from 5 to 3600.',
      ].join('; '),
    );
    const ok = panels.register(
      'canvas',
      {
        id: 'main',
        title: 'Canvas',
        lists: [
          {
            id: 'boards',
            title: 'Boards',
            tool: 'canvas_read',
            rows: 'boards',
            columns: [{ key: 'name', label: 'Board', item: 'canvas', itemId: 'id' }],
            refreshSeconds: 30,
          },
        ],
      },
      ['canvas_read'],
    );
    expect(panels.get('canvas', 'main')?.lists?.[0]).toMatchObject({ tool: 'canvas_read', refreshSeconds: 30 });
    ok.dispose();
  });
});

describe('loading packs by id', () => {
  it('loads only the built-in packs named', async () => {
    const fx = makeKernel({ packs: [] });
    const states = await fx.kernel.loadPacks(['shell']);
    expect(states.map((s) => [s.id, s.status])).toEqual([['shell', 'loaded']]);
    expect(fx.kernel.registry.packs().map((p) => p.id)).toEqual(expect.arrayContaining(['shell']));
    expect(fx.kernel.registry.has('read_file')).toBe(false);
    await fx.close();
  });

  it('refuses an unknown id before loading anything, naming the built-in ones', async () => {
    const fx = makeKernel({ packs: [] });
    // Every folder of plugins/ with a plugin.json, in order (packs are added over time). A typed host
    // cannot pass 'fs-tool' (BuiltinPackId); untyped JavaScript can, and is refused at run time.
    const ids = ['shell', 'fs-tool'] as unknown as BuiltinPackId[];
    await expect(fx.kernel.loadPacks(ids)).rejects.toThrow(`No built-in pack is called "fs-tool" (built-in packs: ${builtinPackIds().join(', ')}).`);
    expect(builtinPackIds()).toEqual(expect.arrayContaining(['calendar', 'fs-tools', 'providers', 'routines', 'shell', 'vault', 'web-search']));
    expect(fx.kernel.registry.has('run_command')).toBe(false);
    await fx.close();
  });
});

describe('packs registered in code', () => {
  it('runs their activate before start() resolves, and refuses a second connection to the same pack database', async () => {
    const seen: string[] = [];
    const fx = makeKernel({
      packs: [
        {
          id: 'host-pack',
          tools: [],
          activate: async (api) => {
            const ds = await api.database({ name: 'store', entities: [], migrations: [] });
            seen.push(`open ${ds.isInitialized}`);
            await api.database({ name: 'store', entities: [], migrations: [] }).catch((err: Error) => seen.push(err.message));
            api.services.register({ name: 'loop', start: () => void seen.push('service started') });
          },
        },
      ],
    });
    await fx.kernel.start();
    expect(seen).toEqual(['open true', 'Pack "host-pack" already opened its database "store"; keep the DataSource it returned.', 'service started']);
    expect(fs.existsSync(path.join(fx.dataDir, 'packs-data', 'host-pack', 'store.sqlite'))).toBe(true);
    await fx.close();
  });

  it('withdraws a pack whose activate fails, saying why', async () => {
    const fx = makeKernel({
      packs: [
        {
          id: 'broken-host-pack',
          tools: [{ spec: { name: 'bhp_tool', description: 'd', parameters: { type: 'object' }, danger: 'safe', effect: 'read' }, impl: () => 1 }],
          activate: () => {
            throw new Error('no licence key');
          },
        },
      ],
    });
    await fx.kernel.start();
    expect(fx.kernel.registry.has('bhp_tool')).toBe(false);
    expect(fx.logger.lines.some((l) => l.message === 'pack broken-host-pack was withdrawn: its activate() failed: no licence key')).toBe(true);
    await fx.close();
  });
});
