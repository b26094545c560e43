// `write`: a host that writes as fast as it can until it is killed: a vault note, a task and a
// conversation turn per round, each acknowledged on stdout only after the kernel returned it
// (`{"ack":...}`). `check`: boots on the same folders (recovering what a crash left) and prints what
// the kernel now shows: every note through the vault's tools, the tasks, the conversation.
// `endure`: as `write`, but a call that fails (the database went away under it) is reported on stdout
// (`{"fail":...,"i":...,"message":...}`) and the writer goes on with the next step a moment later; a
// call that ran but whose audit line could not be written is acknowledged with `"unrecorded":true`.
// argv: write|endure|check root dataDir conversationId|- firstRound. The reliability tests kill the writer
// with SIGKILL. The database is the kernel's own setting: MEMO_DATABASE_URL in the environment (never
// argv, which any process can read); unset, SQLite files in dataDir.
import { createHash } from 'node:crypto';
import { BUILTIN_PACKS_DIR, createKernel, FixedAnswerPrompter } from '../../../dist/kernel/index.js';

const [mode, root, dataDir, conversationArg, firstArg] = process.argv.slice(2);
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

/** The note body of round i: big enough that a torn write would show, with a marker at each end. */
const noteBody = (i) => `begin ${i}\n${`line ${i} `.repeat(6000)}\nend ${i}\n`;

// `endure` approves each tool for the kernel session the first time (no question in flight when the database goes
// away: with a shared database an answer that cannot be recorded leaves the call waiting until the
// prompt's timeout, a separate matter from the writes tested here); `write` and `check` approve each call.
const answer = mode === 'endure' ? 'allow-session' : 'allow-once';
const kernel = createKernel({ root, dataDir, prompter: new FixedAnswerPrompter(answer), rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 } });
await kernel.loadPacks([{ dir: BUILTIN_PACKS_DIR, source: 'builtin', only: ['vault'] }]);
kernel.packs.setConfig('vault', { watch: false });
await kernel.start();
const caller = { kind: 'host', id: mode === 'check' ? 'crash-checker' : 'crash-writer' };

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

/** One step of a round: acknowledged once it returned; in `endure` mode a failure is reported and the writer goes on. */
async function step(kind, i, run) {
  let result;
  try {
    result = await run();
  } catch (err) {
    if (mode !== 'endure') throw err;
    out({ fail: kind, i, message: String(err?.message ?? err) });
    await new Promise((r) => setTimeout(r, 50));
    return;
  }
  out(result?.summary?.endsWith('(its audit line could not be written)') ? { ack: kind, i, unrecorded: true } : { ack: kind, i });
}
const ok = (r, what) => {
  if (!r.ok) throw new Error(`${what}: ${r.error.code}: ${r.error.message}`);
  return r;
};

for (let i = Number(firstArg); ; i++) {
  await step('note', i, async () =>
    ok(await kernel.invoke({ tool: 'vault_create_note', args: { title: `Note ${i}`, content: noteBody(i) }, caller }), `note ${i}`),
  );
  await step('task', i, async () => ok(await kernel.invoke({ tool: 'vault_create_task', args: { title: `Task ${i}` }, caller }), `task ${i}`));
  await step('turn', i, () =>
    kernel.conversations.appendTurn(
      conversation,
      [
        { role: 'user', content: `question ${i}` },
        { role: 'assistant', content: `answer ${i}` },
      ],
      [],
    ),
  );
}
