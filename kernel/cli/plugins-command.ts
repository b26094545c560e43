/** `memo plugins list|info|enable|disable|config`: the tool packs found, and their settings. */
import * as path from 'node:path';
import type { Command } from 'commander';
import { cliRecorded } from './admin-record.js';
import { isMemoError } from '../errors.js';
import { StderrLogger } from '../logger.js';
import { DenyingPrompter } from '../permissions/prompter.js';
import { listPackDirs, readManifest } from '../packs/pack-loader.js';
import type { PackManifest } from '../packs/manifest.js';
import { PackSettings, resolveConfig } from '../packs/pack-settings.js';
import { withCommandStore } from '../state/command-store.js';
import { reachServer } from '../control/control-client.js';
import { packInfo, packList, type PackInfo } from '../control/kernel-views.js';
import { registerPluginAuthoring } from './authoring-command.js';
import { noServerOption, NotFound, print, table, UsageError, type Cli, type ServerOption } from './context.js';
import { didYouMean, withDidYouMean } from '../util/did-you-mean.js';

function knownPackIds(cli: Cli): string[] {
  return listPackDirs(cli.packFolders()).map((f) => path.basename(f.dir));
}

function manifestOf(cli: Cli, id: string): PackManifest {
  const folders = listPackDirs(cli.packFolders());
  const folder = folders.find((f) => path.basename(f.dir) === id);
  if (!folder)
    throw new NotFound(
      withDidYouMean(
        `There is no pack "${id}".`,
        id,
        folders.map((f) => path.basename(f.dir)),
      ),
    );
  try {
    return readManifest(folder.dir);
  } catch (err) {
    throw new NotFound(`Pack "${id}" ${(err as Error).message}.`);
  }
}

function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let obj = target;
  for (const k of keys.slice(0, -1)) {
    if (typeof obj[k] !== 'object' || obj[k] === null) obj[k] = {};
    obj = obj[k] as Record<string, unknown>;
  }
  obj[keys.at(-1)!] = value;
}

/**
 * A refused settings change's message, with the setting meant for each key the pack does not have,
 * when one is close (`tmeout` ... did you mean timeoutMs?).
 */
function withSettingSuggestions(message: string, keys: string[], schema: PackManifest['config']): string {
  const accepted = Object.keys((schema?.properties as object | undefined) ?? {});
  const unknown = keys.filter((k) => !accepted.includes(k) && message.includes(`${k} is not an accepted field`));
  if (unknown.length === 1) return withDidYouMean(message, unknown[0]!, accepted);
  const meant = unknown.flatMap((k) => {
    const q = didYouMean(k, accepted);
    return q ? [`${k}: ${q}`] : [];
  });
  return meant.length ? `${message} ${meant.join(' ')}` : message;
}

/** Runs `use` on the pack choices (data/packs.json, or the shared database); what it changed is saved before this resolves. */
function withSettings<R>(cli: Cli, use: (settings: PackSettings) => R): Promise<R> {
  const logger = new StderrLogger();
  return withCommandStore(cli.dataDir(), logger, (db) => new PackSettings(path.join(cli.dataDir(), 'packs.json'), logger, db), use);
}

/**
 * After a change to the pack choices: a server running on this data folder re-reads them before the
 * command returns (its own poll would take up to a second, and an MCP call in that second would still
 * see the old choice). Returns the sentence to print: whether the server took the change, '' when none runs.
 */
async function applyInServer(cli: Cli, id: string, enabled?: boolean): Promise<string> {
  const reach = await reachServer({ dataDir: cli.dataDir() });
  if (reach === null || 'skipped' in reach) return '';
  const { pid } = reach.server;
  let server = reach.server;
  try {
    // Any plugins.* request makes the server re-read the choices first; info says what it now holds.
    // (Choices shared through PostgreSQL reach it by a notification: asked again for up to 2 s.)
    for (let tries = 0; ; tries++) {
      const info = (await server.request('plugins.info', { id })) as PackInfo | null;
      if (info === null || info.status !== 'loaded') return ` The running server (pid ${pid}) has no pack "${id}" loaded: it applies this when the pack loads.`;
      if (enabled === undefined || info.enabled === enabled) return ` The running server (pid ${pid}) applied it.`;
      if (tries === 20) return ` The running server (pid ${pid}) has not applied it yet: it still has the pack ${info.enabled ? 'enabled' : 'disabled'}.`;
      await new Promise((r) => setTimeout(r, 100));
      const again = await reachServer({ dataDir: cli.dataDir() });
      if (again === null || 'skipped' in again) return ` The running server (pid ${pid}) is gone.`;
      server = again.server;
    }
  } catch (err) {
    return ` The running server (pid ${pid}) did not answer (${(err as Error).message}): it applies the change within a second.`;
  }
}

