/** `memo permissions list|revoke`: the stored (forever) decisions. */
import * as path from 'node:path';
import type { Command } from 'commander';
import { StderrLogger } from '../logger.js';
import { PermissionStore } from '../permissions/permission-store.js';
import { print, table, type Cli } from './context.js';

export function registerPermissionsCommands(program: Command, cli: Cli): void {
  const permissions = program.command('permissions').description('stored (forever) permission decisions');
  permissions
    .command('list')
    .option('--json', 'print JSON')
    .description('list stored decisions')
    .action((opts: { json?: boolean }) => {
      const store = new PermissionStore(path.join(cli.dataDir(), 'permissions.json'), new StderrLogger());
      const list = store.list();
      if (opts.json) return print(list);
      if (list.length === 0) return void process.stdout.write('No stored permission decisions.\n');
      process.stdout.write(table([['TOOL', 'DECISION', 'PACK', 'SINCE'], ...list.map((d) => [d.tool, d.decision, d.plugin ?? '-', d.at])]));
    });
  permissions
    .command('revoke <tool>')
    .description("remove a tool's stored decision (it will be asked again)")
    .action((toolName: string) => {
      const store = new PermissionStore(path.join(cli.dataDir(), 'permissions.json'), new StderrLogger());
      if (store.revoke(toolName)) process.stdout.write(`Revoked the stored decision for ${toolName}.\n`);
      else {
        process.stderr.write(`memo: there is no stored decision for ${toolName}.\n`);
        cli.setExit(1);
      }
    });
}
