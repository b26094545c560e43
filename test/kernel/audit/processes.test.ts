import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { verifyAuditFile } from '../../../kernel/audit/audit-verify.js';
import { auditTempDir, compileAuditModules, lines, removeTempDirs } from './helpers.js';

/** Resolves with the first stdout line matching `re` (rejects if the child exits first). */
function waitForLine(child: ChildProcess, re: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let err = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      for (const line of buf.split('\n')) {
        if (re.test(line)) {
          child.stdout!.off('data', onData);
          resolve(line);
          return;
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => (err += d));
    child.once('exit', (code, signal) => reject(new Error(`child exited (${code ?? signal}) before printing ${re}: ${buf}${err}`)));
  });
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
}

describe('audit appends from several processes', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    removeTempDirs();
  });

  it('4 processes x 1000 appends at once: the chain never forks, verify passes with 4000 entries numbered 1..4000', async () => {
    const dir = auditTempDir();
    const modulePath = compileAuditModules(dir);
    const file = path.join(dir, 'data', 'agent-audit.jsonl');
    // Each writer opens the log, says it is ready, waits for "go" on stdin, appends 1000 records.
    const script = path.join(dir, 'writer.mjs');
    fs.writeFileSync(
      script,
      `import { AuditLog } from ${JSON.stringify(modulePath)};
      const [file, name] = process.argv.slice(2);
      const log = new AuditLog(file);
      log.open();
      process.stdout.write('ready\\n');
      process.stdin.once('data', () => {
        for (let i = 1; i <= 1000; i++) {
          log.append({ ts: new Date().toISOString(), id: name + '-' + i, caller: { kind: 'cli' }, tool: 'echo', pack: null, args: { i }, decision: 'auto', outcome: 'ok', summary: name, durationMs: 0 });
        }
        process.stdout.write('done ' + log.lockWaits + '\\n');
        log.close();
        process.exit(0);
      });
      `,
    );
    const writers = ['w1', 'w2', 'w3', 'w4'].map((name) => spawn(process.execPath, [script, file, name], { stdio: ['pipe', 'pipe', 'pipe'] }));
    children.push(...writers);
    await Promise.all(writers.map((w) => waitForLine(w, /^ready$/)));
    const done = writers.map((w) => waitForLine(w, /^done \d+$/));
    for (const w of writers) w.stdin.write('go\n');
    const waits = (await Promise.all(done)).map((l) => Number(l.split(' ')[1]));
    const exits = await Promise.all(writers.map(exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0, 0]);

    const report = verifyAuditFile(file);
    expect(report).toMatchObject({ ok: true, entries: 4000, events: 0, lastSeq: 4000, head: { seq: 4000 } });
    const entries = lines(file).map((l) => JSON.parse(l));
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 4000 }, (_, i) => i + 1));
    for (const name of ['w1', 'w2', 'w3', 'w4']) {
      const mine = entries.filter((e) => e.summary === name).map((e) => e.args.i);
      expect(mine).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    }
    // The writers did contend (otherwise this test proves nothing about the lock).
    expect(waits.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  }, 120_000);

  it('4 processes creating the audit key at the same moment all end up with the same key (one creates it)', async () => {
    const dir = auditTempDir();
    const modulePath = compileAuditModules(dir);
    const chain = path.join(path.dirname(modulePath), 'audit-chain.js');
    const keyFile = path.join(dir, 'data', 'audit.key');
    fs.mkdirSync(path.dirname(keyFile));
    const code = `import { loadOrCreateKey } from ${JSON.stringify(chain)};
      process.stdout.write('ready\\n');
      process.stdin.once('data', () => {
        const { key, created } = loadOrCreateKey(${JSON.stringify(keyFile)});
        process.stdout.write('key ' + key.export().toString('hex') + ' ' + created + '\\n');
        process.exit(0);
      });`;
    const procs = [1, 2, 3, 4].map(() => spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['pipe', 'pipe', 'pipe'] }));
    children.push(...procs);
    await Promise.all(procs.map((p) => waitForLine(p, /^ready$/)));
    const answers = procs.map((p) => waitForLine(p, /^key /));
    for (const p of procs) p.stdin.write('go\n');
    const got = (await Promise.all(answers)).map((l) => l.split(' '));
    const onDisk = fs.readFileSync(keyFile, 'utf8').trim();
    expect(got.map((g) => g[1])).toEqual([onDisk, onDisk, onDisk, onDisk]);
    expect(got.filter((g) => g[2] === 'true')).toHaveLength(1);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.dirname(keyFile))).toEqual(['audit.key']);
  }, 60_000);

  it('a lock holder killed with SIGKILL does not block the next writer', async () => {
    const dir = auditTempDir();
    const modulePath = compileAuditModules(dir);
    const lockModule = path.join(path.dirname(modulePath), 'audit-lock.js');
    const file = path.join(dir, 'agent-audit.jsonl');
    // A holds the lock and never lets go (until killed).
    const holder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { AuditFileLock } from ${JSON.stringify(lockModule)}; const l = new AuditFileLock(${JSON.stringify(path.join(dir, 'agent-audit.lock'))}); l.acquire(); process.stdout.write('locked\\n'); setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(holder);
    await waitForLine(holder, /^locked$/);
    // B opens the log: it must wait for A, and says so (synchronously) when it starts waiting.
    const writer = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import * as fs from 'node:fs';
        import { AuditLog } from ${JSON.stringify(modulePath)};
        const log = new AuditLog(${JSON.stringify(file)}, { lockTimeoutMs: 60000, onLockWait: () => fs.writeSync(1, 'waiting\\n') });
        log.open();
        log.append({ ts: 't', id: 'after-crash', caller: { kind: 'cli' }, tool: 'echo', pack: null, args: {}, decision: 'auto', outcome: 'ok', summary: '', durationMs: 0 });
        log.close();
        process.stdout.write('appended\\n');`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(writer);
    await waitForLine(writer, /^waiting$/);
    const appended = waitForLine(writer, /^appended$/);
    holder.kill('SIGKILL');
    expect((await exited(holder)).signal).toBe('SIGKILL');
    await appended;
    expect((await exited(writer)).code).toBe(0);
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 1 });
  }, 60_000);
});
