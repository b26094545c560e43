/**
 * What a settings field or a panel argument is called on the console's pages (plugins/console/ui/labels.js):
 * the schema's `title` when there is one, else the key in words, with acronyms in capitals and a unit in
 * brackets, so an administrator reads "Timeout (ms)" where the schema says `timeoutMs`.
 */
// A browser module: no types.
const UI_LABELS = '../../plugins/console/ui/labels.js';
const { humanise, fieldLabel } = (await import(UI_LABELS)) as {
  humanise: (key: string) => string;
  fieldLabel: (key: string, prop?: unknown) => string;
};

describe('field labels from schema keys', () => {
  it.each([
    ['timeoutMs', 'Timeout (ms)'],
    ['apiKeyEnv', 'API key env'],
    ['maxResults', 'Max results'],
    ['ownerLeaseSeconds', 'Owner lease (s)'],
    ['maxBodyBytes', 'Max body (bytes)'],
    ['cacheMb', 'Cache (MB)'],
    ['fetch_private_addresses', 'Fetch private addresses'],
    ['journal-folder', 'Journal folder'],
    ['baseUrl', 'Base URL'],
    ['maxHTTPRetries', 'Max HTTP retries'],
    ['userIds', 'User IDs'],
    ['id', 'ID'],
    ['name', 'Name'],
    ['retries', 'Retries'],
  ])('reads %s as "%s"', (key, label) => {
    expect(humanise(key)).toBe(label);
  });

  it('keeps a key that is only a unit as a word, not an empty label with a unit', () => {
    expect(humanise('ms')).toBe('Ms');
    expect(humanise('bytes')).toBe('Bytes');
  });

  it("takes the schema's title when it has one, and the key in words when it has none or an empty one", () => {
    expect(fieldLabel('timeoutMs', { type: 'integer', title: 'Request timeout (ms)' })).toBe('Request timeout (ms)');
    expect(fieldLabel('timeoutMs', { type: 'integer', title: '  ' })).toBe('Timeout (ms)');
    expect(fieldLabel('apiKeyEnv', { type: 'string' })).toBe('API key env');
    expect(fieldLabel('apiKeyEnv', undefined)).toBe('API key env');
  });
});
