/**
 * Access modes (issue 39): a pack's manifest may give its tools' default `modes`, a tool's own
 * `modes` wins, the registry holds the effective list; and what the built-in packs declare: which
 * tools Vault only and Web search only offer, and the keywords and examples tool search ranks on.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { builtinPackIds } from '../../../kernel/kernel.js';
import { checkPackFolder, keywordWarnings } from '../../../kernel/packs/pack-check.js';
import { offeredIn } from '../../../kernel/tools/access-modes.js';
import type { AccessMode } from '../../../kernel/tools/contract.js';
import { makeKernel, tempDir, tool, type Fixture } from '../../helpers/kernel-fixture.js';

const readTool = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `${name} for tests`,
  parameters: { type: 'object' },
  danger: 'safe',
  effect: 'read',
  ...extra,
});

/** A pack folder `<base>/<id>` whose every tool returns 1. */
function writePack(base: string, id: string, manifest: Record<string, unknown>): string {
  const dir = path.join(base, id);
  fs.mkdirSync(dir, { recursive: true });
  const tools = (manifest.tools as Array<{ name: string }>).map((t) => t.name);
  fs.writeFileSync(path.join(dir, 'plugin.json'), JSON.stringify({ id, name: id, version: '1.0.0', description: 'd', main: 'index.js', ...manifest }));
  fs.writeFileSync(path.join(dir, 'index.js'), `export const tools = { ${tools.map((t) => `${t}: () => 1`).join(', ')} };\n`);
  return dir;
}

describe("a pack's default modes and a tool's own", () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it("gives a manifest pack's tools its modes unless a tool declares its own, even []", async () => {
    const base = tempDir('memo-modes-');
    writePack(base, 'notes-pack', {
      modes: ['vault'],
      tools: [
        readTool('np_plain'),
        readTool('np_none', { modes: [] }),
        readTool('np_web', { modes: ['web'] }),
        readTool('np_both', { modes: ['web', 'vault'] }),
      ],
    });
    writePack(base, 'plain-pack', { tools: [readTool('pp_tool')] });
    fx = makeKernel({ packs: [] });
    const states = await fx.kernel.loadPacks([{ dir: base, source: 'extra' }]);
    expect(states.map((s) => [s.id, s.status])).toEqual([
      ['notes-pack', 'loaded'],
      ['plain-pack', 'loaded'],
    ]);
    const modes = (name: string) => fx.kernel.registry.get(name)!.spec.modes;
    expect(modes('np_plain')).toEqual(['vault']);
    expect(modes('np_none')).toEqual([]);
    expect(modes('np_web')).toEqual(['web']);
    expect(modes('np_both')).toEqual(['web', 'vault']);
    expect(modes('pp_tool')).toBeUndefined();
    expect('modes' in fx.kernel.registry.get('pp_tool')!.spec).toBe(false);

    const offered = (mode: AccessMode) =>
      fx.kernel.registry
        .list()
        .filter((t) => t.pack.source === 'extra' && offeredIn(t.spec, mode))
        .map((t) => t.spec.name);
    expect(offered('vault')).toEqual(['np_both', 'np_plain']);
    expect(offered('web')).toEqual(['np_both', 'np_web']);
    expect(offered('computer')).toEqual(['np_both', 'np_none', 'np_plain', 'np_web', 'pp_tool']);
  });

  it("gives a host pack's tools its modes the same way, and keeps the declared spec as it was", () => {
    const declared = tool('hp_own', 'safe', 'read', { modes: [] });
    fx = makeKernel({
      packs: [
        {
          id: 'host-pack',
          modes: ['web'],
          tools: [
            { spec: tool('hp_default', 'safe'), impl: () => 1 },
            { spec: declared, impl: () => 1 },
          ],
        },
      ],
    });
    expect(fx.kernel.registry.get('hp_default')!.spec.modes).toEqual(['web']);
    expect(fx.kernel.registry.get('hp_own')!.spec.modes).toEqual([]);
    expect(declared.modes).toEqual([]);
  });

  it('refuses a manifest whose modes name an unknown mode, naming the field and what is allowed', async () => {
    const base = tempDir('memo-modes-');
    writePack(base, 'desk-pack', { modes: ['desktop'], tools: [readTool('dp_tool')] });
    writePack(base, 'tool-pack', { tools: [readTool('tp_tool', { modes: ['vault', 'vault'] })] });
    fx = makeKernel({ packs: [] });
    const states = await fx.kernel.loadPacks([{ dir: base, source: 'extra' }]);
    const error = Object.fromEntries(states.map((s) => [s.id, s.error]));
    expect(error['desk-pack']).toBe('plugin.json is invalid: modes.0 must be one of vault, web (got "desktop")');
    expect(error['tool-pack']).toMatch(/^plugin\.json is invalid: tool "tp_tool": modes must NOT have duplicate items/);
    expect(fx.kernel.registry.has('dp_tool')).toBe(false);
  });

  it('refuses a host pack whose modes name an unknown mode', () => {
    fx = makeKernel({ packs: [] });
    expect(() => fx.kernel.registerPack({ id: 'desk', modes: ['desktop' as never], tools: [{ spec: tool('d_tool', 'safe'), impl: () => 1 }] })).toThrow(
      'Pack "desk" is invalid: modes.0 must be one of vault, web (got "desktop").',
    );
    expect(fx.kernel.registry.has('d_tool')).toBe(false);
  });
});

