#!/usr/bin/env node
// Several `memo serve` instances behind one address, on one PostgreSQL database (issue 25).
//
//   node scripts/cluster.mjs start  [--dir D] [--instances N] [--port P] [--root R]
//                                   [--database-url-file F | --sqlite] [--json] [-- <memo serve options>]
//   node scripts/cluster.mjs status [--dir D] [--json]
//   node scripts/cluster.mjs stop   [--dir D]
//   node scripts/cluster.mjs rotate-token [--dir D]
//
// `start` runs in the foreground and supervises: a PostgreSQL server of its own (Debian's postgresql,
// run as the postgres user under root, in D/pg, on 127.0.0.1 only, with a generated password kept in
// D/pg-password) unless MEMO_DATABASE_URL or --database-url-file names one (never a command-line
// argument: any local user reads those in ps; the instances get it in their environment); N instances (default 2), each
// with its own data folder (D/instances/memo-<i>/data) and port, the same sandbox root, the same
// database, the same bearer token (D/token, `memo serve --token-file`) and the same keys (agent.key,
// kernel.key, audit.key in D/keys, copied into every data folder); and HAProxy (Debian's haproxy) on
// 127.0.0.1:P in front.
// An instance that exits is started again on its port; Ctrl-C (or `stop`) ends everything it started.
//
// The proxy balances round-robin with no stickiness for the stateless 2026-07-28 revision. A
// 2025-11-25 session lives in the instance that opened it, so the proxy learns each session id from
// the Mcp-Session-Id response header and sends the session's later requests to that instance (a
// stick table). When that instance is gone, the request goes to another one, which answers 404
// (no such session) and the client initialises a new session: the specification's path.
//
// `--sqlite` (one instance only): no database, the instance keeps everything in its data folder;
// the bench compares it with the PostgreSQL instances behind the same kind of proxy.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(PACKAGE, 'bin', 'memo');
const STATE = 'cluster.json';
/** How long one instance may take to print its ready line (a busy 2-core machine, migrations). */
const READY_MS = 120_000;

class Fail extends Error {}

function usage() {
  return [
    'usage: node scripts/cluster.mjs start|status|stop|rotate-token [options]',
    '  --dir D            the cluster folder (default ./memo-cluster)',
    '  --instances N      memo serve instances, 1-9 (default 2)',
    '  --port P           the proxy port on 127.0.0.1 (default: a free one)',
    '  --root R           the sandbox root every instance serves (default D/root; the vault is R/vault)',
    '  --database-url-file F  a file (mode 0600) holding the URL of an existing PostgreSQL database',
    '                     (or MEMO_DATABASE_URL; default: a server of its own in D/pg)',
    '  --sqlite           no database: one instance on SQLite files (for comparison)',
    '  --json             print one JSON line when ready (start) or the state (status)',
    '  -- ...             anything after -- is passed to every memo serve (e.g. -- --rate-limit off)',
  ].join('\n');
}

function parseArgs(argv) {
  const [command, ...rest] = argv;
  const opts = { command, dir: 'memo-cluster', instances: 2, port: 0, json: false, sqlite: false, serveArgs: [] };
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    const value = () => {
      const v = rest[++i];
      if (v === undefined) throw new Fail(`${a} needs a value\n${usage()}`);
      return v;
    };
    if (a === '--') {
      opts.serveArgs = rest.slice(i + 1);
      break;
    } else if (a === '--dir') opts.dir = value();
    else if (a === '--instances') opts.instances = Number(value());
    else if (a === '--port') opts.port = Number(value());
    else if (a === '--root') opts.root = value();
    else if (a === '--database-url')
      throw new Fail(
        '--database-url is not accepted: a password on a command line is readable by every local user (ps). Set MEMO_DATABASE_URL, or put the URL in a file only you can read (chmod 600) and pass --database-url-file',
      );
    else if (a === '--database-url-file') opts.databaseUrlFile = value();
    else if (a === '--sqlite') opts.sqlite = true;
    else if (a === '--json') opts.json = true;
    else throw new Fail(`unknown option ${a}\n${usage()}`);
  }
  if (!['start', 'status', 'stop', 'rotate-token'].includes(command ?? '')) throw new Fail(usage());
  if (!Number.isInteger(opts.instances) || opts.instances < 1 || opts.instances > 9) throw new Fail('--instances must be a whole number from 1 to 9');
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) throw new Fail('--port must be a whole number from 0 to 65535');
  if (opts.sqlite && opts.instances !== 1)
    throw new Fail('--sqlite runs one instance: instances on SQLite files share nothing (each has its own conversations, tasks, routines)');
  if (opts.sqlite && opts.databaseUrlFile) throw new Fail('--sqlite and --database-url-file exclude each other');
  opts.dir = path.resolve(opts.dir);
  // Read (and its mode checked) before anything is made.
  if (opts.command === 'start' && opts.databaseUrlFile) opts.databaseUrl = readDatabaseUrlFile(opts.databaseUrlFile);
  return opts;
}

