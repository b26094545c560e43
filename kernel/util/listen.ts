import type * as net from 'node:net';

/** Starts `server` listening on a unix socket path; rejects with the listen error (EADDRINUSE, EACCES). */
export function listen(server: net.Server, socket: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
