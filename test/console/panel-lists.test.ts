/**
 * A panel list's call and rows (plugins/console/panel-lists.ts): the arguments a list's read tool
 * gets from the page (declared fields and dates only, typed by the tool's schema, the fixed ones
 * winning), the rows sent to the page (only the keys its columns and actions name), and a row
 * action's arguments from its row.
 */
import type { PanelList } from '../../kernel/packs/console-panels.js';
import { listArgs, listRows, MAX_LIST_ROWS, rowActionArgs } from '../../plugins/console/panel-lists.js';

const list: PanelList = {
  id: 'search',
  title: 'Search',
  tool: 'vault_search_notes',
  fields: ['query', 'limit'],
  dates: { from: 0 },
  args: { limit: 50, file_types: ['markdown'] },
  rows: 'results',
  columns: [
    { key: 'title', label: 'Note', item: 'note', itemId: 'id' },
    { key: 'last.at', label: 'When' },
  ],
  rowActions: [{ id: 'open', label: 'Open', tool: 'vault_read_note', from: { note: 'path' }, args: { raw: true } }],
};
const spec = { parameters: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer' }, from: { type: 'string' } } } };

describe('panel list calls', () => {
  it('takes the declared fields typed by the schema and the declared dates; the fixed arguments win', () => {
    expect(listArgs(list, spec, { fields: { query: 'kubernetes', limit: '7' }, dates: { from: '2026-12-07' } })).toEqual({
      args: { query: 'kubernetes', limit: 50, from: '2026-12-07', file_types: ['markdown'] },
    });
    expect(listArgs(list, spec, { fields: { query: '' } })).toEqual({ args: { limit: 50, file_types: ['markdown'] } });
  });

  it('refuses a field or date the list does not declare, a bad number and a bad date, saying which', () => {
    expect(listArgs(list, spec, { fields: { folder: '/' } })).toEqual({ problem: 'This list takes no "folder".' });
    expect(listArgs(list, spec, { fields: { limit: '2.5' } })).toEqual({ problem: '"limit" must be a whole number.' });
    expect(listArgs(list, spec, { dates: { to: '2026-12-07' } })).toEqual({ problem: 'This list takes no date "to".' });
    expect(listArgs(list, spec, { dates: { from: 'tomorrow' } })).toEqual({ problem: '"from" must be a date (YYYY-MM-DD).' });
    expect(listArgs(list, spec, { fields: [] })).toEqual({ problem: 'Send {"fields": {...}, "dates": {...}}.' });
  });

  it('sends the rows with only the keys its columns and actions name, at most MAX_LIST_ROWS, counting the rest', () => {
    const results = Array.from({ length: MAX_LIST_ROWS + 3 }, (_, i) => ({
      id: `n${i}`,
      title: `Note ${i}`,
      path: `n${i}.md`,
      body: 'secret body text',
      last: { at: '2026-12-07T10:00:00Z', by: 'x' },
    }));
    const rows = listRows(list, { results });
    expect([rows?.total, rows?.rows.length, rows?.rows[0]]).toEqual([
      MAX_LIST_ROWS + 3,
      MAX_LIST_ROWS,
      { title: 'Note 0', id: 'n0', 'last.at': '2026-12-07T10:00:00Z', path: 'n0.md' },
    ]);
    expect(listRows(list, { results: 'not a list' })).toBeNull();
  });

  it("builds a row action's arguments from its row under the fixed ones, and refuses a row without the key", () => {
    const open = list.rowActions![0]!;
    expect(rowActionArgs(open, { path: 'ops/k8s.md', title: 'K8s' })).toEqual({ args: { note: 'ops/k8s.md', raw: true } });
    expect(rowActionArgs(open, { title: 'K8s' })).toEqual({ problem: 'The row has no "path" for Open.' });
    expect(rowActionArgs(open, { path: { nested: 1 } })).toEqual({ problem: 'The row\'s "path" must be text, a number or true/false.' });
    expect(rowActionArgs(open, null)).toEqual({ problem: 'Send {"row": {...}}: the row the action is for.' });
  });
});