/**
 * The database URL from --database-url-file: a file only its owner may read or write (like
 * memo serve's --token-file), holding one postgres:// URL. Errors name the file, never its content.
 */
function readDatabaseUrlFile(file) {
  let st;
  try {
    st = fs.statSync(file);
  } catch (err) {
    throw new Fail(`--database-url-file ${file} cannot be read (${err.code ?? 'error'})`);
  }
  if (!st.isFile()) throw new Fail(`--database-url-file ${file} is not a file`);
  if ((st.mode & 0o077) !== 0) throw new Fail(`--database-url-file ${file} may be read by others (mode ${(st.mode & 0o777).toString(8)}): chmod 600 ${file}`);
  const text = fs.readFileSync(file, 'utf8').trim();
  let url;
  try {
    url = new URL(text);
  } catch {
    throw new Fail(`--database-url-file ${file} must hold one postgres:// URL`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') throw new Fail(`--database-url-file ${file} must hold one postgres:// URL`);
  return text;
}

/** This process's environment without MEMO_DATABASE_URL: only memo serve is given the database's password. */
function withoutDatabaseUrl() {
  const env = { ...process.env };
  delete env.MEMO_DATABASE_URL;
  return env;
}

/** A URL with its password replaced by *** (the password is never printed). */
function redact(url) {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://(unreadable URL)';
  }
}

function isExecutable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function onPath(name, extra = []) {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean), ...extra];
  return dirs.map((d) => path.join(d, name)).find(isExecutable);
}

function postgresBinaries() {
  const versioned = (name) => {
    let versions = [];
    try {
      versions = fs.readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v));
    } catch {
      // none installed
    }
    return versions
      .sort((a, b) => Number(b) - Number(a))
      .map((v) => path.join('/usr/lib/postgresql', v, 'bin', name))
      .find(isExecutable);
  };
  const initdb = onPath('initdb') ?? versioned('initdb');
  const pgCtl = onPath('pg_ctl') ?? versioned('pg_ctl');
  if (!initdb || !pgCtl)
    throw new Fail(
      "PostgreSQL's server programs (initdb, pg_ctl) were not found: install Debian's package (apt-get install -y postgresql), or name a server you run (MEMO_DATABASE_URL or --database-url-file)",
    );
  return { initdb, pgCtl };
}

/** Under root, PostgreSQL's programs run as the postgres user (the server refuses root). */
function postgresUser() {
  if (process.getuid?.() !== 0) return null;
  const line = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const runuser = ['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser'].find(isExecutable);
  if (!line || !runuser) throw new Fail("running as root needs the postgres system user and runuser (Debian's postgresql package makes the user)");
  const [, , uid, gid] = line.split(':');
  return { prefix: [runuser, '-u', 'postgres', '--'], uid: Number(uid), gid: Number(gid) };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function readState(dir) {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, STATE), 'utf8'));
  } catch {
    return null;
  }
}

