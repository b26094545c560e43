import { ALLOWLIST, EXCLUDED, refusal } from '../../../plugins/vault/bridge.js';
import { error, value, vaultKernel, type VaultFixture } from './helpers.js';

/** The seed's excluded operations and a name of each excluded domain (account, auth, providers, updater, telemetry, OS hand-offs, secrets, Google). */
const REFUSED = [
  ...Object.keys(EXCLUDED),
  'account.signIn',
  'auth.getToken',
  'providers.connect',
  'provider.refresh',
  'updater.checkForUpdates',
  'telemetry.track',
  'feedback.send',
  'diagnostics.report',
  'shell.openExternal',
  'notes.reveal',
  'secrets.set',
  'google.listCalendars',
  'calendar.listSources',
];

describe('vault desktop bridge core', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({ files: { 'A.md': 'Notes #work\n' } });
  });
  afterEach(async () => fx.close());

  const bridge = (through: 'read' | 'write', operation: string, args: unknown[] = []) => fx.call(`vault_desktop_${through}`, { operation, args });

  it.each(REFUSED.flatMap((name) => [[name, 'read'] as const, [name, 'write'] as const]))(
    'refuses %s through vault_desktop_%s as excluded, saying why, before anyone is asked',
    async (name, through) => {
      const e = error(await bridge(through, name, [{}]));
      expect(e).toMatchObject({ code: 'PERMISSION_DENIED', details: { operation: name, rule: 'bridge-excluded' } });
      expect(e.message).toContain('is not available through the desktop bridge: ');
      expect(fx.prompter.asked).toHaveLength(0);
    },
  );

  it('says why each whole-scene canvas operation is excluded and what to use instead', async () => {
    expect(error(await bridge('read', 'canvas.get')).message).toContain('use vault_read_canvas or vault_read_canvas_elements');
    expect(error(await bridge('write', 'canvas.update')).message).toContain('use the canvas item and drawing tools');
  });

  it('refuses an unknown name as VALIDATION bridge-unknown, listing the operations of the tool it came through', async () => {
    const r = error(await bridge('read', 'notes.frobnicate'));
    expect(r).toMatchObject({ code: 'VALIDATION', details: { operation: 'notes.frobnicate', rule: 'bridge-unknown' } });
    expect(r.message).toMatch(
      /"notes\.frobnicate" is not available through the desktop bridge: it is not an operation of the desktop bridge\. Operations: .*tags\.listCategories/,
    );
    expect(r.message).not.toContain('tags.createCategory');
    const w = error(await bridge('write', 'tags.frobnicate'));
    expect(w).toMatchObject({ code: 'VALIDATION', details: { rule: 'bridge-unknown' } });
    expect(w.message).toContain('tags.createCategory');
    expect(w.message).not.toContain('tags.listCategories');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('refuses a write operation through vault_desktop_read and a read operation through vault_desktop_write', async () => {
    expect(error(await bridge('read', 'tags.createCategory', [{ name: 'Work' }]))).toMatchObject({
      code: 'VALIDATION',
      message: 'tags.createCategory changes the vault: call it through vault_desktop_write.',
      details: { effect: 'write' },
    });
    expect(error(await bridge('read', 'tags.deleteCategory', [{ id: 1 }])).details).toMatchObject({ effect: 'delete' });
    expect(error(await bridge('write', 'tags.listCategories'))).toMatchObject({
      code: 'VALIDATION',
      message: 'tags.listCategories only reads: call it through vault_desktop_read.',
    });
    expect(fx.prompter.asked).toHaveLength(0);
    expect(value(await bridge('read', 'tags.listCategories')).categories).toEqual([]);
  });

  it('asks for a delete every time, even after a standing approval of vault_desktop_write', async () => {
    fx.prompter.answer('allow-forever');
    const first = value(await bridge('write', 'tags.createCategory', [{ name: 'One' }])).category.id as number;
    const second = value(await bridge('write', 'tags.createCategory', [{ name: 'Two' }])).category.id as number;
    // The standing approval covers the second write.
    expect(fx.prompter.asked).toHaveLength(1);
    value(await bridge('write', 'tags.deleteCategory', [{ id: first }]));
    value(await bridge('write', 'tags.deleteCategory', [{ id: second }]));
    const deletes = fx.prompter.asked.slice(1);
    expect(deletes).toHaveLength(2);
    for (const q of deletes)
      expect(q).toMatchObject({
        tool: 'vault_desktop_write',
        standingApprovalAllowed: false,
        concern: { verdict: 'ask', rule: 'bridge-delete' },
        preview: { kind: 'delete' },
      });
    expect(value(await bridge('read', 'tags.listCategories')).categories).toEqual([]);
  });

  it('asks every time for a template applied to a note, as for any edit of a note body, even after a standing approval', async () => {
    fx.put('Templates/Standup.md', '## Done\n\n## Next\n');
    fx.put('Today.md', '# Today\n');
    value(await fx.call('vault_reindex', {}));
    fx.prompter.answer('allow-forever');
    value(await bridge('write', 'tags.createCategory', [{ name: 'One' }]));
    fx.prompter.asked.length = 0;
    for (let i = 0; i < 2; i++) value(await bridge('write', 'notes.applyTemplate', [{ noteId: 'Today', template: 'Standup' }]));
    expect(fx.prompter.asked).toHaveLength(2);
    for (const q of fx.prompter.asked)
      expect(q).toMatchObject({ standingApprovalAllowed: false, concern: { verdict: 'ask', rule: 'bridge-note-edit' }, preview: { kind: 'diff' } });
    expect(fx.read('Today.md').match(/## Next/g)).toHaveLength(2);
  });

  it('answers TOOL_DISABLED naming the feature for the tools of a switched-off surface, and restores them when it is switched on', async () => {
    const calls: Array<[string, Record<string, unknown>, string]> = [
      ['vault_list_tasks', {}, 'tasks'],
      ['vault_create_task', { title: 'T' }, 'tasks'],
      ['vault_list_journal_entries', {}, 'journal'],
      ['vault_create_journal_entry', { date: '2026-11-30' }, 'journal'],
      ['vault_list_inbox_items', {}, 'inbox'],
      ['vault_add_to_inbox', { title: 'I' }, 'inbox'],
    ];
    value(await bridge('write', 'settings.setFeaturesSettings', [{ tasks: false, journal: false, inbox: false }]));
    fx.prompter.asked.length = 0;
    for (const [tool, args, feature] of calls) {
      const e = error(await fx.call(tool, args));
      expect([tool, e.code, e.details?.feature]).toEqual([tool, 'TOOL_DISABLED', feature]);
      expect(e.message).toContain('switched off');
    }
    expect(fx.prompter.asked).toHaveLength(0);
    // The switches themselves stay reachable: they are how a surface comes back.
    value(await bridge('write', 'settings.setFeaturesSettings', [{ tasks: true, journal: true, inbox: true }]));
    for (const [tool, args] of calls) expect([tool, (await fx.call(tool, args)).ok]).toEqual([tool, true]);
  });

  it("answers an operation's own failure as success false with the error, while the call itself succeeds", async () => {
    const r = await bridge('read', 'templates.get', ['Nope']);
    expect(r.ok).toBe(true);
    expect(value(r)).toMatchObject({ success: false, code: 'NOT_FOUND', operation: 'templates.get', error: expect.stringContaining('No template "Nope"') });
  });

  it('answers arguments a write operation cannot take with success false and its usage, in the seed’s shape, without asking anyone', async () => {
    const r = value(await bridge('write', 'tags.createCategory', []));
    expect(r).toEqual({
      success: false,
      code: 'VALIDATION',
      operation: 'tags.createCategory',
      error: 'args[0] must be an object. (args [{name}] -> {category: {id, name, sort_order, tag_count}})',
      summary: 'tags.createCategory failed: args[0] must be an object. (args [{name}] -> {category: {id, name, sort_order, tag_count}})',
    });
    expect(fx.prompter.asked).toHaveLength(0);
    // Recorded as a call the tool answered itself: nobody asked, nothing run.
    expect(fx.kernel.audit.tail({ limit: 1 })[0]).toMatchObject({ tool: 'vault_desktop_write', outcome: 'ok', decision: 'answered' });
  });

  it('implements every allowlisted operation', () => {
    expect(ALLOWLIST.filter((name) => refusal(name) !== null)).toEqual([]);
  });
});
