/**
 * Secrets the kernel knows (a stored provider key, a sensitive environment value) never leave
 * through a tool: results (plain, base64 at three offsets, hex, URL-encoded, inside JSON strings
 * and keys), errors, summaries, progress messages, previews and the audit file, through the real
 * kernel pipeline and real packs.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { MemoError } from '../../../kernel/errors.js';
import { MASK } from '../../../kernel/secrets/masking.js';
import type { ToolSpec } from '../../../kernel/tools/contract.js';
import type { PackDefinition } from '../../../kernel/tools/tool-registry.js';
import { echoPack, makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';

const ENV_NAME = 'MEMO_T_DB_PASSWORD';
const ENV_SECRET = `Env-S3cret-${randomBytes(6).toString('hex')}`;
const PROVIDER_KEY = `sk-stored-${randomBytes(12).toString('hex')}`;

/** The secret `offset` bytes into a stream of other bytes, base64-encoded as a whole. */
function inStream(secret: string, offset: number, url = false): string {
  return Buffer.concat([randomBytes(offset + 3), Buffer.from(secret), randomBytes(5)]).toString(url ? 'base64url' : 'base64');
}

/** Could any unmasked piece of the text, decoded at any alignment, show the secret? */
function reveals(text: string, secret: string): boolean {
  const needle = Buffer.from(secret);
  if (text.includes(secret) || text.includes(needle.toString('hex'))) return true;
  return text
    .split(MASK)
    .some((piece) =>
      piece
        .split(/[^A-Za-z0-9+/_=-]+/)
        .some((run) => [0, 1, 2, 3].some((d) => ['base64', 'base64url'].some((enc) => Buffer.from(run.slice(d), enc as BufferEncoding).includes(needle)))),
    );
}

const spec = (name: string, extra: Partial<ToolSpec> = {}): ToolSpec => ({
  name,
  description: `${name} for tests`,
  parameters: { type: 'object', properties: { which: { type: 'string', enum: ['env', 'provider'] }, form: { type: 'string' } }, additionalProperties: false },
  danger: 'safe',
  effect: 'read',
  ...extra,
});

const secretOf = (which: unknown) => (which === 'env' ? ENV_SECRET : PROVIDER_KEY);

/** A pack whose tools hand back the kernel's secrets in every way a tool can. */
const leakyPack: PackDefinition = {
  id: 'leaky',
  tools: [
    {
      spec: spec('leak'),
      impl: ({ which, form }) => {
        const s = secretOf(which);
        switch (form) {
          case 'plain':
            return { text: `the value is ${s}.` };
          case 'b64-0':
          case 'b64-1':
          case 'b64-2':
            return { blob: inStream(s, Number(String(form).slice(-1))) };
          case 'b64url-1':
            return { blob: inStream(s, 1, true) };
          case 'b64-alone':
            return `echo ${Buffer.from(s).toString('base64')} | base64 -d`;
          case 'hex':
            return { dump: Buffer.from(`xx${s}yy`).toString('hex') };
          case 'url':
            return { link: `https://example.com/cb?token=${encodeURIComponent(s)}&x=1` };
          case 'json':
            return { nested: { list: [`a ${s} b`, { [s]: s }] }, jsonText: JSON.stringify({ key: s, more: [s] }) };
          default:
            return null;
        }
      },
    },
    { spec: spec('leak_summary'), impl: ({ which }) => ({ ok: true, summary: `connected with ${secretOf(which)}` }) },
    {
      spec: spec('leak_error'),
      impl: ({ which, form }) => {
        const s = secretOf(which);
        if (form === 'memo') throw new MemoError('VALIDATION', `bad key ${s}`, { details: { key: s, b64: Buffer.from(s).toString('base64') } });
        throw new Error(`connection refused for password ${s}`);
      },
    },
    {
      spec: spec('leak_progress'),
      impl: ({ which }, ctx) => {
        ctx.progress({ progress: 1, total: 2, message: `using ${secretOf(which)}` });
        return 'done';
      },
    },
    {
      spec: spec('leak_preview', { danger: 'medium', effect: 'write' }),
      impl: { run: () => 'written', preview: ({ which }) => ({ kind: 'text', text: `will write ${secretOf(which)}` }) },
    },
  ],
};

