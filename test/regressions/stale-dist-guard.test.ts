/** The guard e2e tests call before running the compiled kernel (test/helpers/dist.ts). */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { staleBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';

describe('the stale dist/ guard', () => {
  let root: string;
  const put = (rel: string, ageSeconds: number) => {
    const file = path.join(root, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, '');
    const t = new Date(Date.parse('2030-01-01T00:00:00Z') - ageSeconds * 1000);
    fs.utimesSync(file, t, t);
  };

  beforeEach(() => {
    root = tempDir('memo-stale-');
    put('kernel/a.ts', 100);
    put('dist/kernel/a.js', 50);
    put('plugins/p/index.ts', 100);
    put('plugins/p/plugin.json', 100);
    put('dist/plugins/p/index.js', 50);
    put('dist/plugins/p/plugin.json', 50);
    put('skills/s/SKILL.md', 100);
    put('dist/skills/s/SKILL.md', 50);
  });

  it('passes when every source is older than its build output', () => {
    expect(staleBuild(root)).toBeNull();
  });

  it('names the newest source edited after the build', () => {
    put('kernel/a.ts', 10);
    put('plugins/p/plugin.json', 20);
    expect(staleBuild(root)).toBe(`dist/ is older than ${path.join('kernel', 'a.ts')}: run npm run build`);
  });

  it('names a source that was never built, and a copied asset or skill as well as code', () => {
    put('kernel/new.ts', 100);
    expect(staleBuild(root)).toBe(`dist/ has no ${path.join('dist', 'kernel', 'new.js')} for ${path.join('kernel', 'new.ts')}: run npm run build`);
    fs.rmSync(path.join(root, 'kernel', 'new.ts'));
    put('skills/s/SKILL.md', 1);
    expect(staleBuild(root)).toBe(`dist/ is older than ${path.join('skills', 's', 'SKILL.md')}: run npm run build`);
  });
});
