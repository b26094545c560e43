import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createKernel, type Kernel } from '../kernel/index.js';
import { runHeavy } from '../kernel/util/heavy-work.js';
import { expandTexts, type Range } from '../plugins/calendar/recurrence.js';
import { renderTask } from '../plugins/canvas/render.js';
import type { SceneFile } from '../plugins/canvas/scene.js';
import { percentile } from './stats.js';

/**
 * Heavy work before and after it moved into worker threads (issue 35), same run, interleaved:
 * 1. recurrence expansion of a realistic calendar (200 series: daily, weekly, monthly, with
 *    exceptions) over a month: in process (before) against runHeavy (after), calls/s and p50;
 * 2. a PNG render of a small canvas (Excalidraw's export under jsdom, then resvg): in process against
 *    the worker;
 * 3. what the kernel's own event loop went through meanwhile: its largest delay while each kind of
 *    call ran (a /healthz waits at least that long), in process against the worker;
 * 4. the worst-case calendar of the issue (30 endless every-second series): before, 264 s measured
 *    in the issue with the event loop blocked all along; after, bounded by the call's budget.
 */
const PLUGINS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../plugins');

function calendar(series: number): string {
  const lines = ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//memo bench//EN'];
  const rules = ['FREQ=DAILY', 'FREQ=WEEKLY;BYDAY=MO,WE,FR', 'FREQ=MONTHLY;BYMONTHDAY=15', 'FREQ=WEEKLY;INTERVAL=2;BYDAY=TU'];
  for (let i = 0; i < series; i++) {
    const day = String(1 + (i % 28)).padStart(2, '0');
    lines.push(
      'BEGIN:VEVENT',
      `UID:series-${i}@bench`,
      'DTSTAMP:20240101T000000Z',
      `DTSTART;TZID=Europe/Istanbul:202401${day}T0${i % 10}0000`,
      'DURATION:PT1H',
      `RRULE:${rules[i % rules.length]}`,
      ...(i % 5 === 0 ? [`EXDATE;TZID=Europe/Istanbul:202612${day}T0${i % 10}0000`] : []),
      `SUMMARY:series ${i}`,
      'END:VEVENT',
    );
  }
  lines.push('END:VCALENDAR', '');
  return lines.join('\r\n');
}

function endless(series: number): string {
  const lines = ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//memo bench//EN'];
  for (let i = 0; i < series; i++)
    lines.push(
      'BEGIN:VEVENT',
      `UID:endless-${i}@bench`,
      'DTSTAMP:20200101T000000Z',
      'DTSTART:20200101T000000Z',
      'DURATION:PT1S',
      'RRULE:FREQ=SECONDLY',
      'END:VEVENT',
    );
  lines.push('END:VCALENDAR', '');
  return lines.join('\r\n');
}

/**
 * Median ms of `fn`, and the event loop's longest stall while the runs went on: the largest gap
 * between two ticks of a 2 ms interval (a /healthz arriving then waits about that long).
 */
async function timed(runs: number, fn: () => Promise<unknown>): Promise<{ p50: number; loopMaxMs: number; perSec: number }> {
  const samples: number[] = [];
  let last = performance.now();
  let worst = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 2);
  const started = performance.now();
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    samples.push(performance.now() - t);
    // One turn of the loop between runs, so a stall is measured per run, not summed.
    await new Promise((r) => setTimeout(r, 3));
  }
  const total = performance.now() - started;
  clearInterval(tick);
  worst = Math.max(worst, performance.now() - last);
  return {
    p50: percentile(
      [...samples].sort((a, b) => a - b),
      50,
    ),
    loopMaxMs: worst,
    perSec: (runs / total) * 1000,
  };
}

async function canvasScene(): Promise<{ kernel: Kernel; scene: SceneFile; root: string }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-heavy-'));
  fs.mkdirSync(path.join(root, 'vault'));
  const kernel = createKernel({
    root,
    dataDir: path.join(root, 'data'),
    rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 },
    packs: [],
    prompter: { ask: () => Promise.resolve('allow-once' as const) },
  });
  await kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['vault', 'canvas'] }]);
  kernel.packs.setConfig('vault', { watch: false });
  const call = async (tool: string, args: Record<string, unknown>) => {
    const r = await kernel.invoke({ tool, args, caller: { kind: 'host' } });
    if (!r.ok) throw new Error(`${tool}: ${r.error.code} ${r.error.message}`);
  };
  await call('vault_create_canvas', { name: 'Bench' });
  const elements = Array.from({ length: 12 }, (_, i) => ({
    type: i % 2 ? 'ellipse' : 'rectangle',
    x: (i % 4) * 220,
    y: Math.floor(i / 4) * 140,
    width: 180,
    height: 100,
    label: { text: `Box ${i}` },
  }));
  await call('vault_draw_on_canvas', { canvas: 'Bench', elements });
  const file = fs.readdirSync(path.join(root, 'vault')).find((f) => f.endsWith('.excalidraw'))!;
  const scene = JSON.parse(fs.readFileSync(path.join(root, 'vault', file), 'utf8')) as SceneFile;
  return { kernel, scene, root };
}

