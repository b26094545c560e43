/**
 * docs/tutorials/admin-first-day.md run as a reader would: `memo serve` in a fresh folder, then the
 * page's plugins, settings, permissions, approvals, audit and doctor commands against it, an MCP
 * client over stdio asking for a write that `memo approvals answer` allows.
 *
 * One command is rewritten: the first `memo approvals list` waits until the client's request is in
 * the inbox (the client's background step is awaited only up to its MCP initialize answer; a reader
 * who lists too early simply lists again).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { auditCalls, Tutorial } from '../helpers/tutorial.js';

beforeAll(requireFreshBuild);

const WAIT_FOR_REQUEST = `for i in $(seq 150); do memo approvals list --json | grep -q '"write_file"' && break; sleep 0.2; done; memo approvals list`;

describe('docs/tutorials/admin-first-day.md', () => {
  it('runs as written: packs disabled and configured, permissions stored, an MCP request answered, the trail verified', async () => {
    let answered = false;
    const tutorial = new Tutorial('docs/tutorials/admin-first-day.md', {
      rewrite: (command) => {
        if (command !== 'memo approvals list' || answered) return command;
        answered = true;
        return WAIT_FOR_REQUEST;
      },
    });
    try {
      await tutorial.run();
      expect(tutorial.rewritten).toEqual([{ from: 'memo approvals list', to: WAIT_FOR_REQUEST }]);
      expect(tutorial.noRun).toEqual([]);
      const data = path.join(tutorial.home, 'memo-work', 'data');

      // The disabled pack's tool was refused, then the pack came back with the setting changed.
      const refused = tutorial.steps.find((s) => s.block.text.includes('memo tools call web_search'))!;
      expect(refused.exitCode).toBe(1);
      const packs = JSON.parse(fs.readFileSync(path.join(data, 'packs.json'), 'utf8'));
      expect(packs.packs['web-search']).toEqual({ enabled: true, config: { timeoutMs: 5000 } });

      // The deny stays; the allow was revoked.
      const permissions = fs.readFileSync(path.join(data, 'permissions.json'), 'utf8');
      expect(permissions).toContain('delete_file');
      expect(permissions).not.toContain('create_calendar_event');

      // The client's write ran once a person allowed it, and the trail says who asked and who answered.
      expect(fs.readFileSync(path.join(tutorial.home, 'memo-work', 'notes.txt'), 'utf8')).toBe('Written by my-editor\n');
      const trail = auditCalls(data);
      const write = trail.find((e) => e.tool === 'write_file');
      expect(write).toMatchObject({ caller: { kind: 'mcp', id: 'my-editor' }, decision: 'allow:once', answeredBy: 'cli', outcome: 'ok' });
      expect(trail.find((e) => e.tool === 'web_search')).toMatchObject({ outcome: 'error', error: { code: 'TOOL_DISABLED' } });
    } finally {
      await tutorial.stop();
    }
  });
});
