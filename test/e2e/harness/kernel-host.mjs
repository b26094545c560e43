// A minimal host app for end-to-end tests: boots the compiled kernel, watches pack folders and
// speaks JSON lines. stdin: {"op":"list"|"call"|"packs"|"skills"|"idle", ...}; stdout: replies and registry events.
import * as readline from 'node:readline';
import { createKernel, FixedAnswerPrompter } from '../../../dist/kernel/index.js';

const [root, dataDir, packsDir, skillsDir] = process.argv.slice(2);
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

const kernel = createKernel({ root, dataDir, prompter: new FixedAnswerPrompter('allow-once'), rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 } });
kernel.registry.onChange((change) => out({ event: change.kind, pack: change.pack, tools: change.tools }));
await kernel.loadPacks([{ dir: packsDir, source: 'extra' }]);
if (skillsDir) await kernel.loadSkills([{ dir: skillsDir, source: 'extra' }]);
await kernel.watch();
out({ ready: true });

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', async (line) => {
  const msg = JSON.parse(line);
  if (msg.op === 'list') out({ re: msg.id, tools: kernel.registry.list().map((t) => t.spec.name) });
  else if (msg.op === 'skills') out({ re: msg.id, skills: kernel.skills.list().map(({ skill: _skill, ...rest }) => rest) });
  else if (msg.op === 'packs') out({ re: msg.id, packs: kernel.packs.list().map(({ manifest: _manifest, ...rest }) => rest) });
  else if (msg.op === 'idle') {
    // Pending reloads (debounce timers and running loads) have run.
    await kernel.packs.idle();
    out({ re: msg.id });
  } else if (msg.op === 'call') out({ re: msg.id, result: await kernel.invoke({ tool: msg.tool, args: msg.args ?? {}, caller: { kind: 'host' } }) });
});
rl.on('close', async () => {
  await kernel.shutdown();
  process.exit(0);
});
