/**
 * Reverse shells: a program wired to a socket (`nc -e`, socat `EXEC:`), and named pipes, the
 * plumbing of the netcat variant. Interactive shells and `/dev/tcp` redirects are judged with
 * shells and redirects.
 */
import { found, type Handler } from '../context.js';
import { register } from '../registry.js';
import { code } from '../words.js';
import { blockName } from './disk.js';

const judgeNetcat: Handler = (name, args, _cmd, ctx) => {
  const exec = args.find((w) => !w.opaque && (/^--(exec|sh-exec|lua-exec)(=|$)/.test(w.text) || /^-[A-Za-z0-9]*[ec]/.test(w.text)));
  return exec ? found(ctx, 'nc-exec', `${code(name + ' ' + exec.source)} wires a program to a network socket, a reverse shell`) : null;
};

const judgeSocat: Handler = (name, args, _cmd, ctx) => {
  const exec = args.find((w) => /(^|[,!])\s*(exec|system):/i.test(w.text));
  return exec ? found(ctx, 'nc-exec', `${code(name)} with the address ${code(exec.source)} wires a program to a network socket, a reverse shell`) : null;
};

const judgeMknod: Handler = (name, args, _cmd, ctx) =>
  args.some((w) => w.text === 'p') ? found(ctx, 'mkfifo', `${code(name + ' … p')} creates a named pipe, the plumbing of a reverse shell`) : null;

register(['nc', 'ncat', 'netcat', 'nc.traditional', 'nc.openbsd'], judgeNetcat);
register(['socat'], judgeSocat);
register(['mkfifo'], blockName('mkfifo', ' creates a named pipe, the plumbing of a reverse shell'));
register(['mknod'], judgeMknod);
