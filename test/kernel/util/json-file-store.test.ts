import * as fs from 'node:fs';
import * as path from 'node:path';
import { MemoryLogger } from '../../../kernel/logger.js';
import { JsonFileStore } from '../../../kernel/util/json-file-store.js';
import { tempDir } from '../../helpers/kernel-fixture.js';

interface Shape {
  version: 1;
  items: Record<string, number>;
}

function store(file: string, logger = new MemoryLogger()) {
  return new JsonFileStore<Shape>({
    file,
    logger,
    empty: () => ({ version: 1, items: {} }),
    parse: (json) => {
      const items = (json as Partial<Shape> | null)?.items;
      if (!items || typeof items !== 'object' || Array.isArray(items)) throw new Error('has no "items" object');
      return { version: 1, items: items };
    },
    whileUnusable: 'no items are used',
  });
}

const warnings = (logger: MemoryLogger) => logger.lines.filter((l) => l.level === 'warn').map((l) => l.message);

describe('JsonFileStore', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = tempDir('memo-store-');
    file = path.join(dir, 'items.json');
  });

  it('holds the empty value for an absent file and writes atomically with mode 0600, leaving no temp file', () => {
    const s = store(file);
    expect(s.read()).toEqual({ version: 1, items: {} });
    s.update((v) => void (v.items.a = 1));
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ version: 1, items: { a: 1 } });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir)).toEqual(['items.json']);
  });

  it('re-reads the file when another process changed it, and bumps its version', () => {
    const s = store(file);
    s.update((v) => void (v.items.a = 1));
    const version = s.version;
    const other = store(file);
    other.update((v) => void (v.items.b = 2));
    expect(s.read().items).toEqual({ a: 1, b: 2 });
    expect(s.version).toBeGreaterThan(version);
    expect(s.reload()).toBe(false);
  });

  it('reports a file that is not JSON once, with the line and column and without its content, and holds the empty value', () => {
    fs.writeFileSync(file, '{\n  "items": {\n    "secret-sk-123": 1,\n  }\n}\n');
    const logger = new MemoryLogger();
    const s = store(file, logger);
    expect(s.read()).toEqual({ version: 1, items: {} });
    expect(s.read()).toEqual({ version: 1, items: {} });
    expect(warnings(logger)).toEqual([
      `${file} is not valid JSON (line 4, column 3: unexpected character); no items are used until it is fixed, or until the next change moves it aside`,
    ]);
    expect(s.problem).toContain('line 4, column 3');
    expect(warnings(logger).join('\n')).not.toContain('secret');
  });

  it.each([
    ['a file cut short', '{"items": {"a": 1', 'line 1, column 18: the text ends too early'],
    ['an empty file', '', 'line 1, column 1: the text ends too early'],
    ['text after the value', '{"items": {}} x', 'line 1, column 15: more text after the JSON value'],
    ['an unclosed string', '{"items": {"a', 'line 1, column 14: a string is not closed'],
  ])('locates the fault in %s', (_what, text, where) => {
    fs.writeFileSync(file, text);
    const s = store(file);
    s.read();
    expect(s.problem).toBe(`${file} is not valid JSON (${where})`);
  });

  it("reports a file of the wrong shape in the parser's words", () => {
    fs.writeFileSync(file, '{"things": []}');
    const logger = new MemoryLogger();
    const s = store(file, logger);
    expect(s.read().items).toEqual({});
    expect(s.problem).toBe(`${file} has no "items" object`);
    expect(warnings(logger)).toHaveLength(1);
  });

  it('reports a file that cannot be read, naming the error code', () => {
    fs.mkdirSync(file);
    const s = store(file);
    expect(s.read().items).toEqual({});
    expect(s.problem).toBe(`${file} cannot be read (EISDIR)`);
  });

  it('keeps an unusable file in place until the next write, then moves it aside with mode 0600 and says where', () => {
    fs.writeFileSync(file, '{"items": {"a": 1', { mode: 0o644 });
    const logger = new MemoryLogger();
    const s = store(file, logger);
    s.read();
    expect(fs.readFileSync(file, 'utf8')).toBe('{"items": {"a": 1');
    s.update((v) => void (v.items.b = 2));
    const aside = fs.readdirSync(dir).filter((f) => f.startsWith('items.json.corrupt-'));
    expect(aside).toHaveLength(1);
    const kept = path.join(dir, aside[0]!);
    expect(fs.readFileSync(kept, 'utf8')).toBe('{"items": {"a": 1');
    expect(fs.statSync(kept).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).items).toEqual({ b: 2 });
    expect(warnings(logger).at(-1)).toBe(`moved the unusable items.json aside to ${kept}`);
    expect(s.problem).toBeNull();
  });

  it('uses a file that was fixed in place, and reports a new fault in it again', () => {
    fs.writeFileSync(file, '{');
    const logger = new MemoryLogger();
    const s = store(file, logger);
    s.read();
    fs.writeFileSync(file, '{"items": {"a": 1}}');
    expect(s.read().items).toEqual({ a: 1 });
    expect(s.problem).toBeNull();
    fs.writeFileSync(file, '[1, 2');
    s.read();
    expect(warnings(logger)).toHaveLength(2);
  });

  it('never overwrites an earlier file moved aside', () => {
    const s = store(file);
    for (let i = 0; i < 3; i++) {
      fs.writeFileSync(file, `broken ${i}`);
      s.update((v) => void (v.items[`n${i}`] = i));
    }
    const aside = fs.readdirSync(dir).filter((f) => f.startsWith('items.json.corrupt-'));
    expect(aside.map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).sort()).toEqual(['broken 0', 'broken 1', 'broken 2']);
  });
});
