import { nth } from '../../helpers/nth.js';
import { error, value, vaultKernel, type VaultFixture } from './helpers.js';

/** The outgoing links of a note as `raw -> status target#heading`. */
async function linksOf(fx: VaultFixture, note: string): Promise<string[]> {
  const r = value(await fx.call('vault_read_note', { note }));
  return r.links.map((l: any) => `${l.embed ? '!' : ''}${l.target} -> ${l.status}${l.path ? ` ${l.path}` : ''}${l.heading ? ` #${l.heading}` : ''}`);
}

describe('vault wiki-link resolution', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({
      files: {
        'Meeting.md': '# Decisions\nship it\n## Risks\n',
        'Sprint #4.md': 'the sprint note\n',
        'Projects/Alpha.md': '---\ntitle: Project Alpha\naliases: [Apollo]\n---\nalpha body\n',
        'Projects/Readme.md': 'projects readme\n',
        'Archive/Readme.md': 'archive readme\n',
        'attachments/diagram.png': Buffer.from([0x89, 0x50, 0x4e, 0x47]),
        'Source.md': [
          '[[Meeting]]',
          '[[Meeting#Decisions]]',
          '[[Meeting#Decisions|the decisions]]',
          '[[Sprint #4]]',
          '[[Sprint #4#Goals]]',
          '[[Project Alpha]]',
          '[[Apollo]]',
          '[[Readme]]',
          '[[Projects/Readme]]',
          '[[Archive/Readme.md]]',
          '![[diagram.png]]',
          '[[Nowhere]]',
          '[[#Local heading]]',
          '[[meeting]]',
          '`[[In code]]` and ```',
          '```',
          '[[Fenced]]',
          '```',
          '| cell [[Meeting\\|aliased in a table]] |',
          '# Local heading',
        ].join('\n'),
      },
    });
  });
  afterEach(async () => fx.close());

  it('resolves each kind of target the way the editor follows it', async () => {
    expect(await linksOf(fx, 'Source')).toEqual([
      'Meeting -> resolved Meeting.md',
      'Meeting#Decisions -> resolved Meeting.md #Decisions',
      'Meeting#Decisions -> resolved Meeting.md #Decisions',
      'Sprint #4 -> resolved Sprint #4.md',
      'Sprint #4#Goals -> resolved Sprint #4.md #Goals',
      'Project Alpha -> resolved Projects/Alpha.md',
      'Apollo -> resolved Projects/Alpha.md',
      'Readme -> ambiguous',
      'Projects/Readme -> resolved Projects/Readme.md',
      'Archive/Readme.md -> resolved Archive/Readme.md',
      '!diagram.png -> resolved attachments/diagram.png',
      'Nowhere -> broken',
      '#Local heading -> resolved Source.md #Local heading',
      'meeting -> resolved Meeting.md',
      'Meeting -> resolved Meeting.md',
    ]);
    const r = value(await fx.call('vault_read_note', { note: 'Source' }));
    expect(r.links.find((l: any) => l.line === 19)).toMatchObject({ alias: 'aliased in a table' });
    expect(nth(r.links, 2)).toMatchObject({ alias: 'the decisions', heading: 'Decisions' });
  });

  it('returns the candidates for an ambiguous name and never guesses, also for a write', async () => {
    const read = error(await fx.call('vault_read_note', { note: 'Readme' }));
    expect(read.code).toBe('VALIDATION');
    expect(read.message).toMatch(/matches 2 notes: Archive\/Readme\.md .*Projects\/Readme\.md/);
    expect(read.details.candidates.map((c: any) => c.path)).toEqual(['Archive/Readme.md', 'Projects/Readme.md']);
    const write = error(await fx.call('vault_update_note', { note: 'Readme', append: 'x' }));
    expect(write.code).toBe('VALIDATION');
    expect(fx.prompter.asked).toHaveLength(0);
    expect(fx.read('Projects/Readme.md')).toBe('projects readme\n');
  });

  it('reads the section under a heading given with the note', async () => {
    const r = value(await fx.call('vault_read_note', { note: 'Meeting#Decisions' }));
    expect(r).toMatchObject({ path: 'Meeting.md', heading: 'Decisions', section: '# Decisions\nship it\n## Risks' });
    expect(value(await fx.call('vault_read_note', { note: 'Sprint #4' }))).toMatchObject({ path: 'Sprint #4.md', content: 'the sprint note\n' });
  });

  it('writes the path into rewritten links when the new name is one other notes already have', async () => {
    const r = value(await fx.call('vault_rename_note', { note: 'Meeting', new_title: 'Readme' }));
    expect(r).toMatchObject({ path: 'Readme.md', links_rewritten: 5 });
    const lines = fx.read('Source.md').split('\n');
    expect([lines[0], lines[1], lines[2], lines[13], lines[18]]).toEqual([
      '[[/Readme]]',
      '[[/Readme#Decisions]]',
      '[[/Readme#Decisions|the decisions]]',
      '[[/Readme]]',
      '| cell [[/Readme\\|aliased in a table]] |',
    ]);
    const links = await linksOf(fx, 'Source');
    expect(links.filter((l) => l.includes('Readme.md #Decisions') || l.endsWith('-> resolved Readme.md'))).toHaveLength(5);
    // The bare name is still ambiguous, and says so.
    expect(links).toContain('Readme -> ambiguous');
  });

  it('lists backlinks, and a link re-resolves when its target appears, is renamed or goes', async () => {
    const backlinks = value(await fx.call('vault_read_note', { note: 'Meeting' })).backlinks;
    expect(backlinks.map((b: any) => `${b.path}:${b.line}`)).toEqual(['Source.md:1', 'Source.md:2', 'Source.md:3', 'Source.md:14', 'Source.md:19']);

    value(await fx.call('vault_create_note', { title: 'Nowhere', content: 'now it exists' }));
    expect(await linksOf(fx, 'Source')).toContain('Nowhere -> resolved Nowhere.md');

    value(await fx.call('vault_rename_note', { note: 'Archive/Readme.md', new_title: 'Old readme' }));
    expect(await linksOf(fx, 'Source')).toContain('Readme -> resolved Projects/Readme.md');
    // The path-qualified link followed the rename.
    expect(fx.read('Source.md').split('\n')[9]).toBe('[[Archive/Old readme.md]]');

    value(await fx.call('vault_delete_note', { note: 'Projects/Alpha.md' }));
    const after = await linksOf(fx, 'Source');
    expect(after).toContain('Project Alpha -> broken');
    expect(after).toContain('Apollo -> broken');
  });
});
