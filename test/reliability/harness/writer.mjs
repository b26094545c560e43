// `write`: a host that writes as fast as it can until it is killed: a vault note, a task and a
// conversation turn per round, each acknowledged on stdout only after the kernel returned it
// (`{"ack":...}`). `check`: boots on the same folders (recovering what a crash left) and prints what
// the kernel now shows: every note through the vault's tools, the tasks, the conversation.
// argv: write|check root dataDir conversationId|- firstRound. The reliability test kills `write` with SIGKILL.
import { createHash } from 'node:crypto';
import { BUILTIN_PACKS_DIR, createKernel, FixedAnswerPrompter } from '../../../dist/kernel/index.js';

const [mode, root, dataDir, conversationArg, firstArg] = process.argv.slice(2);
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

/** The note body of round i: big enough that a torn write would show, with a marker at each end. */
const noteBody = (i) => `begin ${i}\n${`line ${i} `.repeat(6000)}\nend ${i}\n`;

const kernel = createKernel({ root, dataDir, prompter: new FixedAnswerPrompter('allow-once'), rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 } });
await kernel.loadPacks([{ dir: BUILTIN_PACKS_DIR, source: 'builtin', only: ['vault'] }]);
kernel.packs.setConfig('vault', { watch: false });
await kernel.start();
const caller = { kind: 'host', id: mode === 'write' ? 'crash-writer' : 'crash-checker' };

if (mode === 'check') {
  const value = (r) => {
    if (!r.ok) throw new Error(`${r.tool}: ${r.error.message}`);
    return r.value;
  };
  const listed = value(await kernel.invoke({ tool: 'vault_list_folder', args: {}, caller }));
  const notes = [];
  for (const entry of listed.entries ?? listed.items ?? []) {
    if (!entry.path?.endsWith('.md')) continue;
    const read = value(await kernel.invoke({ tool: 'vault_read_note', args: { note: entry.path }, caller }));
    notes.push({ path: entry.path, title: read.title, sha256: createHash('sha256').update(read.content).digest('hex') });
  }
  const tasks = value(await kernel.invoke({ tool: 'vault_list_tasks', args: { limit: 1000 }, caller }));
  const history = await kernel.conversations.history(conversationArg);
  out({ notes, tasks: (tasks.tasks ?? tasks.items ?? tasks).map((t) => t.title), history });
  await kernel.shutdown();
  process.exit(0);
}

const conversation = conversationArg === '-' ? (await kernel.conversations.create({ title: 'crash test' })).id : conversationArg;
out({ ready: true, conversation });

for (let i = Number(firstArg); ; i++) {
  const note = await kernel.invoke({ tool: 'vault_create_note', args: { title: `Note ${i}`, content: noteBody(i) }, caller });
  if (!note.ok) throw new Error(`note ${i}: ${note.error.message}`);
  out({ ack: 'note', i });
  const task = await kernel.invoke({ tool: 'vault_create_task', args: { title: `Task ${i}` }, caller });
  if (!task.ok) throw new Error(`task ${i}: ${task.error.message}`);
  out({ ack: 'task', i });
  await kernel.conversations.appendTurn(
    conversation,
    [
      { role: 'user', content: `question ${i}` },
      { role: 'assistant', content: `answer ${i}` },
    ],
    [],
  );
  out({ ack: 'turn', i });
}
