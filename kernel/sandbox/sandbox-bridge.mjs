// Runs inside the OS sandbox (os-sandbox.ts), before the command: listens on the sandbox's own
// loopback (127.0.0.1:PORT, in a network namespace of its own) and carries each connection to a unix
// socket the kernel serves outside (the filtering proxy, or a fixed forward such as an agent CLI's MCP
// endpoint). Then it runs the command, passes termination signals on, and ends as the command ended.
//
// Plain JavaScript with no imports but Node's: it is run by path, from the source tree under test and
// from dist/ when installed.
//
//   node sandbox-bridge.mjs --forward 3128=/path/proxy.sock [--forward PORT=SOCK ...] -- CMD ARGS...
import { spawn } from 'node:child_process';
import * as net from 'node:net';

const argv = process.argv.slice(2);
const forwards = [];
while (argv[0] === '--forward') {
  const [port, socket] = (argv[1] ?? '').split(/=(.*)/s);
  forwards.push({ port: Number(port), socket });
  argv.splice(0, 2);
}
if (argv[0] === '--') argv.shift();
if (argv.length === 0) {
  process.stderr.write('sandbox-bridge: no command\n');
  process.exit(125);
}

const servers = [];
for (const f of forwards) {
  const server = net.createServer((client) => {
    const upstream = net.connect(f.socket);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  servers.push(
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(f.port, '127.0.0.1', resolve);
    }),
  );
}
try {
  await Promise.all(servers);
} catch (err) {
  process.stderr.write(`sandbox-bridge: cannot listen: ${err.message}\n`);
  process.exit(125);
}

const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit' });
// Termination goes to the command; the bridge stays until it ends (its end ends the sandbox).
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => child.kill(sig));
child.on('error', (err) => {
  process.stderr.write(`${err.code === 'ENOENT' ? `command not found: ${argv[0]}` : err.message}\n`);
  process.exit(127);
});
child.on('exit', (code, signal) => {
  if (signal) {
    for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.removeAllListeners(sig);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