function writeState(dir, state) {
  const tmp = path.join(dir, `${STATE}.tmp`);
  fs.writeFileSync(tmp, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
  fs.renameSync(tmp, path.join(dir, STATE));
}

function alive(pid) {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** The command line of a live process, to make sure a recorded pid is still ours before signalling it. */
function cmdline(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

function get(url, timeoutMs = 2000) {
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (line) => process.stderr.write(`cluster: ${line}\n`);

// ---------------------------------------------------------------- PostgreSQL of its own

async function ownPostgres(dir) {
  const bin = postgresBinaries();
  const as = postgresUser();
  const pgDir = path.join(dir, 'pg');
  const dataDir = path.join(pgDir, 'data');
  const logFile = path.join(pgDir, 'server.log');
  const pwFile = path.join(dir, 'pg-password');
  const portFile = path.join(dir, 'pg-port');
  const run = (file, args, what) => {
    const [cmd, ...rest] = [...(as?.prefix ?? []), file, ...args];
    try {
      execFileSync(cmd, rest, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...withoutDatabaseUrl(), LC_ALL: 'C.UTF-8' } });
    } catch (err) {
      let tail = '';
      try {
        tail = fs.readFileSync(logFile, 'utf8').split('\n').slice(-10).join('\n');
      } catch {
        // no log yet
      }
      throw new Fail(`${what} failed: ${String(err.stderr ?? err.message).trim()}\n${tail}`);
    }
  };
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    fs.mkdirSync(pgDir, { recursive: true, mode: 0o700 });
    // A password of letters and digits: nothing to escape in the URL.
    const password = randomBytes(24).toString('base64url').replace(/[-_]/g, 'x');
    fs.writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
    const initPw = path.join(pgDir, 'initdb-password');
    fs.writeFileSync(initPw, `${password}\n`, { mode: 0o600 });
    if (as) {
      fs.chownSync(pgDir, as.uid, as.gid);
      fs.chownSync(initPw, as.uid, as.gid);
    }
    if (as) {
      try {
        execFileSync(as.prefix[0], [...as.prefix.slice(1), 'test', '-w', pgDir], { stdio: 'ignore' });
      } catch {
        throw new Fail(
          `the postgres user cannot reach ${pgDir}: every folder above it must be searchable by others (chmod o+x), or pick a --dir under one (e.g. in /var/tmp or /srv)`,
        );
      }
    }
    log(`initdb ${dataDir} (PostgreSQL for this cluster, user memo, password in ${pwFile})`);
    try {
      run(bin.initdb, ['-D', dataDir, '-U', 'memo', '--auth=scram-sha-256', `--pwfile=${initPw}`, '-E', 'UTF8', '--locale=C.UTF-8'], 'initdb');
    } finally {
      fs.rmSync(initPw, { force: true });
    }
  }
  const password = fs.readFileSync(pwFile, 'utf8').trim();
  let port = Number.parseInt(fs.existsSync(portFile) ? fs.readFileSync(portFile, 'utf8') : '', 10);
  if (!(port > 0)) {
    port = await freePort();
    fs.writeFileSync(portFile, `${port}\n`);
  }
  const settings = `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories=${pgDir} -c max_connections=300`;
  log(`starting PostgreSQL on 127.0.0.1:${port}`);
  run(bin.pgCtl, ['-D', dataDir, '-l', logFile, '-w', '-t', '120', '-o', settings, 'start'], 'pg_ctl start');
  const url = `postgres://memo:${password}@127.0.0.1:${port}/memo`;
  // The database itself, once.
  const { default: pg } = await import('pg');
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'memo', password, database: 'postgres' });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', ['memo']);
    if (found.rowCount === 0) await client.query('CREATE DATABASE memo');
  } finally {
    await client.end();
  }
  return {
    url,
    dataDir,
    stop: () => run(bin.pgCtl, ['-D', dataDir, '-m', 'fast', '-w', 'stop'], 'pg_ctl stop'),
  };
}

// ---------------------------------------------------------------- shared secrets

function ensureToken(dir) {
  const file = path.join(dir, 'token');
  if (!fs.existsSync(file)) fs.writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
  return file;
}

/**
 * The keys every instance must hold the same copy of, made by the kernel's own code: agent.key
 * (conversations in PostgreSQL are encrypted with it), kernel.key (stored provider keys in the
 * shared settings are sealed with it) and audit.key (every instance's chain is sealed with it, so
 * `memo audit verify` on any instance checks every chain).
 */
const SHARED_KEYS = [
  { name: 'agent.key', module: 'secrets/conversation-cipher.js', make: (m, file) => m.ConversationCipher.create(file) },
  { name: 'kernel.key', module: 'secrets/conversation-cipher.js', make: (m, file) => m.ConversationCipher.create(file) },
  { name: 'audit.key', module: 'audit/audit-chain.js', make: (m, file) => m.loadOrCreateKey(file) },
];

/**
 * Each shared key in D/keys: made once (or adopted from the first instance that has one) and copied
 * into every data folder. An instance whose copy differs is refused, never overwritten: what it
 * sealed or encrypted would become unreadable.
 */
