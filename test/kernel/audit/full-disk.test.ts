/**
 * The file audit trail fails closed, as the PostgreSQL one does: on a real full disk (a small tmpfs
 * mounted for the test, the data folder on it), once a line cannot be written every later call is
 * refused before it runs, reads included, with the cause in words; when space comes back, the next
 * line is a chained `lines-lost` gap event naming the calls whose lines were lost and the true
 * cause, never `cut-tail`, and the trail verifies.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { formatVerifyReport, verifyAuditFile } from '../../../kernel/audit/audit-verify.js';
import { readAuditFileTail } from '../../../kernel/audit/audit-tail.js';
import type { AuditEvent, AuditLine } from '../../../kernel/audit/audit-record.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import type { PackDefinition } from '../../../kernel/tools/tool-registry.js';
import { atTeardown } from '../../helpers/cleanup.js';
import { makeKernel, tempDir, tool, type Fixture } from '../../helpers/kernel-fixture.js';

/** Mounts a tmpfs of `bytes` on a new folder, unmounted at the end of the file; null where this process may not mount. */
function smallDisk(bytes: number): string | null {
  const dir = tempDir('memo-full-disk-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch {
    return null;
  }
  atTeardown(() => execFileSync('umount', ['-l', dir], { stdio: 'pipe' }));
  return dir;
}

