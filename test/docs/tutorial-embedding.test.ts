/**
 * docs/tutorials/embedding.md run as a reader would: a folder for the app, memo-kernel and TypeScript
 * in it, the page's tsconfig.json and src/*.ts compiled with `npx tsc` and run with node against a
 * loopback model server that replays OpenAI's chat-completions wire format.
 *
 * What cannot run here is rewritten (recorded, and stated below): `npm pack` happens in the reader's
 * Memo checkout (skipped: this checkout's dist/ is the build), and the two installs would need the
 * registry, so node_modules/memo-kernel links to this checkout and typescript and @types/node to its
 * own. scripts/check-package.mjs compiles and runs the same src/ files against the real tarball.
 */
import * as fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { chatCompletionsServer } from '../helpers/chat-completions.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { Tutorial } from '../helpers/tutorial.js';

beforeAll(requireFreshBuild);

const ROOT = path.resolve('.');

/** Answers a request with a read_file call, and one that ends in the tool's result with what it read. */
function modelServer() {
  return chatCompletionsServer((json, answer) => {
    const last = json.messages.at(-1);
    if (last.role === 'tool') answer.reply({ role: 'assistant', content: `The file says: ${JSON.parse(last.content).content.trim()}` });
    else answer.calls([['read_file', { path: 'hello.txt' }]]);
  });
}

const LINK_KERNEL = `mkdir -p node_modules && ln -s ${ROOT} node_modules/memo-kernel`;
const LINK_TYPESCRIPT = [
  'mkdir -p node_modules/@types node_modules/.bin',
  `ln -s ${ROOT}/node_modules/typescript node_modules/typescript`,
  `ln -s ${ROOT}/node_modules/@types/node node_modules/@types/node`,
  'ln -s ../typescript/bin/tsc node_modules/.bin/tsc',
].join(' && ');

function rewrite(command: string): string | null {
  if (command === 'npm pack') return null;
  if (/^npm install \S+\/memo-kernel-0\.1\.0\.tgz$/.test(command)) return LINK_KERNEL;
  if (command === 'npm install --save-dev typescript @types/node') return LINK_TYPESCRIPT;
  return command;
}

describe('docs/tutorials/embedding.md', () => {
  it('runs as written: a replaced audit sink, an approval answered in code, a write, an agent turn, one shutdown', async () => {
    const { server, requests } = modelServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      // llama3's 8K window: the turn's tool definitions are narrowed to what fits a quarter of it.
      const tutorial = await new Tutorial('docs/tutorials/embedding.md', { env: { MODEL_URL: url, MODEL: 'llama3' }, rewrite }).run();

      // Only the reader's pack and installs were replaced, each with its local equivalent.
      expect(tutorial.rewritten).toEqual([
        { from: 'npm pack', to: null },
        { from: 'npm install ~/memo/memo-kernel-0.1.0.tgz', to: LINK_KERNEL },
        { from: 'npm install --save-dev typescript @types/node', to: LINK_TYPESCRIPT },
      ]);
      expect(tutorial.noRun).toEqual([]);
      const app = path.join(tutorial.home, 'my-app');
      expect(tutorial.folder).toBe(app);

      // The write went through the gate, asked, and was allowed by the host's code.
      expect(fs.readFileSync(path.join(app, 'hello.txt'), 'utf8')).toBe('Hello, Ada!\n');
      const run = tutorial.steps.find((s) => s.block.text.includes('node dist/host.js'))!;
      expect(run.output).toContain('allowing write_file once\n');

      // The model was sent the tools that fit its window and saw what read_file returned.
      expect(requests).toHaveLength(2);
      const sent = requests[0].tools.map((t: any) => t.function.name);
      expect(sent).toEqual(expect.arrayContaining(['find_tools', 'read_file']));
      expect(sent).not.toContain('configure_provider');
      const toolMessage = requests[1].messages.find((m: any) => m.role === 'tool');
      expect(JSON.parse(toolMessage.content).content).toBe('Hello, Ada!\n');

      // The host's audit sink replaced the kernel's: every call reached it, and the kernel's own trail was never made.
      const lines = fs.readFileSync(path.join(app, 'app-audit.log'), 'utf8').trim().split('\n');
      expect(lines.map((l) => l.split(' ').slice(1).join(' '))).toEqual(['host write_file allow:once ok', 'agent read_file auto ok']);
      expect(fs.existsSync(path.join(app, 'data', 'agent-audit.jsonl'))).toBe(false);
    } finally {
      server.close();
    }
  });
});
