/**
 * The runner the tutorial tests share (test/helpers/tutorial.ts): a page's blocks become files,
 * commands and checked output; a block nobody runs, a missing output line or a wrong exit fails.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { missingOutput, shellCommands, Tutorial, tutorialBlocks } from '../helpers/tutorial.js';
import { tempDir } from '../helpers/kernel-fixture.js';

function page(markdown: string): string {
  const file = path.join(tempDir('memo-tutorial-page-'), 'page.md');
  fs.writeFileSync(file, markdown);
  return file;
}

describe('the tutorial runner', () => {
  it('reads each fenced block with its language, [label], words and line', () => {
    const blocks = tutorialBlocks(
      ['# t', '', '```js [src/a.js]', 'x', '```', 'text', '```sh exit=1', 'false', '```', '~~~text [output]', 'y', '~~~'].join('\n'),
    );
    expect(blocks.map((b) => [b.lang, b.label, b.words, b.text, b.line])).toEqual([
      ['js', 'src/a.js', [], 'x\n', 3],
      ['sh', undefined, ['exit=1'], 'false\n', 7],
      ['text', 'output', [], 'y\n', 10],
    ]);
  });

  it('splits a shell block into commands, joining continued lines and dropping comments', () => {
    expect(shellCommands('# say\necho a \\\n  b\n\n  ls\n')).toEqual(['echo a b', 'ls']);
  });

  it('finds output lines in order and names the first one missing', () => {
    expect(missingOutput('a  b\n...\nd\n', 'x a b y\nc\nd')).toBeNull();
    expect(missingOutput('d\na b\n', 'a b\nd')).toBe('a b');
    // `...` inside a line: any text on that line, not across lines.
    expect(missingOutput('Done (pid ...) ok.\n', 'Done (pid 42) ok.')).toBeNull();
    expect(missingOutput('Done (pid ...) ok.\n', 'Done (pid 42)\nok.')).toBe('Done (pid ...) ok.');
    expect(missingOutput('a.c\n', 'abc')).toBe('a.c');
  });

  it('writes files, runs commands in the folder a cd left, and checks their output', async () => {
    const t = await new Tutorial(
      page(
        [
          '```txt [notes/hello.txt]',
          'hi there',
          '```',
          '```sh',
          'cd notes',
          '```',
          '```sh',
          'cat hello.txt && memo --help | head -3',
          '```',
          '```text [output]',
          'hi there',
          'Usage: memo',
          '```',
        ].join('\n'),
      ),
    ).run();
    expect(fs.readFileSync(path.join(t.home, 'notes', 'hello.txt'), 'utf8')).toBe('hi there\n');
    expect(t.folder).toBe(path.join(t.home, 'notes'));
  });

  it('fails on a missing output line, an unexpected exit, a block nobody runs, and a path outside its folder', async () => {
    await expect(new Tutorial(page('```sh\necho one\n```\n```text [output]\ntwo\n```\n')).run()).rejects.toThrow(
      /page.md:4: the command before printed no line with "two"/,
    );
    await expect(new Tutorial(page('```sh\nfalse\n```\n')).run()).rejects.toThrow(/page.md:1: the commands exited 1 \(expected 0\)/);
    await expect(new Tutorial(page('```sh exit=2\nexit 2\n```\n')).run()).resolves.toBeInstanceOf(Tutorial);
    await expect(new Tutorial(page('```js\nconsole.log(1)\n```\n')).run()).rejects.toThrow(/neither a file/);
    await expect(new Tutorial(page('```txt [../x.txt]\nx\n```\n')).run()).rejects.toThrow(/outside the tutorial's folder/);
  });

  it('records each rewritten command, and runs what it was rewritten to', async () => {
    const t = await new Tutorial(page('```sh\nnpm install memo-kernel\necho kept\n```\n```text [output]\nlinked\nkept\n```\n'), {
      rewrite: (c) => (c.startsWith('npm install') ? 'echo linked' : c),
    }).run();
    expect(t.rewritten).toEqual([{ from: 'npm install memo-kernel', to: 'echo linked' }]);
  });

  it('leaves a background command running once its output shows, and stops it', async () => {
    const t = await new Tutorial(
      page('```sh background\nnode -e "console.log(\'ready\'); setInterval(() => {}, 1000)"\n```\n```text [output]\nready\n```\n'),
    ).run();
    await t.stop();
    expect(t.steps.map((s) => s.output?.trim())).toEqual(['ready']);
  });
});