/** Fills the file system `dir` is on until a write fails with ENOSPC; returns the filler's path. */
function fill(dir: string): string {
  const filler = path.join(dir, 'filler');
  const fd = fs.openSync(filler, 'a');
  const block = Buffer.alloc(64 * 1024, 0x61);
  try {
    for (;;) {
      // Smaller and smaller writes take the last bytes of the last page too.
      let size = block.length;
      for (;;) {
        try {
          fs.writeSync(fd, block, 0, size);
          break;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          if (size === 1) return filler;
          size = Math.max(1, size >> 1);
        }
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

const disk = smallDisk(4 * 1024 * 1024);
const maybe = disk ? describe : describe.skip;
if (!disk) console.warn('full-disk.test.ts: skipped, this process may not mount a tmpfs (needs root)');

describe('the file audit trail on a full disk', () => {
  const outside = tempDir('memo-full-disk-out-');
  const touched: string[] = [];
  const pack: PackDefinition = {
    id: 'disk-pack',
    version: '1.0.0',
    tools: [
      { spec: tool('look', 'safe', 'read'), impl: (args: Record<string, unknown>) => ({ saw: args.text ?? null }) },
      {
        spec: tool('touch_outside', 'safe', 'write'),
        impl: (args: Record<string, unknown>) => {
          const file = path.join(outside, String(args.text));
          fs.writeFileSync(file, 'x');
          touched.push(String(args.text));
          return { wrote: file };
        },
      },
    ],
  };
  let fx: Fixture;
  const call = (name: string, text: string): Promise<ToolResult> => fx.kernel.invoke({ tool: name, args: { text }, caller: { kind: 'cli' } });
  const trail = () => path.join(fx.dataDir, 'agent-audit.jsonl');

  maybe('(a 4 MB tmpfs)', () => {
    beforeAll(() => {
      fx = makeKernel({ dataDir: path.join(disk!, 'data'), packs: [pack] });
    });
    afterAll(async () => fx.close());

    it('refuses every call once a line could not be written, says why, and names the lost calls with the true cause once space is back', async () => {
      expect(await call('look', 'before')).toMatchObject({ ok: true });

      const filler = fill(disk!);
      // The trail's last page may still hold a few lines; the first call whose line finds no room
      // ran (it cannot be un-run), and its result says its line is missing.
      let first: ToolResult | undefined;
      for (let i = 0; i < 200 && !first; i++) {
        const r = await call('touch_outside', `ran-${i}`);
        expect(r.ok).toBe(true);
        if (r.ok && r.summary.includes('its audit line could not be written')) first = r;
      }
      expect(first).toBeDefined();
      if (!first) return;
      const ran = [...touched];
      expect(ran.at(-1)).toBe(`ran-${ran.length - 1}`);
      expect(
        fx.logger.lines
          .filter((l) => l.level === 'error')
          .map((l) => l.message)
          .join('\n'),
      ).toContain('the disk is full (ENOSPC)');

      // From then on nothing runs: not a write, and not a read either.
      const refusedWrite = await call('touch_outside', 'never-ran');
      const refusedRead = await call('look', 'unrecorded read');
      for (const r of [refusedWrite, refusedRead]) {
        expect(r).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
        if (!r.ok) {
          expect(r.error.message).toContain('the disk is full (ENOSPC)');
          expect(r.error.message).toContain('calls are refused until writing works again');
        }
      }
      expect(touched).toEqual(ran);
      expect(fs.existsSync(path.join(outside, 'never-ran'))).toBe(false);
      // A person's change is not made either while its line cannot be written.
      await expect(fx.kernel.admin.setPackEnabled('disk-pack', false, 'console')).rejects.toMatchObject({
        code: 'PERMISSION_DENIED',
        message: expect.stringContaining('pack.disable disk-pack was not done: its audit line could not be written (the disk is full (ENOSPC))'),
      });
      expect(fx.kernel.registry.isEnabled('disk-pack')).toBe(true);

      // Space comes back: the next call runs, after the event naming every line lost meanwhile.
      fs.rmSync(filler);
      const after = await call('look', 'after');
      expect(after).toMatchObject({ ok: true });
      if (after.ok) expect(after.summary).not.toContain('could not be written');

      const lines: AuditLine[] = readAuditFileTail(trail(), 100);
      const events = lines.filter((l): l is AuditEvent => 'event' in l && typeof l.event === 'string');
      expect(events.map((e) => e.seen)).toEqual(['lines-lost']);
      const gap = events[0]!;
      expect(gap.lost).toMatchObject({ lines: 4, events: 1 });
      expect(gap.detail).toMatch(/^3 call lines and 1 kernel event could not be written between /);
      expect(gap.detail).toContain('the disk is full (ENOSPC)');
      expect(gap.lost!.calls).toEqual([
        { id: first.callId, tool: 'touch_outside', outcome: 'ok' },
        { id: refusedWrite.callId, tool: 'touch_outside', outcome: 'error' },
        { id: refusedRead.callId, tool: 'look', outcome: 'error' },
      ]);
      // The event comes right before the call that found writing working again, chained like any line.
      const tools = lines.map((l) => ('event' in l ? `event:${String(l.seen)}` : l.tool));
      expect(tools.slice(-3)).toEqual(['touch_outside', 'event:lines-lost', 'look']);

      const report = verifyAuditFile(trail());
      expect(report.gaps.map((g) => g.seen)).toEqual(['lines-lost']);
      expect(report.problem).toMatchObject({ recorded: true });
      const said = formatVerifyReport(report);
      expect(said).toMatch(/^GAP: .*the disk is full \(ENOSPC\)/);
      expect(said).toContain(`touch_outside ${first.callId}`);
    });

    it('leaves no torn line when the disk fills in the middle of a line, and the chain carries on from the last whole one', async () => {
      // Many calls with lines of varied length: some write crosses the last free page and is cut short.
      const filler = fill(disk!);
      fs.truncateSync(filler, Math.max(0, fs.statSync(filler).size - 6000));
      const results: ToolResult[] = [];
      for (let i = 0; i < 40; i++) results.push(await call('look', 'y'.repeat(50 + ((i * 37) % 180))));
      expect(results.some((r) => !r.ok)).toBe(true);
      const text = fs.readFileSync(trail(), 'utf8');
      expect(text.endsWith('\n')).toBe(true);
      fs.rmSync(filler);
      expect(await call('look', 'back')).toMatchObject({ ok: true });
      const report = verifyAuditFile(trail());
      expect(report.problem?.recorded ?? true).toBe(true);
      expect(report.gaps.every((g) => g.seen === 'lines-lost')).toBe(true);
      expect(report.gaps.length).toBe(2);
    });
  });
});
