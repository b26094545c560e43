/**
 * docs/tutorials/first-skill.md, run as a reader would: a SKILL.md with a command tool that runs a
 * bundled script, validated, listed, called and found on the audit trail. Every command and file on
 * the page runs here, and every output it shows is checked.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { auditCalls, Tutorial } from '../helpers/tutorial.js';

const MEMO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'bin', 'memo');

beforeAll(requireFreshBuild);

describe('the first-skill tutorial', () => {
  let tutorial: Tutorial;
  let project: string;

  beforeAll(async () => {
    tutorial = await new Tutorial('docs/tutorials/first-skill.md').run();
    project = path.join(tutorial.home, 'skills-project');
  }, 60_000);

  it('runs every block as written: nothing skipped, nothing rewritten', () => {
    expect(tutorial.noRun).toEqual([]);
    expect(tutorial.rewritten).toEqual([]);
    expect(tutorial.folder).toBe(project);
  });

  it('runs the bundled script on the file inside the root, and refuses the one outside it before asking', () => {
    const lines = auditCalls(path.join(project, 'data'));
    expect(lines.map((e) => [e.caller?.kind, e.tool, e.decision, e.error?.code ?? e.outcome])).toEqual([
      ['cli', 'read_skill', 'auto', 'ok'],
      ['cli', 'count_words', 'allow:once', 'ok'],
      ['cli', 'count_words', 'none', 'PATH_OUTSIDE_ROOT'],
    ]);
    expect(lines[1]!.args).toEqual({ file: 'essay.txt' });
  });

  it('validate refuses a command template that needs a shell, as the page says', () => {
    // The page says so in prose (`cat {file} | wc -w` is refused); this holds it to that.
    const scratch = tempDir('memo-skill-');
    const skill = path.join(scratch, 'word-count');
    fs.cpSync(path.join(project, 'data', 'skills', 'word-count'), skill, { recursive: true });
    const manifest = path.join(skill, 'SKILL.md');
    fs.writeFileSync(manifest, fs.readFileSync(manifest, 'utf8').replace('"node {script} {file}"', '"cat {file} | wc -w"'));
    let printed = '';
    try {
      execFileSync(process.execPath, [MEMO, 'skills', 'validate', skill], { cwd: scratch, encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      printed = String((err as { stdout?: string }).stdout ?? '') + String((err as { stderr?: string }).stderr ?? '');
    }
    expect(printed).toMatch(/"\|" is a shell operator, and command templates run without a shell/);
  });
});
