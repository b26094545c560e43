import * as fs from 'node:fs';
import * as path from 'node:path';
import { instanceId } from '../../../kernel/storage/instance-id.js';
import { tempDir } from '../../helpers/kernel-fixture.js';

describe('instanceId', () => {
  it('makes an id once, keeps it in the data folder, and a later start reads the same one', () => {
    const dir = tempDir();
    const first = instanceId(dir, {});
    expect(first).toMatch(/^i-[0-9a-f]{12}$/);
    expect(fs.readFileSync(path.join(dir, 'instance-id'), 'utf8').trim()).toBe(first);
    expect((fs.statSync(path.join(dir, 'instance-id')).mode & 0o777).toString(8)).toBe('600');
    expect(instanceId(dir, {})).toBe(first);
  });

  it('gives two data folders two different ids', () => {
    expect(instanceId(tempDir(), {})).not.toBe(instanceId(tempDir(), {}));
  });

  it('takes MEMO_INSTANCE_ID when it is set, and refuses one that is not a short lower-case name', () => {
    const dir = tempDir();
    expect(instanceId(dir, { MEMO_INSTANCE_ID: 'memo-a' })).toBe('memo-a');
    expect(() => instanceId(dir, { MEMO_INSTANCE_ID: 'A/../b' })).toThrow(/MEMO_INSTANCE_ID must be/);
    expect(() => instanceId(dir, { MEMO_INSTANCE_ID: 'x'.repeat(41) })).toThrow(/MEMO_INSTANCE_ID must be/);
  });

  it('keeps a given MEMO_INSTANCE_ID in the folder, so a later command without the variable is the same instance', () => {
    const dir = tempDir();
    const made = instanceId(dir, {});
    const other = tempDir();
    fs.cpSync(dir, other, { recursive: true });
    // A copied folder is named by the variable, which replaces the copied id.
    expect(instanceId(other, { MEMO_INSTANCE_ID: 'memo-2' })).toBe('memo-2');
    expect(fs.readFileSync(path.join(other, 'instance-id'), 'utf8').trim()).toBe('memo-2');
    expect(instanceId(other, {})).toBe('memo-2');
    expect(instanceId(dir, {})).toBe(made);
  });

  it('replaces a stored id that is not a valid name rather than use it', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'instance-id'), 'bad id\n');
    const id = instanceId(dir, {});
    expect(id).toMatch(/^i-[0-9a-f]{12}$/);
    expect(fs.readFileSync(path.join(dir, 'instance-id'), 'utf8').trim()).toBe(id);
  });
});
