import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeKernel, tempDir } from '../helpers/kernel-fixture.js';

// `memo plugins new my-notes` then `memo --packs . tools list` (the scaffold's own advice) put the
// data folder ./data among the packs: every later command warned "pack data ... was skipped: has
// no plugin.json", and memo serve's watcher reported it again on every audit line.
describe('regression: the data folder inside a pack folder', () => {
  it('is not loaded or reported as a pack, while a real subfolder without plugin.json still is', async () => {
    const folder = tempDir('memo-packs-');
    fs.mkdirSync(path.join(folder, 'half-made'));
    const dataDir = path.join(folder, 'data');
    const first = makeKernel({ root: folder, dataDir });
    await first.kernel.invoke({ tool: 'echo', args: { text: 'x' }, caller: { kind: 'host' } });
    await first.close();
    expect(fs.existsSync(path.join(dataDir, 'audit.key')) || fs.existsSync(path.join(dataDir, 'agent-audit.jsonl'))).toBe(true);

    const fx = makeKernel({ root: folder, dataDir });
    try {
      const states = await fx.kernel.loadPacks([{ dir: folder, source: 'extra' }]);
      expect(states.map((s) => [s.id, s.status])).toEqual([['half-made', 'failed']]);
      expect(fx.logger.lines.filter((l) => l.message.includes('data'))).toEqual([]);
    } finally {
      await fx.close();
    }
  });
});
