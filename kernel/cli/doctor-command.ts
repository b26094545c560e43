/**
 * `memo doctor`: what a person needs to know before trusting this machine with an agent, one line a
 * check: the OS sandbox under commands (and what happens without it), the data folder, the settings,
 * the providers, the packs, the conversations file, and whether a memo serve runs on this data folder.
 * Exit 1 when a check fails (a command would be refused, the data folder cannot be written, the
 * conversations file is damaged), 0 otherwise.
 */
import * as fs from 'node:fs';
import type { Command } from 'commander';
import { bwrapVersion, describeSandbox, osSandboxStatus } from '../sandbox/os-sandbox.js';
import { storedSettings } from '../state/command-store.js';
import { StderrLogger } from '../logger.js';
import { print, type Cli } from './context.js';

type Level = 'ok' | 'warn' | 'fail';

interface Check {
  check: string;
  level: Level;
  detail: string;
}

export function registerDoctorCommand(program: Command, cli: Cli): void {
  program
    .command('doctor')
    .description('check this machine and data folder: the OS sandbox under commands, the data folder, settings, providers, packs, conversations, memo serve')
    .option('--json', 'print the checks as JSON')
    .action(async (opts: { json?: boolean }) => {
      const checks: Check[] = [];
      const dataDir = cli.dataDir();
      const settings = await storedSettings(dataDir, new StderrLogger(true));
      const fallback = settings.sandbox ?? 'refuse';

      const sandbox = await osSandboxStatus();
      const version = sandbox.bwrap && sandbox.available ? bwrapVersion(sandbox.bwrap) : null;
      checks.push({
        check: 'sandbox',
        level: sandbox.available ? (sandbox.processLimit.kind === 'none' ? 'warn' : 'ok') : fallback === 'refuse' ? 'fail' : 'warn',
        detail: `${describeSandbox(sandbox, fallback)}${version ? ` [${version}]` : ''}`,
      });

      let dataLevel: Level = 'ok';
      let dataDetail: string;
      try {
        const st = fs.statSync(dataDir);
        fs.accessSync(dataDir, fs.constants.W_OK);
        const open = (st.mode & 0o077) !== 0;
        if (open) dataLevel = 'warn';
        dataDetail = `${dataDir} (mode ${(st.mode & 0o777).toString(8)}${open ? ': others can read it; chmod 700 it' : ''})`;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        dataLevel = code === 'ENOENT' ? 'ok' : 'fail';
        dataDetail = code === 'ENOENT' ? `${dataDir} does not exist yet: made on first start` : `${dataDir} cannot be written (${code})`;
      }
      checks.push({ check: 'data folder', level: dataLevel, detail: dataDetail });

      const server = await cli.server({}).catch(() => null);
      checks.push({
        check: 'memo serve',
        level: 'ok',
        detail: server ? 'a memo serve runs on this data folder (CLI commands go through it)' : 'no memo serve runs on this data folder',
      });
      server?.close();

      const kernel = await cli.boot(null, true);
      try {
        const providers = kernel.providerSettings.list();
        const active = kernel.providerSettings.active();
        checks.push({
          check: 'providers',
          level: providers.length === 0 ? 'warn' : 'ok',
          detail:
            providers.length === 0
              ? 'no model provider is configured: memo provider add (or memo chat --backend claude|codex|agy)'
              : `${providers.length} configured${active ? `, active: ${active.name}` : ''}`,
        });
        const packs = kernel.packs.list();
        const failed = packs.filter((p) => p.status === 'failed');
        checks.push({
          check: 'packs',
          level: failed.length > 0 ? 'warn' : 'ok',
          detail: `${packs.filter((p) => p.status === 'loaded' && p.enabled).length} active, ${packs.filter((p) => !p.enabled).length} disabled${
            failed.length ? `; not loaded: ${failed.map((p) => `${p.id} (${p.error ?? 'failed'})`).join(', ')}` : ''
          }; ${kernel.registry.list().length} tools`,
        });
        // Read-only: SQLite's quick_check on the conversations file (a damaged one stops chats, and fails here).
        const conversations = await kernel.conversations.check?.();
        if (conversations)
          checks.push({
            check: 'conversations',
            level: conversations.state === 'damaged' ? 'fail' : conversations.state === 'unchecked' ? 'warn' : 'ok',
            detail: conversations.detail,
          });
        checks.push({
          check: 'settings',
          level: 'ok',
          detail: `rate limit ${settings.rateLimit ?? 'default'}; where the sandbox cannot start, commands are ${fallback === 'refuse' ? 'refused' : 'run judged only'}`,
        });
      } finally {
        await kernel.shutdown();
      }

      if (opts.json) print(checks);
      else for (const c of checks) process.stdout.write(`${c.level.toUpperCase().padEnd(4)}  ${c.check}: ${c.detail}\n`);
      cli.setExit(checks.some((c) => c.level === 'fail') ? 1 : 0);
    });
}
