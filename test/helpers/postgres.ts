/**
 * A real, throwaway PostgreSQL server for one test file: `initdb` into a temp folder, `pg_ctl start`
 * listening on 127.0.0.1 on a free port (its unix socket in the same folder, never the system's),
 * password authentication (scram-sha-256) for a superuser `memo`, and a fresh database per call of
 * `database()`. The server is stopped (`pg_ctl stop -m immediate`) and its folder removed when the test
 * file ends (test/helpers/cleanup.ts). fsync is off (the data is thrown away anyway); commits still
 * reach the operating system before they are acknowledged, so `restart()`, which kills the server
 * like a crash (`-m immediate`) and starts it again on the same folder and port, loses nothing acknowledged.
 *
 * PostgreSQL is Debian's `postgresql` package (.ci/run installs it). When its server binaries are
 * missing, `startPostgres` fails saying which and how to install them: tests never skip quietly.
 * PostgreSQL refuses to run as root, so under root the server runs as the `postgres` system user
 * (runuser), with the folder handed to that user.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { atTeardown } from './cleanup.js';
import { tempDir } from './kernel-fixture.js';

const run = promisify(execFile);

export interface TestPostgres {
  host: string;
  port: number;
  user: string;
  password: string;
  /** A new, empty database; returns its URL (with the password), e.g. postgres://memo:SECRET@127.0.0.1:PORT/t3. */
  database(name?: string): Promise<string>;
  /** Runs one statement as the superuser in `database` (default `postgres`) and returns its rows. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[], database?: string): Promise<R[]>;
  /** Stops the server at once (no checkpoint: like a crash) and starts it again on the same folder and port. */
  restart(): Promise<void>;
  /** Stops the server at once, like a crash (start() brings it back on the same folder and port). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /**
   * Hangs the server without closing anything (SIGSTOP to the postmaster and every backend): sockets
   * stay open and queries get no answer, as when the database machine stalls or the network drops
   * packets. thaw() (SIGCONT) lets it go on; the file's teardown thaws it before stopping it.
   */
  freeze(): void;
  thaw(): void;
  /** How long initdb plus the first start took, in ms (the tests report it; they never assert it). */
  startMs: number;
}

interface Binaries {
  initdb: string;
  pgCtl: string;
}

/** `initdb` and `pg_ctl`: on PATH (Debian links them into /usr/local/bin here), else Debian's versioned folder. */
function findBinaries(): Binaries {
  const onPath = (name: string) =>
    (process.env.PATH ?? '')
      .split(path.delimiter)
      .filter(Boolean)
      .map((d) => path.join(d, name))
      .find((p) => isExecutable(p));
  const versioned = (name: string) => {
    const base = '/usr/lib/postgresql';
    let versions: string[];
    try {
      versions = fs.readdirSync(base).filter((v) => /^\d+$/.test(v));
    } catch {
      return undefined;
    }
    return versions
      .sort((a, b) => Number(b) - Number(a))
      .map((v) => path.join(base, v, 'bin', name))
      .find((p) => isExecutable(p));
  };
  const initdb = onPath('initdb') ?? versioned('initdb');
  const pgCtl = onPath('pg_ctl') ?? versioned('pg_ctl');
  const missing = [initdb ? null : 'initdb', pgCtl ? null : 'pg_ctl'].filter(Boolean);
  if (!initdb || !pgCtl) {
    throw new Error(
      `PostgreSQL's server programs (${missing.join(', ')}) were not found on PATH or in /usr/lib/postgresql/<version>/bin: ` +
        "these tests start a real PostgreSQL server. Install Debian's package: apt-get install -y postgresql (.ci/run does this).",
    );
  }
  return { initdb, pgCtl };
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** How to run the server's programs: as ourselves, or (under root, which PostgreSQL refuses) as the postgres user. */
function runAs(): { prefix: string[]; uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  let line: string | undefined;
  try {
    line = fs
      .readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('postgres:'));
  } catch {
    line = undefined;
  }
  const runuser = ['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser'].find((p) => isExecutable(p));
  if (!line || !runuser) {
    throw new Error(
      "These tests run as root, which PostgreSQL refuses, and there is no `postgres` system user (or no runuser) to run the server as: install Debian's postgresql package (it makes the user), or run the tests as another user.",
    );
  }
  const [, , uid, gid] = line.split(':');
  return { prefix: [runuser, '-u', 'postgres', '--'], uid: Number(uid), gid: Number(gid) };
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((r) => server.close(r));
  return port;
}

function tail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Starts a server for this test file (call it in beforeAll); it is stopped and removed when the file
 * ends. `timeZone`: the server's TimeZone setting (default: what initdb found, UTC here).
 */