describe('memo plugins validate on modes, keywords and examples', () => {
  it('names the field of each bad modes, keywords and examples', async () => {
    const base = tempDir('memo-modes-');
    const dir = writePack(base, 'bad-search', {
      modes: 'vault',
      tools: [
        readTool('bs_modes', { modes: ['computer'] }),
        readTool('bs_keywords', { keywords: ['ok', ''] }),
        readTool('bs_examples', { examples: 'what is on my calendar' }),
      ],
    });
    const { manifest, problems } = await checkPackFolder(dir);
    expect(manifest).toBeNull();
    expect(problems).toEqual(
      expect.arrayContaining([
        { file: 'plugin.json', field: 'modes', message: 'must be array (got "vault")' },
        { file: 'plugin.json', tool: 'bs_modes', field: 'modes.0', message: 'must be one of vault, web (got "computer")' },
        { file: 'plugin.json', tool: 'bs_keywords', field: 'keywords.1', message: expect.stringMatching(/^must NOT have fewer than 1 characters/) },
        { file: 'plugin.json', tool: 'bs_examples', field: 'examples', message: 'must be array (got "what is on my calendar")' },
      ]),
    );
  });

  it("warns, without failing, about keywords that only repeat words of the tool's name", async () => {
    const base = tempDir('memo-modes-');
    const dir = writePack(base, 'cal-pack', {
      tools: [
        readTool('get_calendar_events', { keywords: ['calendar', 'Events', 'calendar events', 'agenda'] }),
        readTool('list_meetings', { keywords: ['appointments', 'schedule'] }),
      ],
    });
    const { manifest, problems, warnings } = await checkPackFolder(dir);
    expect(problems).toEqual([]);
    expect(manifest?.id).toBe('cal-pack');
    expect(warnings).toEqual([
      {
        file: 'plugin.json',
        tool: 'get_calendar_events',
        field: 'keywords',
        message:
          '"calendar", "Events", "calendar events" only repeat words of its name (tool search matches the name already): give other words a person would use',
      },
    ]);
  });
});

