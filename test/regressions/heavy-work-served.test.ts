/**
 * Heavy work does not freeze `memo serve` (issue: a calendar file froze the server for minutes, a
 * canvas render ate 21 GB). Against a real served kernel over MCP: a calendar file of thirty endless
 * every-second series, and a canvas of two small rectangles 40,000 units apart rendered as PNG at
 * scale 8. While they run, /healthz and a read_file answer; the calendar call ends within its budget
 * with a warning that says so; the render keeps its width and height within the pixel limits.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';
import { BIN, connect, raw, ServeProcess, type Connected } from '../mcp/mcp-helpers.js';

beforeAll(requireFreshBuild);

function endlessCalendar(events: number): string {
  const lines = ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//memo test//EN'];
  for (let i = 0; i < events; i++)
    lines.push(
      'BEGIN:VEVENT',
      `UID:endless-${i}@test`,
      'DTSTAMP:20200101T000000Z',
      'DTSTART:20200101T000000Z',
      'DURATION:PT1S',
      'RRULE:FREQ=SECONDLY',
      `SUMMARY:tick ${i}`,
      'END:VEVENT',
    );
  lines.push('END:VCALENDAR', '');
  return lines.join('\r\n');
}

describe('heavy work in a served kernel', () => {
  let serve: ServeProcess;
  let c: Connected;
  let reader: Connected;
  let healthz: string;

  beforeAll(async () => {
    const base = tempDir('memo-heavy-');
    const root = path.join(base, 'root');
    const data = path.join(base, 'data');
    fs.mkdirSync(path.join(root, 'vault'), { recursive: true });
    fs.writeFileSync(path.join(root, 'cal.ics'), endlessCalendar(30));
    fs.writeFileSync(path.join(root, 'notes.txt'), 'still here\n');
    const memo = (...args: string[]) => {
      const r = spawnSync(process.execPath, [BIN, '--root', root, '--data', data, ...args], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`memo ${args.join(' ')}: ${r.stderr}`);
    };
    memo('calendar', 'add', 'file', 'endless', 'cal.ics');
    memo('tools', 'call', 'vault_create_canvas', '--args', JSON.stringify({ name: 'Far' }), '--approve', 'allow-once');
    const rect = (x: number, y: number) => ({ type: 'rectangle', x, y, width: 10, height: 10, roughness: 0 });
    memo(
      'tools',
      'call',
      'vault_draw_on_canvas',
      '--args',
      JSON.stringify({ canvas: 'Far', elements: [rect(0, 0), rect(40_000, 40_000)] }),
      '--approve',
      'allow-once',
    );
    serve = ServeProcess.start(['--root', root, '--data', data, 'serve', '--json', '--rate-limit', 'off']);
    const info = await serve.json(0);
    c = await connect(info.url, info.token);
    reader = await connect(info.url, info.token);
    healthz = info.url.replace('/mcp', '/healthz');
  });
  afterAll(async () => {
    await c?.close();
    await reader?.close();
    expect(await serve.stop()).toBe(0);
  });

  it('keeps answering /healthz and read_file while an endless calendar and a giant render run, and both end bounded', async () => {
    let calendarDone = false;
    let renderDone = false;
    const calendar = (
      c.client.callTool({ name: 'get_calendar_events', arguments: { start: '2026-12-06', timeZone: 'UTC' } }, undefined, {
        timeout: 600_000,
      }) as Promise<CallToolResult>
    ).finally(() => (calendarDone = true));
    const rendered = (
      c.client.callTool({ name: 'vault_render_canvas', arguments: { canvas: 'Far', format: 'png', scale: 8 } }, undefined, {
        timeout: 600_000,
      }) as Promise<CallToolResult>
    ).finally(() => (renderDone = true));
    // Before the work moved off the event loop, neither answered until the expansion ended (minutes).
    const health = await raw(healthz);
    expect([health.status, JSON.parse(health.body)]).toEqual([200, { ok: true }]);
    const read = (await reader.client.callTool({ name: 'read_file', arguments: { path: 'notes.txt' } })) as CallToolResult;
    expect(read.isError).toBeFalsy();
    expect(JSON.stringify(read.content)).toContain('still here');
    // They answered while the calendar call still ran (it spends its whole budget).
    expect(calendarDone).toBe(false);

    const cal = await calendar;
    expect(cal.isError).toBeFalsy();
    const calValue = cal.structuredContent as { warnings?: string[]; events: unknown[] };
    expect(calValue.warnings?.join('\n')).toMatch(/more than 200000 steps in all/);
    const png = await rendered;
    expect(renderDone).toBe(true);
    expect(png.isError).toBeFalsy();
    const r = png.structuredContent as { width: number; height: number; downscaled?: { scale: number; reason: string } };
    expect(r.width).toBeLessThanOrEqual(16_384);
    expect(r.height).toBeLessThanOrEqual(16_384);
    expect(r.width * r.height).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect(r.width).toBeGreaterThan(4000);
    expect(r.downscaled?.reason).toMatch(/over the limit of 16384 pixels a side and 64 megapixels/);
    // The server is still whole.
    await waitFor(async () => (await raw(healthz)).status === 200, { what: '/healthz after the work' });
  });
});
