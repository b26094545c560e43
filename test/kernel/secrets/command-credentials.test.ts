/**
 * Credentials written into command lines: masked in audit lines, error messages and summaries,
 * found on shell words (quotes, wrappers and script bodies do not hide them), with everyday
 * commands left exactly as written.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { maskArgs, maskText, MASK } from '../../../kernel/secrets/masking.js';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';

const PW = 'S3cretPass1';
const M = MASK;

/** [command, the same command as an audit line shows it] */
const WITH_CREDENTIALS: Array<[string, string]> = [
  [`mysql -u root -p${PW} shop`, `mysql -u root -p${M} shop`],
  [`mysqldump --user=root --password=${PW} shop > dump.sql`, `mysqldump --user=root --password=${M} shop > dump.sql`],
  [`mariadb -h db -uadmin -p"S3cret Pass1" -e "select 1"`, `mariadb -h db -uadmin -p"${M}" -e "select 1"`],
  [`mysqladmin -uroot -p'${PW}' status`, `mysqladmin -uroot -p'${M}' status`],
  [`curl -u admin:${PW} https://api.example.com`, `curl -u admin:${M} https://api.example.com`],
  [`curl --user admin:${PW} https://x.example`, `curl --user admin:${M} https://x.example`],
  [`curl -uadmin:${PW} https://x.example`, `curl -uadmin:${M} https://x.example`],
  [`curl -H "Authorization: Bearer abcDEF123456789" https://x.example`, `curl -H "Authorization: ${M}" https://x.example`],
  [`curl -H 'X-Api-Key: abcDEF123456789' https://x.example`, `curl -H 'X-Api-Key: ${M}' https://x.example`],
  [`curl --header "Cookie: session=abcDEF123456789" https://x.example`, `curl --header "Cookie: ${M}" https://x.example`],
  [`sshpass -p ${PW} ssh deploy@host`, `sshpass -p ${M} ssh deploy@host`],
  [`sshpass -p${PW} scp f host:`, `sshpass -p${M} scp f host:`],
  [`PGPASSWORD=${PW} psql -h db -U app`, `PGPASSWORD=${M} psql -h db -U app`],
  [`env MYSQL_PWD=${PW} mysql -u root`, `env MYSQL_PWD=${M} mysql -u root`],
  [`export DB_PASS=${PW}`, `export DB_PASS=${M}`],
  [`psql "postgresql://app:${PW}@db:5432/shop"`, `psql "postgresql://app:${M}@db:5432/shop"`],
  [`git clone https://deploy:${PW}@git.example.com/r.git`, `git clone https://deploy:${M}@git.example.com/r.git`],
  [`redis-cli -a ${PW} ping`, `redis-cli -a ${M} ping`],
  [`mongosh --username app --password ${PW} mongodb://db`, `mongosh --username app --password ${M} mongodb://db`],
  [`sqlcmd -S db -U sa -P ${PW} -Q "select 1"`, `sqlcmd -S db -U sa -P ${M} -Q "select 1"`],
  [`zip -P ${PW} out.zip f`, `zip -P ${M} out.zip f`],
  [`7z a -p${PW} out.7z f`, `7z a -p${M} out.7z f`],
  [`docker login -u me -p ${PW} registry.example.com`, `docker login -u me -p ${M} registry.example.com`],
  [`openssl enc -aes-256-cbc -pass pass:${PW} -in f`, `openssl enc -aes-256-cbc -pass pass:${M} -in f`],
  [`ldapsearch -x -D cn=admin -w ${PW} -b dc=x`, `ldapsearch -x -D cn=admin -w ${M} -b dc=x`],
  [`sudo -u postgres timeout 5 mysql -p${PW}`, `sudo -u postgres timeout 5 mysql -p${M}`],
  [`bash -c "mysql -p${PW} -e 'show tables'"`, `bash -c "mysql -p${M} -e 'show tables'"`],
  [`ssh host "PGPASSWORD=${PW} pg_dump shop"`, `ssh host "PGPASSWORD=${M} pg_dump shop"`],
  [`npm publish --//registry.npmjs.org/:_authToken=${PW}`, `npm publish --//registry.npmjs.org/:_authToken=${M}`],
  [`gh api --token ${PW} /user`, `gh api --token ${M} /user`],
  [`smbclient //srv/share -U admin%${PW}`, `smbclient //srv/share -U admin%${M}`],
  [`lftp -u admin,${PW} ftp.example.com`, `lftp -u admin,${M} ftp.example.com`],
  [`wget --password=${PW} https://x.example`, `wget --password=${M} https://x.example`],
  [`ssh-keygen -t ed25519 -N ${PW} -f key`, `ssh-keygen -t ed25519 -N ${M} -f key`],
  [`cd app && mysql -p${PW} < init.sql; echo done`, `cd app && mysql -p${M} < init.sql; echo done`],
  [`mysql -p${PW} \\\n  shop`, `mysql -p${M} \\\n  shop`],
];

