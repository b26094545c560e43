/**
 * docs/tutorials/first-pack.md, run as a reader would: scaffold a pack, change it into a tool that
 * appends a line to a note, test, validate, load and call it, and read the audit trail. Every
 * command and file on the page runs here, and every output it shows is checked.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { auditCalls, Tutorial } from '../helpers/tutorial.js';

beforeAll(requireFreshBuild);

describe('the first-pack tutorial', () => {
  let tutorial: Tutorial;
  let project: string;

  beforeAll(async () => {
    tutorial = await new Tutorial('docs/tutorials/first-pack.md').run();
    project = path.join(tutorial.home, 'notes-project');
  }, 100_000);

  it('runs every block as written: nothing skipped, nothing rewritten', () => {
    expect(tutorial.noRun).toEqual([]);
    expect(tutorial.rewritten).toEqual([]);
    expect(tutorial.folder).toBe(project);
  });

  it('leaves the note with the two lines the approved calls added, and nothing from the denied one', () => {
    expect(fs.readFileSync(path.join(project, 'today.md'), 'utf8')).toBe('buy milk\ncall mum\n');
  });

  it('leaves one audit line per call: denied unanswered, allowed once, allowed by the stored approval', () => {
    const lines = auditCalls(path.join(project, 'data')).filter((e) => e.tool === 'my_notes_append');
    expect(lines.map((e) => [e.caller?.kind, e.pack, e.decision, e.error?.code ?? e.outcome])).toEqual([
      ['cli', 'my-notes', 'deny:unanswered', 'PERMISSION_DENIED'],
      ['cli', 'my-notes', 'allow:once', 'ok'],
      ['cli', 'my-notes', 'allow:stored-forever', 'ok'],
    ]);
    expect(lines.map((e) => e.args)).toEqual([
      { file: 'today.md', line: 'buy milk' },
      { file: 'today.md', line: 'buy milk' },
      { file: 'today.md', line: 'call mum' },
    ]);
    expect(lines[1]!.summary).toBe('added a line to today.md');
  });
});
