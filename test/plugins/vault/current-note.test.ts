import { error, value, vaultKernel, type VaultFixture } from './helpers.js';

describe('vault_get_current_note', () => {
  let fx: VaultFixture;
  beforeAll(async () => {
    fx = await vaultKernel({ files: { 'Daily/Today.md': '# Today\nopen in the editor\n', 'Other.md': 'links to [[Today]]\n', 'scan.pdf': '%PDF' } });
  });
  afterAll(async () => fx.close());

  it('is null while the host says no note is open', async () => {
    expect(value(await fx.call('vault_get_current_note', {}))).toMatchObject({ note: null });
  });

  it('returns the note the host says is open, by path or by id, with content and backlinks', async () => {
    fx.kernel.hostContext.set('currentNote', 'Daily/Today.md');
    const byPath = value(await fx.call('vault_get_current_note', {})).note;
    expect(byPath).toMatchObject({
      path: 'Daily/Today.md',
      title: 'Today',
      content: '# Today\nopen in the editor\n',
      backlinks: [{ path: 'Other.md', line: 1 }],
    });
    fx.kernel.hostContext.set('currentNote', { id: byPath.id });
    expect(value(await fx.call('vault_get_current_note', {})).note.path).toBe('Daily/Today.md');
  });

  it('gives an external MCP client without a running turn null rather than the host window’s note', async () => {
    fx.kernel.hostContext.set('currentNote', 'Daily/Today.md');
    const r = await fx.kernel.invoke({ tool: 'vault_get_current_note', args: {}, caller: { kind: 'mcp', id: 'inspector' } });
    expect(r.ok && r.value).toMatchObject({ note: null });
  });

  it('refuses a filed file the host has open, naming its type', async () => {
    fx.kernel.hostContext.set('currentNote', { path: 'scan.pdf' });
    expect(error(await fx.call('vault_get_current_note', {}))).toMatchObject({ code: 'VALIDATION', message: expect.stringMatching(/pdf/) });
    fx.kernel.hostContext.set('currentNote', undefined);
  });
});