describe('known secrets through the pipeline', () => {
  let fx: Fixture;
  const call = (tool: string, args: Record<string, unknown>, extra: Partial<Parameters<Fixture['kernel']['invoke']>[0]> = {}) =>
    fx.kernel.invoke({ tool, args, caller: { kind: 'agent' }, ...extra });
  const auditFile = () => path.join(fx.dataDir, 'agent-audit.jsonl');

  beforeAll(() => {
    process.env[ENV_NAME] = ENV_SECRET;
  });
  afterAll(() => {
    delete process.env[ENV_NAME];
  });

  beforeEach(async () => {
    fx = makeKernel({ packs: [echoPack(), leakyPack] });
    await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
    fx.kernel.providerSettings.put({ name: 'stored', kind: 'openai-compatible', apiKey: PROVIDER_KEY });
  });
  afterEach(() => fx.close());

  /** The audit file holds none of the secrets, in any form (checked with grep on the real file). */
  function expectAuditClean(): void {
    const text = fs.readFileSync(auditFile(), 'utf8');
    expect(text.length).toBeGreaterThan(0);
    for (const secret of [ENV_SECRET, PROVIDER_KEY]) {
      const forms = [secret, Buffer.from(secret).toString('hex'), Buffer.from(secret).toString('base64').replace(/=+$/, '').slice(0, -1)];
      for (const form of forms) {
        const grep = spawnSync('grep', ['-c', '-F', form, auditFile()], { encoding: 'utf8' });
        expect({ form, matches: grep.stdout.trim() }).toEqual({ form, matches: '0' });
      }
      expect(reveals(text, secret)).toBe(false);
    }
  }

  it.each(['env', 'provider'])('scrubs the %s secret from results in every form', async (which) => {
    const secret = secretOf(which);
    for (const form of ['plain', 'b64-0', 'b64-1', 'b64-2', 'b64url-1', 'b64-alone', 'hex', 'url', 'json']) {
      const r = await call('leak', { which, form });
      if (!r.ok) throw new Error(`${form}: ${r.error.message}`);
      const shown = JSON.stringify(r.value);
      expect({ form, reveals: reveals(shown, secret) || reveals(r.summary, secret) }).toEqual({ form, reveals: false });
      expect(shown).toContain(MASK);
    }
    const json = await call('leak', { which, form: 'json' });
    expect(json.ok && json.value).toEqual({ nested: { list: [`a ${MASK} b`, { [MASK]: MASK }] }, jsonText: JSON.stringify({ key: MASK, more: [MASK] }) });
    expectAuditClean();
  });

  it.each(['env', 'provider'])('scrubs the %s secret from summaries, errors, error details, progress and previews', async (which) => {
    const secret = secretOf(which);
    const summary = await call('leak_summary', { which });
    expect(summary.ok && summary.summary).toBe(`connected with ${MASK}`);

    const thrown = await call('leak_error', { which });
    expect(thrown.ok ? null : thrown.error).toMatchObject({ code: 'TOOL_FAILED', message: `leak_error failed: connection refused for password ${MASK}` });
    const memo = await call('leak_error', { which, form: 'memo' });
    expect(memo.ok ? null : memo.error).toMatchObject({ code: 'VALIDATION', message: `bad key ${MASK}` });
    expect(reveals(JSON.stringify(memo), secret)).toBe(false);

    const progress: string[] = [];
    await call('leak_progress', { which }, { onProgress: (u) => progress.push(String(u.message)) });
    expect(progress).toEqual([`using ${MASK}`]);

    fx.prompter.answer('allow-once');
    await call('leak_preview', { which });
    expect(fx.prompter.asked.at(-1)!.preview).toEqual({ kind: 'text', text: `will write ${MASK}` });
    expectAuditClean();
  });

  it('scrubs a secret a caller sends from the audited arguments and from what the tool echoes back', async () => {
    const r = await call('echo_safe', { text: `deploy with ${PROVIDER_KEY} and ${Buffer.from(ENV_SECRET).toString('base64')}` });
    expect(r.ok && r.value).toEqual({ echoed: { text: expect.stringMatching(/^deploy with \[masked\] and \[masked\]={0,2}$/) } });
    expect(fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'echo_safe', args: { text: expect.not.stringContaining(PROVIDER_KEY) } });
    expectAuditClean();
  });

  it('scrubs a key from read_file of a file that holds it, and from run_command output, also base64-encoded', async () => {
    fs.writeFileSync(path.join(fx.root, 'notes.txt'), `key: ${PROVIDER_KEY}\nencoded: ${inStream(PROVIDER_KEY, 2)}\n`);
    const read = await call('read_file', { path: 'notes.txt' });
    expect(read.ok).toBe(true);
    expect(reveals(JSON.stringify(read), PROVIDER_KEY)).toBe(false);

    fx.prompter.setFallback('allow-once');
    const run = await call('run_command', {
      command: `printf %s "$${ENV_NAME}"; echo; printf %s "$${ENV_NAME}" | base64; printf 'ab%s' "$${ENV_NAME}" | base64 -w0; echo; pwd`,
    });
    if (!run.ok) throw new Error(run.error.message);
    const { stdout } = run.value as { stdout: string };
    expect(reveals(stdout, ENV_SECRET)).toBe(false);
    // The working directory is not a secret (PWD is in the environment too).
    expect(stdout.trim().split('\n').at(-1)).toBe(fx.kernel.config.root);
    expectAuditClean();
  });

  it('masks a bare AWS secret a command prints beside its key id, in the result and on the audit trail', async () => {
    const secret = 'Rk7mA9/xQ2+vB8nT4pL6sD1fG3hJ5kZ0cW9eY7uI';
    fs.writeFileSync(path.join(fx.root, 'keys.txt'), `ACCESSKEY\tAKIAZ3MSJV4WEXAMPLQ7\t2026-12-06T04:00:00+00:00\t${secret}\tActive\tci-bot\n`);
    fx.prompter.setFallback('allow-once');
    const run = await call('run_command', { command: 'cat keys.txt' });
    if (!run.ok) throw new Error(run.error.message);
    const { stdout } = run.value as { stdout: string };
    expect(stdout).toBe(`ACCESSKEY\t${MASK}\t2026-12-06T04:00:00+00:00\t${MASK}\tActive\tci-bot\n`);
    const trail = fs.readFileSync(path.join(fx.dataDir, 'agent-audit.jsonl'), 'utf8');
    expect(trail).toContain('cat keys.txt');
    expect(trail).not.toContain(secret);
    expect(trail).not.toContain(secret.replace(/\//g, '\\/'));
  });

  it('learns a key stored by another process within the periodic check', async () => {
    const other = `sk-other-${randomBytes(12).toString('hex')}`;
    const file = path.join(fx.dataDir, 'providers.json');
    const data = JSON.parse(fs.readFileSync(file, 'utf8'));
    data.providers.other = { name: 'other', kind: 'openai-compatible', apiKey: other };
    fs.writeFileSync(file, JSON.stringify(data)); // what `memo provider add` in another process does
    const echoed = async () => {
      const r = await call('echo_safe', { text: `x ${other}` });
      return r.ok && JSON.stringify(r.value) === JSON.stringify({ echoed: { text: `x ${MASK}` } });
    };
    await waitFor(echoed, { what: "the other process's key to be scrubbed", timeoutMs: 10_000 });
  });
});
