import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';
import { KernelHost } from './kernel-host.js';

function manifest(id: string, tools: string[], danger = 'safe') {
  return JSON.stringify({
    id,
    name: id,
    version: '1.0.0',
    description: `${id} pack`,
    main: 'index.js',
    tools: tools.map((name) => ({
      name,
      description: `${name} tool`,
      parameters: { type: 'object', properties: { ms: { type: 'integer' } } },
      danger,
      effect: 'read',
    })),
  });
}

function writePack(dir: string, id: string, code: string, tools = ['greet']) {
  fs.mkdirSync(path.join(dir, id), { recursive: true });
  fs.writeFileSync(path.join(dir, id, 'plugin.json'), manifest(id, tools));
  fs.writeFileSync(path.join(dir, id, 'index.js'), code);
}

describe('hot loading packs in a running kernel', () => {
  let host: KernelHost;
  let packs: string;
  let data: string;
  let skills: string;

  /** The kernel's state of one pack once `ready` says it has settled (polled: a failed load sends no event). */
  async function packState(id: string, ready: (state: any) => boolean): Promise<any> {
    return waitFor(
      async () => {
        const state = (await host.request('packs')).packs.find((p: any) => p.id === id);
        return state && ready(state) ? state : undefined;
      },
      { what: `pack ${id} to settle` },
    );
  }

  beforeAll(requireFreshBuild);
  beforeEach(async () => {
    const base = tempDir('memo-hot-');
    packs = path.join(base, 'packs');
    data = path.join(base, 'data');
    skills = path.join(base, 'skills');
    fs.mkdirSync(packs);
    fs.mkdirSync(skills);
    fs.mkdirSync(path.join(base, 'root'));
    host = await KernelHost.start(path.join(base, 'root'), data, packs, skills);
  });
  afterEach(async () => host?.stop());

  it('makes a new pack callable without a restart, reloads changed code, and removes a deleted pack', async () => {
    writePack(packs, 'greeter', 'export const tools = { greet: () => "v1" };');
    expect(await host.event(1)).toMatchObject({ event: 'added', pack: 'greeter', tools: ['greet'] });
    expect((await host.call('greet')).value).toBe('v1');

    fs.writeFileSync(path.join(packs, 'greeter', 'index.js'), 'export const tools = { greet: () => "v2" };');
    expect(await host.event(2)).toMatchObject({ event: 'reloaded', pack: 'greeter' });
    expect((await host.call('greet')).value).toBe('v2');

    fs.rmSync(path.join(packs, 'greeter'), { recursive: true });
    expect(await host.event(3)).toMatchObject({ event: 'removed', pack: 'greeter' });
    expect((await host.request('list')).tools).toEqual(['find_tools', 'list_skills', 'read_skill']);
    expect((await host.call('greet')).error.code).toBe('UNKNOWN_TOOL');
  });

  it('reloads a change in a file the pack imports, not only its main file', async () => {
    fs.mkdirSync(path.join(packs, 'multi'));
    fs.writeFileSync(path.join(packs, 'multi', 'helper.js'), 'export const word = "first";');
    writePack(packs, 'multi', 'import { word } from "./helper.js"; export const tools = { greet: () => word };');
    await host.event(1);
    expect((await host.call('greet')).value).toBe('first');
    fs.writeFileSync(path.join(packs, 'multi', 'helper.js'), 'export const word = "second";');
    expect(await host.event(2)).toMatchObject({ event: 'reloaded' });
    expect((await host.call('greet')).value).toBe('second');
  });

  it('keeps the previous version running when an update is broken, and says why', async () => {
    writePack(packs, 'fragile', 'export const tools = { greet: () => "ok" };');
    await host.event(1);
    fs.writeFileSync(path.join(packs, 'fragile', 'index.js'), 'export const tools = { greet: () => "oops" ;');
    const state = await packState('fragile', (p) => p.reloadError !== undefined);
    expect(state.status).toBe('loaded');
    expect(state.reloadError).toMatch(/failed to load/);
    expect((await host.call('greet')).value).toBe('ok');
    expect(host.events).toHaveLength(1);
  });

  it('lets a call already running finish on the old code while new calls use the new', async () => {
    // The old handler says when it has started (a file), and finishes only when the test says so.
    const started = path.join(data, '..', 'started');
    const release = path.join(data, '..', 'release');
    writePack(
      packs,
      'slow',
      'import { existsSync, writeFileSync } from "node:fs";\n' +
        'export const tools = { greet: async ({ started, release }) => { writeFileSync(started, ""); while (!existsSync(release)) await new Promise((r) => setTimeout(r, 10)); return "old"; } };',
    );
    await host.event(1);
    const running = host.call('greet', { started, release });
    await waitFor(() => fs.existsSync(started), { what: 'the old handler to start' });
    fs.writeFileSync(path.join(packs, 'slow', 'index.js'), 'export const tools = { greet: async () => "new" };');
    await host.event(2);
    expect((await host.call('greet')).value).toBe('new');
    fs.writeFileSync(release, '');
    expect((await running).value).toBe('old');
  });

  it('turns a burst of saves into one reload', async () => {
    writePack(packs, 'burst', 'export const tools = { greet: () => 0 };');
    await host.event(1);
    for (let i = 1; i <= 5; i++) fs.writeFileSync(path.join(packs, 'burst', 'index.js'), `export const tools = { greet: () => ${i} };`);
    expect(await host.event(2)).toMatchObject({ event: 'reloaded' });
    // A later change elsewhere: once it has loaded and the kernel has no reload pending, any late
    // event of the burst has been seen and handled.
    writePack(packs, 'after', 'export const tools = { greet2: () => 0 };', ['greet2']);
    expect(await host.event(3)).toMatchObject({ event: 'added', pack: 'after' });
    await host.request('idle');
    expect(host.events.map((e) => `${e.event} ${e.pack}`)).toEqual(['added burst', 'reloaded burst', 'added after']);
    expect((await host.call('greet')).value).toBe(5);
  });

  it('applies memo plugins disable and enable from another process at once', async () => {
    writePack(packs, 'toggle', 'export const tools = { greet: () => "hi" };');
    await host.event(1);
    const cli = (verb: string) =>
      spawnSync(process.execPath, [path.resolve('bin/memo'), '--data', data, '--packs', packs, 'plugins', verb, 'toggle'], { encoding: 'utf8' });
    expect(cli('disable').status).toBe(0);
    expect(await host.event(2)).toMatchObject({ event: 'disabled', pack: 'toggle' });
    expect((await host.call('greet')).error.code).toBe('TOOL_DISABLED');
    expect(cli('enable').status).toBe(0);
    expect(await host.event(3)).toMatchObject({ event: 'enabled', pack: 'toggle' });
    expect((await host.call('greet')).value).toBe('hi');
  });

  it('reports a new pack that fails and loads it once it is fixed', async () => {
    writePack(packs, 'later', 'export const tools = {};');
    const state = await packState('later', (p) => p.status === 'failed');
    expect(state).toMatchObject({ status: 'failed', error: expect.stringContaining('no handler for greet') });
    fs.writeFileSync(path.join(packs, 'later', 'index.js'), 'export const tools = { greet: () => "fixed" };');
    expect(await host.event(1)).toMatchObject({ event: 'added', pack: 'later' });
    expect((await host.call('greet')).value).toBe('fixed');
  });

  it('adds, changes and removes a skill and its command tools while running', async () => {
    const write = (desc: string, word: string) => {
      fs.mkdirSync(path.join(skills, 'sayer'), { recursive: true });
      fs.writeFileSync(
        path.join(skills, 'sayer', 'SKILL.md'),
        `---\nname: sayer\ndescription: ${desc}\ntools:\n  - name: say\n    description: Says a word.\n    command: "printf ${word}"\n    parameters: { type: object }\n---\nSay it.\n`,
      );
    };
    write('First.', 'one');
    expect(await host.event(1)).toMatchObject({ event: 'added', pack: 'skill-sayer', tools: ['say'] });
    expect((await host.call('say')).value.stdout).toBe('one');
    write('Second.', 'two');
    expect(await host.event(2)).toMatchObject({ event: 'reloaded', pack: 'skill-sayer' });
    expect((await host.call('say')).value.stdout).toBe('two');
    expect((await host.call('list_skills')).value.skills).toEqual([{ name: 'sayer', description: 'Second.', tools: ['say'] }]);
    fs.rmSync(path.join(skills, 'sayer'), { recursive: true });
    expect(await host.event(3)).toMatchObject({ event: 'removed', pack: 'skill-sayer' });
    expect((await host.request('skills')).skills).toEqual([]);
  });
});