async function shareKeys(dir, datas) {
  const keys = path.join(dir, 'keys');
  fs.mkdirSync(keys, { recursive: true, mode: 0o700 });
  for (const k of SHARED_KEYS) {
    const shared = path.join(keys, k.name);
    if (!fs.existsSync(shared)) {
      const existing = datas.map((d) => path.join(d, k.name)).find((f) => fs.existsSync(f));
      if (existing) fs.copyFileSync(existing, shared);
      else k.make(await import(path.join(PACKAGE, 'dist', 'kernel', k.module)), shared);
      fs.chmodSync(shared, 0o600);
    }
    const key = fs.readFileSync(shared);
    for (const data of datas) {
      const file = path.join(data, k.name);
      if (!fs.existsSync(file)) {
        fs.copyFileSync(shared, file);
        fs.chmodSync(file, 0o600);
      } else if (!fs.readFileSync(file).equals(key)) {
        throw new Fail(`${file} differs from ${shared}: every instance needs the same ${k.name}. Keep the right key in both places (nothing was changed).`);
      }
    }
  }
}

// ---------------------------------------------------------------- HAProxy

function haproxyBinary() {
  const bin = onPath('haproxy', ['/usr/sbin', '/usr/local/sbin']);
  if (!bin) throw new Fail("HAProxy was not found: install Debian's package (apt-get install -y haproxy; .ci/run does this)");
  return bin;
}

function haproxyConfig({ port, instances, socket }) {
  return [
    '# Written by scripts/cluster.mjs: regenerated at every start.',
    'global',
    '  maxconn 4096',
    `  stats socket ${socket} mode 600 level admin`,
    '  log stdout format raw local0 notice',
    'defaults',
    '  mode http',
    '  log global',
    '  timeout connect 2s',
    // Tool calls may run 120 s and streams stay open: the instances time calls out, not the proxy.
    '  timeout client 1h',
    '  timeout server 1h',
    '  timeout tunnel 1h',
    // Longer than a client keeps an idle connection (Node: 4 s), so the proxy never closes one under it.
    '  timeout http-keep-alive 65s',
    '  timeout http-request 30s',
    'frontend memo',
    `  bind 127.0.0.1:${port}`,
    // The web console keeps its login sessions in the instance's memory: its pages and API go to a
    // backend that keeps a browser on one instance. /mcp stays round-robin with no stickiness.
    '  acl console path /ui',
    '  acl console path_beg /ui/',
    '  use_backend memo_console if console',
    '  default_backend memo',
    'backend memo',
    '  balance roundrobin',
    // 2025-11-25 sessions: learn the instance of each session id from its answer, keep the session there.
    '  stick-table type string len 80 size 200k expire 35m',
    '  stick on req.hdr(mcp-session-id)',
    '  stick store-response res.hdr(mcp-session-id)',
    // A connection refused (an instance that just died) is tried on another instance; nothing else is
    // retried, so a tool call is never sent twice.
    // A new connection to an instance for each request (loopback: cheap). A kept one that the
    // instance's death broke would fail the next request on it, and that is no connection failure
    // the proxy may safely retry; a refused new connection is.
    '  option http-server-close',
    '  retries 2',
    '  retry-on conn-failure',
    '  option redispatch 1',
    '  option httpchk',
    '  http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host 127.0.0.1',
    '  http-check expect status 200',
    // A busy instance may answer its health check late: only a refused connection (a dead instance,
    // which the retry above already routes around) or 10 s of silence, three times, take it out.
    '  timeout check 10s',
    '  http-response set-header X-Memo-Instance %[srv_name]',
    ...instances.map((i) => `  server ${i.name} 127.0.0.1:${i.port} check inter 1s fastinter 250ms fall 3 rise 1`),
    // The console: the first answer sets a cookie naming the instance (MEMO_SERVER, HttpOnly,
    // SameSite=Strict, not cached), later requests carrying it go there. A login link names the
    // instance whose one-time code it holds (?server=memo-N), so it reaches that one. The servers
    // follow the health of the memo backend's (no second health check).
    'backend memo_console',
    '  balance roundrobin',
    // preserve: the Set-Cookie of a login's answer below is left as it is.
    '  cookie MEMO_SERVER insert indirect nocache preserve httponly attr SameSite=Strict',
    '  option http-server-close',
    '  retries 2',
    '  retry-on conn-failure',
    '  option redispatch 1',
    '  http-response set-header X-Memo-Instance %[srv_name]',
    // HAProxy inserts no cookie for a server a use-server rule chose: the login's answer sets it here
    // (http-request rules run before use-server rules wherever they are written).
    '  http-request set-var(txn.login) str(yes) if { path /ui/login }',
    ...instances.map((i) => `  use-server ${i.name} if { path /ui/login } { urlp(server) -m str ${i.name} }`),
    '  http-response add-header Set-Cookie "MEMO_SERVER=%[srv_name]; Path=/ui; HttpOnly; SameSite=Strict" if { var(txn.login) -m str yes }',
    ...instances.map((i) => `  server ${i.name} 127.0.0.1:${i.port} track memo/${i.name} cookie ${i.name}`),
    '',
  ].join('\n');
}