/** Everyday commands whose options only look like credentials: shown exactly as written. */
const LEFT_ALONE = [
  'mysql -u root -p shop',
  'curl -u admin https://x.example',
  'docker run -p 8080:80 nginx',
  'ssh -p 2222 host',
  'git log -p -- src',
  'grep -P "\\d+" f',
  'tar -cpf out.tar dir',
  'psql -p 5432 -h db',
  'export PATH=/usr/local/bin:$PATH',
  'cd $PWD && ls',
  'unzip -l x.zip',
  'npm test -- --token-count 5',
  'openssl enc -pass env:PASSVAR -in f',
  'curl -H "Content-Type: application/json" https://x.example',
  'docker push -p',
  'sed -i s/a/b/ f',
  'echo keyword monkey max_tokens',
  'git commit -m "fix password reset"',
  'redis-cli -h cache ping',
  'rsync -avP src/ dst/',
  'mysql -u root -p"$MYSQL_PASSWORD" shop',
  'curl -u "admin:$(cat /run/secrets/pw)" https://x.example',
];

describe('credentials in command lines', () => {
  it.each(WITH_CREDENTIALS)('masks %j', (command, shown) => {
    expect(maskText(command)).toBe(shown);
    const { masked, secrets } = maskArgs({ command });
    expect(masked).toEqual({ command: shown });
    expect(secrets.length).toBeGreaterThan(0);
  });

  it.each(LEFT_ALONE)('leaves %j as written', (command) => {
    expect(maskText(command)).toBe(command);
  });

  it('has the case counts the review asked for', () => {
    expect(WITH_CREDENTIALS.length).toBeGreaterThanOrEqual(20);
    expect(LEFT_ALONE.length).toBeGreaterThanOrEqual(20);
  });
});

describe('credentials in command lines, through the kernel', () => {
  let fx: Fixture;
  beforeEach(async () => {
    fx = makeKernel({ packs: [] });
    await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
    fx.prompter.setFallback('deny-once'); // nothing runs: only the audit line is written
  });
  afterEach(() => fx.close());

  it('writes no credential of any command into the audit file, the prompt or the error', async () => {
    const results = [];
    for (const [command] of WITH_CREDENTIALS) results.push(await fx.kernel.invoke({ tool: 'run_command', args: { command }, caller: { kind: 'agent' } }));
    // Each is refused: by the person (denied), or by the judge before anyone is asked (`sudo`, ...).
    for (const r of results) expect(['PERMISSION_DENIED', 'COMMAND_BLOCKED']).toContain(r.ok ? 'ok' : r.error.code);
    const blocked = results.filter((r) => !r.ok && r.error.code === 'COMMAND_BLOCKED').length;
    expect(blocked).toBeLessThan(WITH_CREDENTIALS.length / 4);
    // The person asked sees masked arguments (the preview shows the command as it would run).
    expect(fx.prompter.asked).toHaveLength(WITH_CREDENTIALS.length - blocked);
    for (const asked of fx.prompter.asked) expect(JSON.stringify(asked.args)).not.toMatch(/S3cret/);
    for (const r of results) expect(JSON.stringify(r)).not.toMatch(/S3cret/);

    const file = path.join(fx.dataDir, 'agent-audit.jsonl');
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
    expect(lines.filter((l) => l.includes('"run_command"'))).toHaveLength(WITH_CREDENTIALS.length);
    for (const secret of [PW, 'S3cret Pass1', 'abcDEF123456789']) {
      const grep = spawnSync('grep', ['-c', '-F', secret, file], { encoding: 'utf8' });
      expect({ secret, matches: grep.stdout.trim(), status: grep.status }).toEqual({ secret, matches: '0', status: 1 });
    }
  });
});