export async function benchHeavy(rounds = Number(process.env.BENCH_HEAVY_ROUNDS ?? 30)): Promise<void> {
  console.log('\nHeavy work: in process (before) against a worker thread (after), interleaved');
  const range: Range = { startMs: Date.parse('2026-12-01T00:00:00Z'), endMs: Date.parse('2027-01-01T00:00:00Z'), zone: 'Europe/Istanbul' };
  const texts = [calendar(200)];
  const calUrl = new URL('../plugins/calendar/recurrence.js', import.meta.url);
  const renderUrl = new URL('../plugins/canvas/render.js', import.meta.url);
  const { kernel, scene, root } = await canvasScene();
  const options = { format: 'png' as const, scale: 1 };
  // Warm-up: the worker's first use loads ical.js, jsdom and Excalidraw.
  await runHeavy(calUrl, 'expandTexts', { texts, range });
  await runHeavy(renderUrl, 'renderTask', { scene, options });
  await renderTask({ scene, options });
  const rows: Array<[string, Awaited<ReturnType<typeof timed>>]> = [];
  const half = Math.max(1, Math.floor(rounds / 2));
  for (let i = 0; i < 2; i++) {
    rows.push([`expand 200 series, one month, in process`, await timed(half, () => Promise.resolve(expandTexts({ texts, range })))]);
    rows.push([`expand 200 series, one month, worker`, await timed(half, () => runHeavy(calUrl, 'expandTexts', { texts, range }))]);
    rows.push([`render 12-shape canvas as PNG, in process`, await timed(Math.max(1, Math.floor(half / 3)), () => renderTask({ scene, options }))]);
    rows.push([
      `render 12-shape canvas as PNG, worker`,
      await timed(Math.max(1, Math.floor(half / 3)), () => runHeavy(renderUrl, 'renderTask', { scene, options })),
    ]);
  }
  const merged = new Map<string, { p50: number[]; perSec: number[]; loop: number }>();
  for (const [name, r] of rows) {
    const m = merged.get(name) ?? { p50: [], perSec: [], loop: 0 };
    m.p50.push(r.p50);
    m.perSec.push(r.perSec);
    m.loop = Math.max(m.loop, r.loopMaxMs);
    merged.set(name, m);
  }
  console.log(`${'case'.padEnd(46)} ${'calls/s'.padStart(9)} ${'p50 ms'.padStart(9)} ${'loop max delay ms'.padStart(18)}`);
  const avg = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
  for (const [name, m] of merged)
    console.log(`${name.padEnd(46)} ${avg(m.perSec).toFixed(1).padStart(9)} ${avg(m.p50).toFixed(2).padStart(9)} ${m.loop.toFixed(1).padStart(18)}`);
  const pair = (a: string, b: string) => avg(merged.get(b)!.p50) / avg(merged.get(a)!.p50);
  console.log(
    `worker / in process, p50: expansion ${pair('expand 200 series, one month, in process', 'expand 200 series, one month, worker').toFixed(2)}x, render ${pair('render 12-shape canvas as PNG, in process', 'render 12-shape canvas as PNG, worker').toFixed(2)}x`,
  );
  const worst = await timed(1, () => runHeavy(calUrl, 'expandTexts', { texts: [endless(30)], range: { ...range, endMs: range.startMs + 86_400_000 } }));
  console.log(
    `worst-case calendar (30 endless every-second series): before 264 s (issue 35, event loop blocked throughout); after ${(worst.p50 / 1000).toFixed(1)} s, bounded by the call's 200,000 steps, event loop max delay ${worst.loopMaxMs.toFixed(1)} ms`,
  );
  await kernel.shutdown();
  fs.rmSync(root, { recursive: true, force: true });
}