/** One command to HAProxy's admin socket; its answer. */
function haproxyCommand(socket, command) {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(socket);
    let out = '';
    c.on('data', (d) => (out += d));
    c.on('end', () => resolve(out));
    c.on('error', reject);
    c.end(`${command}\n`);
  });
}

// ---------------------------------------------------------------- start

async function start(opts) {
  if (!fs.existsSync(path.join(PACKAGE, 'dist', 'kernel', 'cli', 'main.js'))) throw new Fail('dist/ is missing: run npm run build first');
  const haproxy = haproxyBinary();
  // A folder of its own: made here, or one an earlier start made (never someone's populated folder).
  if (
    fs.existsSync(opts.dir) &&
    fs.readdirSync(opts.dir).length > 0 &&
    !fs.existsSync(path.join(opts.dir, STATE)) &&
    !fs.existsSync(path.join(opts.dir, 'token'))
  )
    throw new Fail(`${opts.dir} is not empty and holds no cluster: pick a new folder for --dir`);
  fs.mkdirSync(opts.dir, { recursive: true });
  // Others may pass through (the postgres user reaches D/pg), not list it; every secret in it is a 0600 file.
  fs.chmodSync(opts.dir, 0o711);
  const previous = readState(opts.dir);
  if (previous && alive(previous.supervisor) && cmdline(previous.supervisor).includes('cluster.mjs')) {
    throw new Fail(`a cluster already runs from ${opts.dir} (pid ${previous.supervisor}): node scripts/cluster.mjs stop --dir ${opts.dir}`);
  }
  const root = path.resolve(opts.root ?? path.join(opts.dir, 'root'));
  fs.mkdirSync(path.join(root, 'vault'), { recursive: true });
  const instances = Array.from({ length: opts.instances }, (_, i) => {
    const name = `memo-${i + 1}`;
    const home = path.join(opts.dir, 'instances', name);
    const data = path.join(home, 'data');
    fs.mkdirSync(data, { recursive: true, mode: 0o700 });
    return { name, data, log: path.join(home, 'serve.log'), port: 0, pid: 0, child: null, restarts: [], console: null };
  });

  let database = null;
  let pgServer = null;
  let proxy = null;
  let stopping = false;
  let proxyPort = 0;
  const socket = path.join(opts.dir, 'haproxy.sock');
  const stopAll = async () => {
    stopping = true;
    await Promise.all(
      instances.map(async (i) => {
        const c = i.child;
        if (!c || c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise((r) => c.once('exit', r));
        c.kill('SIGTERM');
        const timer = setTimeout(() => c.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(timer);
      }),
    );
    if (proxy && proxy.exitCode === null && proxy.signalCode === null) {
      const exited = new Promise((r) => proxy.once('exit', r));
      proxy.kill('SIGTERM');
      await exited;
    }
    if (pgServer) {
      log('stopping PostgreSQL');
      try {
        pgServer.stop();
      } catch (err) {
        // Ctrl-C reached the server too (it stops on SIGINT): nothing left to stop.
        if (!/not running|No such process|PID file .* does not exist/i.test(err.message)) log(err.message);
      }
    }
    const state = readState(opts.dir);
    if (state && state.supervisor === process.pid) writeState(opts.dir, { ...state, supervisor: 0, stoppedAt: new Date().toISOString() });
  };
  let onStopSignal = () => {};
  const signalled = new Promise((resolve) => (onStopSignal = resolve));
  const onSignal = (sig) => {
    // Ctrl-C reaches the instances too (one process group): none of them is to be started again.
    stopping = true;
    onStopSignal(sig);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    if (!opts.sqlite) {
      // Only ever from the environment or a 0600 file, and passed on in the environment (never argv).
      const given = opts.databaseUrl ?? process.env.MEMO_DATABASE_URL?.trim();
      if (given) database = given;
      else {
        pgServer = await ownPostgres(opts.dir);
        database = pgServer.url;
      }
    }
    const tokenFile = ensureToken(opts.dir);
    await shareKeys(
      opts.dir,
      instances.map((i) => i.data),
    );

    const saveState = () =>
      writeState(opts.dir, {
        supervisor: process.pid,
        startedAt: new Date().toISOString(),
        url: `http://127.0.0.1:${proxyPort}/mcp`,
        tokenFile,
        root,
        database: database ? redact(database) : 'none (SQLite files in the data folder)',
        ownPostgres: pgServer ? pgServer.dataDir : null,
        proxy: { pid: proxy?.pid ?? 0, port: proxyPort, config: path.join(opts.dir, 'haproxy.cfg'), socket },
        instances: instances.map((i) => ({ name: i.name, pid: i.pid, port: i.port, data: i.data, log: i.log, restarts: i.restarts.length })),
      });

    /** Starts one instance (on its port once it has one) and resolves when it printed its ready line. */
    const launch = (inst) =>
      new Promise((resolve, reject) => {
        const out = fs.openSync(inst.log, 'a');
        const args = [BIN, '--root', root, '--data', inst.data, 'serve', '--json', '--port', String(inst.port), '--token-file', tokenFile, ...opts.serveArgs];
        const env = { ...process.env, MEMO_INSTANCE_ID: inst.name };
        if (database) env.MEMO_DATABASE_URL = database;
        else delete env.MEMO_DATABASE_URL;
        const child = spawn(process.execPath, args, { cwd: opts.dir, env, stdio: ['ignore', 'pipe', out] });
        fs.closeSync(out);
        inst.child = child;
        let buf = '';
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Fail(`${inst.name} printed no ready line in ${READY_MS / 1000} s (see ${inst.log})`));
        }, READY_MS);
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (d) => {
          if (buf === null) return;
          buf += d;
          const nl = buf.indexOf('\n');
          if (nl < 0) return;
          const line = buf.slice(0, nl);
          buf = null;
          clearTimeout(timer);
          try {
            const info = JSON.parse(line);
            inst.port = Number(new URL(info.url).port);
            inst.pid = child.pid;
            inst.console = typeof info.console === 'string' ? info.console : null;
            resolve();
          } catch {
            reject(new Fail(`${inst.name} printed something other than its ready line (see ${inst.log})`));
          }
        });
        child.once('exit', (code, signal) => {
          clearTimeout(timer);
          if (buf !== null) reject(new Fail(`${inst.name} exited before it was ready (${signal ?? `code ${code}`}); see ${inst.log}`));
          else if (!stopping) void revive(inst, code, signal);
        });
      });

    /** An instance that died is started again on its port (at most 5 times a minute). */
    const revive = async (inst, code, signal) => {
      const now = Date.now();
      inst.restarts = inst.restarts.filter((t) => now - t < 60_000);
      if (inst.restarts.length >= 5) {
        log(`${inst.name} exited (${signal ?? `code ${code}`}) for the 6th time in a minute: left stopped (see ${inst.log})`);
        return;
      }
      inst.restarts.push(now);
      inst.pid = 0;
      saveState();
      log(`${inst.name} exited (${signal ?? `code ${code}`}); starting it again on port ${inst.port}`);
      await sleep(500);
      for (let attempt = 1; !stopping; attempt++) {
        try {
          await launch(inst);
          saveState();
          log(`${inst.name} is back (pid ${inst.pid})`);
          return;
        } catch (err) {
          if (attempt >= 3) {
            log(`${inst.name} did not come back: ${err.message}`);
            return;
          }
          await sleep(1000 * attempt);
        }
      }
    };

    log(`starting ${instances.length} memo serve instance(s) on ${database ? redact(database) : 'SQLite'}`);
    await Promise.all(instances.map((i) => launch(i)));
    proxyPort = opts.port || (await freePort());
    fs.writeFileSync(path.join(opts.dir, 'haproxy.cfg'), haproxyConfig({ port: proxyPort, instances, socket }));
    const proxyLog = fs.openSync(path.join(opts.dir, 'haproxy.log'), 'a');
    fs.rmSync(socket, { force: true });
    proxy = spawn(haproxy, ['-db', '-f', path.join(opts.dir, 'haproxy.cfg')], { stdio: ['ignore', proxyLog, proxyLog], env: withoutDatabaseUrl() });
    fs.closeSync(proxyLog);
    const proxyExit = new Promise((r) => proxy.once('exit', (code, signal) => r(signal ?? `code ${code}`)));
    const deadline = Date.now() + 30_000;
    while ((await get(`http://127.0.0.1:${proxyPort}/healthz`)) !== 200) {
      if (proxy.exitCode !== null || proxy.signalCode !== null)
        throw new Fail(`haproxy exited at start (see ${path.join(opts.dir, 'haproxy.log')}; port ${proxyPort} may be taken)`);
      if (Date.now() > deadline) throw new Fail(`the proxy on port ${proxyPort} answered no health check in 30 s (see ${path.join(opts.dir, 'haproxy.log')})`);
      await sleep(100);
    }
    saveState();
    const token = fs.readFileSync(tokenFile, 'utf8').trim();
    const url = `http://127.0.0.1:${proxyPort}/mcp`;
    /** An instance's one-time console login link, through the proxy and naming that instance. */
    const consoleLink = (inst) => {
      if (!inst.console) return null;
      const link = new URL(inst.console);
      link.port = String(proxyPort);
      link.searchParams.set('server', inst.name);
      return link.toString();
    };
    const summary = {
      url,
      token,
      tokenFile,
      dir: opts.dir,
      root,
      database: database ? redact(database) : null,
      supervisor: process.pid,
      proxy: { pid: proxy.pid, port: proxyPort, socket },
      console: consoleLink(instances[0]),
      instances: instances.map((i) => ({ name: i.name, pid: i.pid, port: i.port, data: i.data, console: consoleLink(i) })),
    };
    if (opts.json) process.stdout.write(JSON.stringify(summary) + '\n');
    else
      process.stdout.write(
        `Memo cluster running: ${instances.length} instance(s) behind HAProxy\n` +
          `  url:      ${url}\n  token:    ${token} (in ${tokenFile})\n  database: ${summary.database ?? 'none (SQLite)'}\n` +
          instances.map((i) => `  ${i.name}:  pid ${i.pid}, http://127.0.0.1:${i.port}/mcp, data ${i.data}\n`).join('') +
          `  console:  ${summary.console} (web console, works once)\n` +
          `HTTP client config:\n${JSON.stringify({ mcpServers: { memo: { type: 'http', url, headers: { Authorization: `Bearer ${token}` } } } })}\n` +
          `Status: node scripts/cluster.mjs status --dir ${opts.dir}   Stop: Ctrl-C, or node scripts/cluster.mjs stop --dir ${opts.dir}\n`,
      );
    // Until a signal, or the proxy dies (then everything stops: nothing would reach the instances).
    const why = await Promise.race([signalled, proxyExit.then((how) => `haproxy exited (${how})`)]);
    log(`stopping (${why})`);
    await stopAll();
    return why === 'SIGINT' || why === 'SIGTERM' ? 0 : 1;
  } catch (err) {
    await stopAll();
    throw err;
  }
}

