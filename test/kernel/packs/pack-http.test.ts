/**
 * The HTTP contribution point (`api.http.mount`): a pack's routes are served on the MCP endpoint's
 * port while the pack is enabled, answer 404 saying so while it is disabled, and are released when
 * it unloads. Packs loaded from disk (a temp folder), served by a real McpHttpEndpoint on loopback.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { McpHttpEndpoint } from '../../../kernel/mcp/mcp-http-server.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { raw } from '../../mcp/mcp-helpers.js';

/** A pack with no tools whose activate() mounts `prefix`; it counts its close() calls in a file of its data folder. */
function writeMountingPack(base: string, id: string, prefix: string): void {
  const dir = path.join(base, id);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'plugin.json'),
    JSON.stringify({ id, name: id, version: '1.0.0', description: 'mounts a route', main: 'index.js', tools: [] }),
  );
  fs.writeFileSync(
    path.join(dir, 'index.js'),
    `import * as fs from 'node:fs';
import * as path from 'node:path';
export const tools = {};
export function activate(api) {
  fs.mkdirSync(api.dataDir, { recursive: true });
  const closes = path.join(api.dataDir, 'closes');
  api.http.mount(${JSON.stringify(prefix)}, {
    handle(req, res) {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('hello from ${id} at ' + req.url);
    },
    close() {
      fs.appendFileSync(closes, 'x');
    },
    link(origin) {
      return origin + ${JSON.stringify(prefix)} + '/?welcome';
    },
  });
}
`,
  );
}

describe('api.http.mount: pack routes on the HTTP endpoint', () => {
  let fx: Fixture;
  let endpoint: McpHttpEndpoint;
  let origin: string;
  let packs: string;
  const closes = (id: string) => {
    const file = path.join(fx.dataDir, 'packs-data', id, 'closes');
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').length : 0;
  };

  beforeEach(async () => {
    packs = tempDir('memo-http-packs-');
    writeMountingPack(packs, 'greeter', '/hello');
    fx = makeKernel({ packs: [] });
    const states = await fx.kernel.loadPacks([{ dir: packs, source: 'extra' }]);
    expect(states.map((s) => [s.id, s.status, s.error ?? ''])).toEqual([['greeter', 'loaded', '']]);
    endpoint = new McpHttpEndpoint(fx.kernel, { mounts: [fx.kernel.http] });
    await endpoint.start();
    origin = new URL(endpoint.url).origin;
  });
  afterEach(async () => {
    await endpoint.close();
    await fx.close();
  });

  it("serves a pack's prefix and the paths below it, behind the endpoint's Host checks, without the MCP token", async () => {
    expect(await raw(`${origin}/hello/there?x=1`)).toMatchObject({ status: 200, body: 'hello from greeter at /hello/there?x=1' });
    expect(await raw(`${origin}/hello`)).toMatchObject({ status: 200 });
    expect((await raw(`${origin}/hellothere`)).status).toBe(404);
    expect((await raw(`${origin}/hello/`, { headers: { Host: 'evil.example' } })).status).toBe(403);
  });

  it('answers 404 saying the pack is disabled while it is, closes its open work once, and serves again once enabled', async () => {
    await fx.kernel.admin.setPackEnabled('greeter', false);
    const off = await raw(`${origin}/hello/`);
    expect(off.status).toBe(404);
    expect(JSON.parse(off.body)).toEqual({
      error: 'NOT_FOUND',
      message: 'The greeter pack is disabled, so nothing is served at /hello. Turn it back on with: memo plugins enable greeter',
    });
    const page = await raw(`${origin}/hello/`, { headers: { Accept: 'text/html' } });
    expect(page.status).toBe(404);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('The greeter pack is disabled');
    expect(closes('greeter')).toBe(1);
    await fx.kernel.admin.setPackEnabled('greeter', true);
    expect(await raw(`${origin}/hello/again`)).toMatchObject({ status: 200, body: 'hello from greeter at /hello/again' });
  });

  it('offers the pack’s link while it is enabled and a server serves it', async () => {
    expect(fx.kernel.http.link('greeter')).toBeUndefined();
    const attached = fx.kernel.http.attach({ url: () => endpoint.url, rotateToken: () => {} });
    expect(fx.kernel.http.link('greeter')).toBe(`${origin}/hello/?welcome`);
    await fx.kernel.admin.setPackEnabled('greeter', false);
    expect(fx.kernel.http.link('greeter')).toBeUndefined();
    attached.dispose();
    expect(fx.kernel.http.endpoint).toBeUndefined();
  });

  it('releases the route when the pack unloads: the prefix is nobody’s, and the handler was closed', async () => {
    fx.kernel.packs.unload('greeter');
    expect(closes('greeter')).toBe(1);
    const gone = await raw(`${origin}/hello/`);
    expect(gone.status).toBe(404);
    expect(gone.body).not.toContain('greeter');
  });

  it('refuses a prefix another pack serves, and the endpoint’s own paths', async () => {
    writeMountingPack(packs, 'copycat', '/hello');
    writeMountingPack(packs, 'usurper', '/mcp');
    writeMountingPack(packs, 'deep', '/a/b');
    const states = await fx.kernel.loadPacks([{ dir: packs, source: 'extra', only: ['copycat', 'usurper', 'deep'] }]);
    expect(Object.fromEntries(states.map((s) => [s.id, s.error]))).toEqual({
      copycat: 'its activate() failed: Pack "copycat" cannot mount /hello: pack "greeter" serves it.',
      deep: 'its activate() failed: Pack "deep" cannot mount "/a/b": a prefix is one lowercase path segment (/ui), not /mcp or /healthz.',
      usurper: 'its activate() failed: Pack "usurper" cannot mount "/mcp": a prefix is one lowercase path segment (/ui), not /mcp or /healthz.',
    });
    expect(await raw(`${origin}/hello/`)).toMatchObject({ status: 200, body: 'hello from greeter at /hello/' });
  });
});
