import * as fs from 'node:fs';

/** Live (not zombie) processes whose command line contains `arg`: how tests find what a command started. */
export function processesWithArg(arg: string): number[] {
  return fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((pid) => {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2)) && fs.readFileSync(`/proc/${pid}/cmdline`).includes(arg);
      } catch {
        return false;
      }
    });
}