// ---------------------------------------------------------------- status, stop, rotate-token

async function status(opts) {
  const state = readState(opts.dir);
  if (!state) throw new Fail(`no cluster in ${opts.dir} (no ${STATE})`);
  const running = alive(state.supervisor) && cmdline(state.supervisor).includes('cluster.mjs');
  const instances = await Promise.all(
    state.instances.map(async (i) => ({
      ...i,
      alive: alive(i.pid),
      healthy: i.port ? (await get(`http://127.0.0.1:${i.port}/healthz`)) === 200 : false,
    })),
  );
  const proxyHealthy = state.proxy.port ? (await get(`http://127.0.0.1:${state.proxy.port}/healthz`)) === 200 : false;
  let proxyView = null;
  if (running && fs.existsSync(state.proxy.socket)) {
    try {
      // show servers state: "<be_id> <be_name> <srv_id> <srv_name> <srv_addr> <srv_op_state> ..."; 2 = running.
      const text = await haproxyCommand(state.proxy.socket, 'show servers state memo');
      proxyView = Object.fromEntries(
        text
          .split('\n')
          .filter((l) => /^\d+ memo /.test(l))
          .map((l) => l.split(' '))
          .map((f) => [f[3], f[5] === '2' ? 'up' : 'down']),
      );
    } catch {
      proxyView = null;
    }
  }
  const view = { ...state, running, proxyHealthy, instances: instances.map((i) => ({ ...i, proxy: proxyView?.[i.name] ?? 'unknown' })) };
  if (opts.json) process.stdout.write(JSON.stringify(view) + '\n');
  else {
    process.stdout.write(
      `cluster ${opts.dir}: ${running ? `running (supervisor pid ${state.supervisor})` : 'not running'}\n` +
        `  proxy:    ${state.url} ${proxyHealthy ? 'answers' : 'does not answer'}\n  database: ${state.database}\n` +
        view.instances
          .map(
            (i) =>
              `  ${i.name}:  pid ${i.pid || '-'} ${i.alive ? 'alive' : 'gone'}, port ${i.port} ${i.healthy ? 'healthy' : 'not answering'}, proxy sees it ${i.proxy}, restarts ${i.restarts}\n`,
          )
          .join(''),
    );
  }
  return running && proxyHealthy && view.instances.every((i) => i.healthy) ? 0 : 3;
}

