import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../../helpers/dist.js';
import { auditTempDir, lines, removeTempDirs, writeLines } from './helpers.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');

function memo(data: string, ...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, [BIN, '--packs', PACKS, '--root', path.dirname(data), '--data', data, ...args], { encoding: 'utf8' });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** Runs `memo tools call echo` for each text, one after the other, in a child shell loop. */
function callLoop(data: string, texts: string[]): Promise<number | null> {
  const script = texts
    .map(
      (t) =>
        `"${process.execPath}" "${BIN}" --packs "${PACKS}" --root "${path.dirname(data)}" --data "${data}" tools call echo --args '{"text":"${t}"}' >/dev/null || exit 1`,
    )
    .join('\n');
  return new Promise((resolve) => spawn('sh', ['-c', script], { stdio: 'ignore' }).on('close', resolve));
}

beforeAll(requireFreshBuild);
afterEach(removeTempDirs);

describe('memo audit verify / tail', () => {
  it('two CLI processes calling tools at the same time keep one chain: verify says OK (exit 0)', async () => {
    const data = path.join(auditTempDir(), 'data');
    const codes = await Promise.all([callLoop(data, ['a1', 'a2', 'a3', 'a4']), callLoop(data, ['b1', 'b2', 'b3', 'b4'])]);
    expect(codes).toEqual([0, 0]);
    const r = memo(data, 'audit', 'verify');
    expect(r).toMatchObject({ code: 0, stdout: 'OK: 8 entries, keyed chain intact, head matches (#8).\n' });
    expect(lines(path.join(data, 'agent-audit.jsonl')).map((l) => JSON.parse(l).seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  }, 120_000);

  it('a cut tail: TAMPERED naming the missing entries, exit 1; after the next call, GAP with who recorded it, and tail shows the event', () => {
    const data = path.join(auditTempDir(), 'data');
    for (const t of ['a', 'b', 'c']) expect(memo(data, 'tools', 'call', 'echo', '--args', JSON.stringify({ text: t })).code).toBe(0);
    const file = path.join(data, 'agent-audit.jsonl');
    writeLines(file, lines(file).slice(0, 1));
    const cut = memo(data, 'audit', 'verify');
    expect(cut).toMatchObject({
      code: 1,
      stdout: 'TAMPERED: entries #2 to #3 are missing at the end: the file was cut after line 1 (entry #1), while agent-audit.head says it went on to #3.\n',
    });
    const json = JSON.parse(memo(data, 'audit', 'verify', '--json').stdout);
    expect(json).toMatchObject({ ok: false, problem: { kind: 'cut-tail', line: 1, entry: 2 } });
    expect(json.head).not.toHaveProperty('tag');

    expect(memo(data, 'tools', 'call', 'echo', '--args', '{"text":"d"}').code).toBe(0);
    const gap = memo(data, 'audit', 'verify');
    expect(gap.code).toBe(1);
    expect(gap.stdout).toMatch(
      /^GAP: entries #2 to #3 are missing from agent-audit.jsonl: a kernel \(pid \d+\) found its end cut off at \S+ and recorded it at line 2\.\n$/,
    );
    const tail = memo(data, 'audit', 'tail', '-n', '2');
    expect(tail.stdout).toMatch(/kernel\s+\(gap\)\s+-\s+-\s+-\s+cut-tail; #2-#3 missing/);
    expect(tail.stdout).toMatch(/cli\s+echo\s+auto\s+ok/);
    expect(memo(data, 'audit', 'tail', '--json', '-n', '1').stdout).toMatch(/^\{"seq":5,/);
  }, 60_000);

  it('a data folder with no trail yet: OK, nothing created', () => {
    const data = path.join(auditTempDir(), 'data');
    expect(memo(data, 'audit', 'verify')).toMatchObject({ code: 0, stdout: 'OK: no entries.\n' });
    expect(memo(data, 'audit', 'tail')).toMatchObject({ code: 0, stdout: 'No audit entries.\n' });
    expect(fs.existsSync(data)).toBe(false);
  });
});