export async function startPostgres(options: { timeZone?: string } = {}): Promise<TestPostgres> {
  const started = Date.now();
  const bin = findBinaries();
  const as = runAs();
  const dir = tempDir('memo-pg-');
  const dataDir = path.join(dir, 'data');
  const log = path.join(dir, 'server.log');
  const pwFile = path.join(dir, 'pw');
  const user = 'memo';
  // Characters a URL must escape, so the tests also cover a password that needs percent-encoding.
  const password = `pw-${randomBytes(12).toString('hex')}/@:`;
  fs.writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  if (as) {
    fs.chownSync(dir, as.uid, as.gid);
    fs.chownSync(pwFile, as.uid, as.gid);
  }
  const exec = async (file: string, args: string[], what: string) => {
    const [cmd, ...rest] = [...(as?.prefix ?? []), file, ...args];
    try {
      await run(cmd!, rest, { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C.UTF-8' } });
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`${what} failed: ${(e.stderr ?? '').trim() || e.message}\n${tail(log)}`, { cause: err });
    }
  };
  await exec(bin.initdb, ['-D', dataDir, '-U', user, '--auth=scram-sha-256', `--pwfile=${pwFile}`, '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync'], 'initdb');
  fs.rmSync(pwFile);

  let port = 0;
  const start = async () => {
    const settings = [
      '-c listen_addresses=127.0.0.1',
      `-p ${port}`,
      `-c unix_socket_directories=${dir}`,
      '-c fsync=off',
      '-c full_page_writes=off',
      '-c max_connections=200',
      ...(options.timeZone ? [`-c timezone=${options.timeZone}`] : []),
    ].join(' ');
    await exec(bin.pgCtl, ['-D', dataDir, '-l', log, '-w', '-t', '60', '-o', settings, 'start'], `pg_ctl start (port ${port})`);
  };
  // The free port can be taken between the check and the bind: try a few.
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await start();
      break;
    } catch (err) {
      if (attempt >= 3 || !/could not (bind|create listen)/i.test(tail(log))) throw err;
    }
  }
  let running = true;
  const frozen: number[] = [];
  /** The postmaster (first line of postmaster.pid) and its children: the backends and the server's own workers. */
  const serverPids = (): number[] => {
    const main = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (!Number.isInteger(main) || main <= 1) throw new Error('postmaster.pid names no process');
    const children = fs
      .readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return (
            Number(
              fs
                .readFileSync(`/proc/${d}/stat`, 'utf8')
                .replace(/^.*\) /s, '')
                .split(' ')[1],
            ) === main
          );
        } catch {
          return false;
        }
      })
      .map(Number);
    return [main, ...children];
  };
  const thaw = () => {
    for (const pid of frozen.splice(0)) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // gone already
      }
    }
  };
  const stop = async () => {
    thaw();
    if (!running) return;
    running = false;
    await exec(bin.pgCtl, ['-D', dataDir, '-m', 'immediate', '-w', 'stop'], 'pg_ctl stop');
  };
  atTeardown(stop);

  const host = '127.0.0.1';
  const query = async <R>(sql: string, params: unknown[] = [], database = 'postgres'): Promise<R[]> => {
    const client = new pg.Client({ host, port, user, password, database });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as R[];
    } finally {
      await client.end();
    }
  };
  let made = 0;
  return {
    host,
    port,
    user,
    password,
    startMs: Date.now() - started,
    query,
    async database(name = `t${++made}`) {
      if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new Error(`test database name ${name} is not a plain identifier`);
      await query(`CREATE DATABASE "${name}"`);
      return `postgres://${user}:${encodeURIComponent(password)}@${host}:${port}/${name}`;
    },
    async restart() {
      await stop();
      await start();
      running = true;
    },
    stop,
    freeze() {
      if (!running) throw new Error('the server is not running');
      // The postmaster first, so it forks no new backend while its children are listed: listed
      // before, a connection opened in between could get a backend that kept answering (a likely
      // cause of an approvals-one-answer run under load whose "frozen" query was answered).
      const [main] = serverPids();
      process.kill(main!, 'SIGSTOP');
      frozen.push(main!);
      for (let round = 0; round < 5; round++) {
        const fresh = serverPids().filter((pid) => !frozen.includes(pid));
        if (fresh.length === 0) break;
        for (const pid of fresh) {
          try {
            process.kill(pid, 'SIGSTOP');
            frozen.push(pid);
          } catch {
            // ended meanwhile
          }
        }
      }
    },
    thaw,
    async start() {
      thaw();
      if (running) return;
      await start();
      running = true;
    },
  };
}
