import * as fs from 'node:fs';
import * as path from 'node:path';
import { MemoryLogger } from '../../../kernel/logger.js';
import { PackSettings } from '../../../kernel/packs/pack-settings.js';
import { tempDir } from '../../helpers/kernel-fixture.js';

describe('PackSettings on a damaged packs.json', () => {
  it('runs every pack with its defaults, warns once naming the line, and moves the file aside at the next choice', () => {
    const dir = tempDir('memo-packs-');
    const file = path.join(dir, 'packs.json');
    fs.writeFileSync(file, '{"version":1,"packs":{"shell":{"enabled":false}');
    const logger = new MemoryLogger();
    const settings = new PackSettings(file, logger);
    // A disabled pack whose choice cannot be read runs with its defaults: the file is not half-read.
    expect(settings.isEnabled('shell')).toBe(true);
    expect(settings.isEnabled('vault', false)).toBe(false);
    expect(settings.storedEnabled('shell')).toBeUndefined();
    expect(logger.lines.filter((l) => l.level === 'warn').map((l) => l.message)).toEqual([
      `${file} is not valid JSON (line 1, column 48: the text ends too early); every pack runs with its defaults until it is fixed, or until the next change moves it aside`,
    ]);
    expect(fs.readFileSync(file, 'utf8')).toContain('"enabled":false');

    settings.setEnabled('web-search', false);
    const aside = fs.readdirSync(dir).filter((f) => f.startsWith('packs.json.corrupt-'));
    expect(aside).toHaveLength(1);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ version: 1, packs: { 'web-search': { enabled: false } } });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('sees a choice another process saved, at the next question', () => {
    const file = path.join(tempDir('memo-packs-'), 'packs.json');
    const running = new PackSettings(file, new MemoryLogger());
    expect(running.isEnabled('shell')).toBe(true);
    new PackSettings(file, new MemoryLogger()).setEnabled('shell', false);
    expect(running.refresh()).toBe(true);
    expect(running.isEnabled('shell')).toBe(false);
  });
});
