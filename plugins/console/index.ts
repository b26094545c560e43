/**
 * The web console as a pack: `activate` mounts it under `/ui` on memo serve's HTTP server
 * (`api.http`), where it is served while the pack is enabled, and it works through the kernel's
 * administration view (`api.administration()`), which this pack gets because it is built in and its
 * plugin.json declares `"privileges": ["administration"]`. It has no tools: no agent or MCP client
 * can reach what it does.
 */
import { administrationOf, type PackApi } from 'memo-kernel/pack';
import { CONSOLE_PATH, ConsoleServer } from './console-server.js';

export const tools = {};

export function activate(api: PackApi): void {
  const server = new ConsoleServer(administrationOf(api), {
    logger: api.logger,
    clock: api.clock,
    providers: api.providers.settings,
    lookup: (token) => api.lookup(token),
  });
  // Released (and closed: event streams end, chat turns stop) when the pack unloads or reloads.
  api.http.mount(CONSOLE_PATH, server);
}