export function registerPluginsCommands(program: Command, cli: Cli): void {
  const plugins = program.command('plugins').description('tool packs: list, inspect, enable, disable, configure');
  registerPluginAuthoring(plugins, cli);
  plugins
    .command('list')
    .description('every pack found, loaded or skipped (with the reason); through memo serve when it runs on this data folder')
    .option('--json', 'print JSON')
    .addOption(noServerOption())
    .action(async (opts: { json?: boolean } & ServerOption) => {
      const list = await cli.readVia(opts, 'plugins.list', {}, async () => {
        const kernel = await cli.boot(new DenyingPrompter());
        const own = packList(kernel);
        await kernel.shutdown();
        return own;
      });
      // A pack that failed, or whose update failed (the previous version runs), is a problem: exit 1.
      if (list.some((p) => p.status === 'failed' || p.reloadError)) cli.setExit(1);
      if (opts.json) return print(list);
      if (list.length === 0) return void process.stdout.write('No packs found.\n');
      process.stdout.write(
        table([
          ['PACK', 'VERSION', 'SOURCE', 'ENABLED', 'TOOLS', 'STATUS'],
          ...list.map((p) => [
            p.id,
            p.version ?? '-',
            p.source,
            p.enabled ? 'yes' : 'no',
            String(p.tools),
            // The update's reason as its first line here (memo plugins info shows it whole, with the code around it).
            p.status !== 'loaded'
              ? `failed: ${p.error}`
              : p.reloadError
                ? `loaded; its update failed: ${p.reloadError.split('\n')[0]}`
                : p.enabled
                  ? 'loaded'
                  : 'loaded, its tools not served',
          ]),
        ]),
      );
    });
  plugins
    .command('info <id>')
    .description("a pack's tools with their danger levels and schemas, its settings and status; through memo serve when it runs on this data folder")
    .option('--json', 'print JSON')
    .addOption(noServerOption())
    .action(async (id: string, opts: { json?: boolean } & ServerOption) => {
      const info = await cli.readVia(opts, 'plugins.info', { id }, async () => {
        const kernel = await cli.boot(new DenyingPrompter());
        const own = packInfo(kernel, id);
        await kernel.shutdown();
        return own;
      });
      if (!info) throw new NotFound(`There is no pack "${id}".`);
      if (opts.json) return print(info);
      const m = info.manifest;
      let out = `${id}${m ? ` ${m.version}: ${m.name}` : ''} (${info.source}, ${info.enabled ? 'enabled' : 'disabled'}, ${info.status}${info.error ? `: ${info.error}` : ''})\n`;
      if (info.reloadError) out += `Its newer version on disk did not load, so this one keeps running: ${info.reloadError}\n`;
      if (m) {
        out += `${m.description}\n\nTools:\n`;
        for (const t of m.tools)
          out += `  ${t.name}  [${t.danger}, ${t.effect}${t.confirm ? ', asks every time' : ''}]\n    ${t.description}\n    parameters: ${JSON.stringify(t.parameters)}\n`;
        if (m.config) out += `\nSettings schema: ${JSON.stringify(m.config)}\nSettings: ${JSON.stringify(info.config)}\n`;
      }
      process.stdout.write(out);
    });
  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    plugins
      .command(`${verb} <id>`)
      .description(`${verb} a pack (persists in data/packs.json; a running kernel applies it at once)`)
      .action(async (id: string) => {
        const known = knownPackIds(cli);
        if (!known.includes(id))
          throw new NotFound(withDidYouMean(`There is no pack "${id}"${known.length ? ` (packs: ${known.join(', ')})` : ''}.`, id, known));
        await cliRecorded(cli, { action: enabled ? 'pack.enable' : 'pack.disable', target: id }, () =>
          withSettings(cli, (settings) => settings.setEnabled(id, enabled)),
        );
        process.stdout.write(`${enabled ? 'Enabled' : 'Disabled'} ${id}.${await applyInServer(cli, id, enabled)}\n`);
      });
  }
  plugins
    .command('config <id> [settings...]')
    .description("show a pack's settings, or set them: key=value (value as JSON when it parses, else text)")
    .option('--json', 'print JSON')
    .action(async (id: string, pairs: string[], opts: { json?: boolean }) => {
      const manifest = manifestOf(cli, id);
      let current: Record<string, unknown>;
      if (pairs.length === 0) {
        current = resolveConfig(id, manifest.config, await withSettings(cli, (settings) => settings.storedConfig(id)));
      } else {
        const changes: Record<string, unknown> = {};
        for (const pair of pairs) {
          const eq = pair.indexOf('=');
          if (eq <= 0) throw new UsageError(`settings are key=value pairs, got "${pair}"`);
          setPath(changes, pair.slice(0, eq), parseValue(pair.slice(eq + 1)));
        }
        try {
          current = await cliRecorded(cli, { action: 'pack.config', target: id, change: changes }, () =>
            withSettings(cli, (settings) => settings.setConfig(id, manifest.config, changes)),
          );
        } catch (err) {
          if (isMemoError(err)) throw new NotFound(withSettingSuggestions(err.message, Object.keys(changes), manifest.config));
          throw err;
        }
      }
      const applied = pairs.length ? await applyInServer(cli, id) : '';
      if (opts.json) return print(current);
      process.stdout.write(JSON.stringify(current, null, 2) + '\n');
      if (applied) process.stderr.write(`memo:${applied}\n`);
    });
}
