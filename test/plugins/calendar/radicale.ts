/**
 * A real CalDAV server for the tests: Radicale (Debian package `radicale`), started as a child on a
 * free loopback port with its own temp storage and an htpasswd file, stopped when the file ends.
 * .ci/run installs it; on a machine without it the CalDAV tests do not run and say so, except under
 * CI=true, where a missing Radicale fails the run.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { killWhenDone } from '../../helpers/cleanup.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';

export const RADICALE = (() => {
  const r = spawnSync('sh', ['-c', 'command -v radicale'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
})();

export interface Radicale {
  /** The server's root URL (http://127.0.0.1:PORT/). */
  url: string;
  user: string;
  password: string;
  /** A request with the user's Basic credentials. */
  request(method: string, urlPath: string, body?: string, headers?: Record<string, string>): Promise<Response>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((r) => server.close(r));
  return port;
}

export async function startRadicale(): Promise<Radicale> {
  if (!RADICALE) throw new Error('radicale is not installed (apt-get install -y radicale)');
  const dir = tempDir('memo-radicale-');
  const user = 'alice';
  const password = 'app-password-for-tests-7f3a';
  fs.writeFileSync(path.join(dir, 'users'), `${user}:${password}\n`);
  const port = await freePort();
  fs.writeFileSync(
    path.join(dir, 'config'),
    [
      '[server]',
      `hosts = 127.0.0.1:${port}`,
      '[auth]',
      'type = htpasswd',
      `htpasswd_filename = ${path.join(dir, 'users')}`,
      'htpasswd_encryption = plain',
      '[storage]',
      `filesystem_folder = ${path.join(dir, 'collections')}`,
      '[rights]',
      'type = owner_only',
      '[logging]',
      'level = warning',
      '',
    ].join('\n'),
  );
  let output = '';
  const child = killWhenDone(spawn(RADICALE, ['--config', path.join(dir, 'config')], { stdio: ['ignore', 'pipe', 'pipe'] }));
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}/`;
  const auth = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const request = (method: string, urlPath: string, body?: string, headers: Record<string, string> = {}) =>
    fetch(new URL(urlPath, url), { method, headers: { authorization: auth, ...headers }, ...(body !== undefined ? { body } : {}) });
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`radicale exited (${child.exitCode}): ${output}`);
      return (await request('PROPFIND', `/${user}/`, undefined, { depth: '0' }).catch(() => null))?.status === 207;
    },
    { what: () => `radicale to answer on ${url} (output: ${output.slice(-500)})` },
  );
  return { url, user, password, request };
}

/** Makes a calendar collection (MKCALENDAR) with a display name. */
export async function makeCalendar(server: Radicale, name: string, displayName: string): Promise<string> {
  const body = `<?xml version="1.0" encoding="utf-8"?>
<C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:set><D:prop><D:displayname>${displayName}</D:displayname>
  <C:supported-calendar-component-set><C:comp name="VEVENT"/></C:supported-calendar-component-set></D:prop></D:set>
</C:mkcalendar>`;
  const res = await server.request('MKCALENDAR', `/${server.user}/${name}/`, body, { 'content-type': 'application/xml' });
  if (res.status !== 201) throw new Error(`MKCALENDAR ${name}: HTTP ${res.status} ${await res.text()}`);
  return `/${server.user}/${name}/`;
}