describe("the built-in packs' access modes", () => {
  let fx: Fixture;
  beforeAll(async () => {
    fx = makeKernel({ packs: [] });
    const states = await fx.kernel.loadPacks(builtinPackIds());
    expect(states.filter((s) => s.status !== 'loaded')).toEqual([]);
  });
  afterAll(async () => fx?.close());

  const all = () => fx.kernel.registry.list({ includeDisabled: true });
  const toolsOf = (...packs: string[]) =>
    all()
      .filter((t) => packs.includes(t.pack.id))
      .map((t) => t.spec.name);
  const offered = (mode: AccessMode) =>
    all()
      .filter((t) => offeredIn(t.spec, mode))
      .map((t) => t.spec.name);

  it('offers Vault only the vault, canvas and calendar tools, the skills tools and the routine tools that do not run one', () => {
    const vault = offered('vault');
    expect(toolsOf('vault').length).toBeGreaterThan(50);
    expect(toolsOf('calendar')).toEqual(expect.arrayContaining(['get_calendar_events', 'create_calendar_event']));
    expect(vault.sort()).toEqual(
      [
        ...toolsOf('vault', 'canvas', 'calendar'),
        'list_skills',
        'read_skill',
        'find_tools',
        'create_routine',
        'list_routines',
        'cancel_routine',
        'routine_history',
      ].sort(),
    );
  });

  it('never offers Vault only the shell, the files, provider settings, running a routine or WhatsApp', () => {
    const vault = offered('vault');
    const never = [
      'run_command',
      'read_env',
      ...toolsOf('fs-tools'),
      'self_clone',
      'configure_provider',
      'run_routine_now',
      ...toolsOf('whatsapp'),
      'whatsapp_send',
    ];
    expect(toolsOf('fs-tools').length).toBeGreaterThanOrEqual(10);
    expect(toolsOf('whatsapp')).toHaveLength(4);
    expect(vault.filter((name) => never.includes(name))).toEqual([]);
  });

  it('offers Web search only web_search and nothing else', () => {
    expect(offered('web')).toEqual(['web_search']);
  });

  it('offers Computer access every tool', () => {
    expect(offered('computer')).toEqual(all().map((t) => t.spec.name));
  });

  it('gives every built-in tool 3 to 8 keywords and 1 to 3 examples, none only repeating its name', () => {
    const lacking = all()
      .filter((t) => t.pack.source === 'builtin' || t.pack.id === 'skills')
      .filter(
        (t) => !((t.spec.keywords?.length ?? 0) >= 3 && t.spec.keywords!.length <= 8 && (t.spec.examples?.length ?? 0) >= 1 && t.spec.examples!.length <= 3),
      )
      .map((t) => t.spec.name);
    expect(lacking).toEqual([]);
    expect(all().length).toBeGreaterThan(90);
    expect(keywordWarnings(all().map((t) => t.spec))).toEqual([]);
  });
});

describe('the pipeline knows the mode of a call', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());
  const seen: Array<AccessMode | undefined> = [];
  const modesPack = () => ({
    id: 'mode-pack',
    tools: [
      { spec: tool('mp_vault', 'safe', 'read', { modes: ['vault'] }), impl: (_a: unknown, ctx: { mode?: AccessMode }) => void seen.push(ctx.mode) },
      { spec: tool('mp_computer', 'safe'), impl: (_a: unknown, ctx: { mode?: AccessMode }) => void seen.push(ctx.mode) },
    ],
  });

  it("gives the handler the call's mode, and none when the caller gave none", async () => {
    seen.length = 0;
    fx = makeKernel({ packs: [modesPack()] });
    const caller = { kind: 'host' as const };
    expect((await fx.kernel.invoke({ tool: 'mp_vault', args: {}, caller }, { mode: 'vault' })).ok).toBe(true);
    expect((await fx.kernel.invoke({ tool: 'mp_computer', args: {}, caller }, { mode: 'computer' })).ok).toBe(true);
    expect((await fx.kernel.invoke({ tool: 'mp_computer', args: {}, caller })).ok).toBe(true);
    expect(seen).toEqual(['vault', 'computer', undefined]);
  });

  it('refuses a tool the mode does not offer as unknown, naming what the mode offers, without running it', async () => {
    seen.length = 0;
    fx = makeKernel({ packs: [modesPack()] });
    const r = await fx.kernel.invoke({ tool: 'mp_computer', args: {}, caller: { kind: 'host' } }, { mode: 'vault' });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe('UNKNOWN_TOOL');
      const available = /in this mode \(available: (.*)\)\.$/.exec(r.error.message)![1]!.split(', ');
      expect(available).toContain('mp_vault');
      expect(available).not.toContain('mp_computer');
    }
    expect(seen).toEqual([]);
  });
});