async function stop(opts) {
  const state = readState(opts.dir);
  if (!state) throw new Fail(`no cluster in ${opts.dir} (no ${STATE})`);
  if (alive(state.supervisor) && cmdline(state.supervisor).includes('cluster.mjs')) {
    process.kill(state.supervisor, 'SIGTERM');
    for (let waited = 0; alive(state.supervisor); waited += 100) {
      if (waited > 90_000) throw new Fail(`the supervisor (pid ${state.supervisor}) did not stop in 90 s`);
      await sleep(100);
    }
    process.stdout.write(`stopped the cluster in ${opts.dir}\n`);
    return 0;
  }
  // The supervisor is gone (killed): stop what it left, checking each pid is still the process it started.
  let any = false;
  for (const i of state.instances) {
    if (alive(i.pid) && cmdline(i.pid).includes(i.data)) {
      process.kill(i.pid, 'SIGTERM');
      any = true;
    }
  }
  if (alive(state.proxy.pid) && cmdline(state.proxy.pid).includes(state.proxy.config)) {
    process.kill(state.proxy.pid, 'SIGTERM');
    any = true;
  }
  if (state.ownPostgres && fs.existsSync(path.join(state.ownPostgres, 'postmaster.pid'))) {
    const { pgCtl } = postgresBinaries();
    const as = postgresUser();
    const [cmd, ...rest] = [...(as?.prefix ?? []), pgCtl, '-D', state.ownPostgres, '-m', 'fast', '-w', 'stop'];
    execFileSync(cmd, rest, { stdio: 'ignore' });
    any = true;
  }
  writeState(opts.dir, { ...state, supervisor: 0, stoppedAt: new Date().toISOString() });
  process.stdout.write(any ? `stopped what the cluster in ${opts.dir} left running\n` : `nothing runs from ${opts.dir}\n`);
  return 0;
}

/** A new shared token: written to D/token, then every instance re-reads it (SIGHUP). */
async function rotateToken(opts) {
  const state = readState(opts.dir);
  if (!state) throw new Fail(`no cluster in ${opts.dir} (no ${STATE})`);
  const tmp = `${state.tokenFile}.tmp`;
  fs.writeFileSync(tmp, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
  fs.renameSync(tmp, state.tokenFile);
  for (const i of state.instances) if (alive(i.pid) && cmdline(i.pid).includes(i.data)) process.kill(i.pid, 'SIGHUP');
  process.stdout.write(`new token in ${state.tokenFile}; every running instance re-read it\n`);
  return 0;
}

try {
  const opts = parseArgs(process.argv.slice(2));
  const run = { start, status, stop, 'rotate-token': rotateToken }[opts.command];
  process.exitCode = await run(opts);
} catch (err) {
  process.stderr.write(`cluster: ${err instanceof Fail ? err.message : (err?.stack ?? String(err))}\n`);
  process.exitCode = 2;
}
