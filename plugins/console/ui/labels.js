// What a settings field or an argument is called on the page: its JSON Schema `title` when it has
// one, else its key in words ("timeoutMs" -> "Timeout (ms)", "apiKeyEnv" -> "API key env").

/** Words written in capitals wherever they appear in a key (a plural too: "ids" -> "IDs"). */
const ACRONYMS = new Set([
  'ai',
  'api',
  'cli',
  'cpu',
  'css',
  'db',
  'dns',
  'html',
  'http',
  'https',
  'id',
  'ip',
  'json',
  'mcp',
  'qr',
  'sql',
  'ssh',
  'smtp',
  'ssl',
  'tls',
  'ui',
  'uri',
  'url',
  'uuid',
]);

/** A last word that is a unit: shown in brackets after the rest ("timeoutMs" -> "Timeout (ms)"). */
const UNITS = { ms: 'ms', millis: 'ms', seconds: 's', secs: 's', bytes: 'bytes', kb: 'KB', mb: 'MB', gb: 'GB' };

/** A key's words: camelCase, snake_case, kebab-case and spaces split ("maxHTTPRetries" -> max, HTTP, Retries). */
function words(key) {
  return String(key)
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[\s_.-]+/)
    .filter(Boolean);
}

/** A key in words, sentence case, acronyms in capitals and a unit in brackets: "apiKeyEnv" -> "API key env". */
export function humanise(key) {
  const parts = words(key).map((w) => w.toLowerCase());
  if (parts.length === 0) return String(key);
  const last = parts[parts.length - 1];
  const unit = parts.length > 1 && Object.hasOwn(UNITS, last) ? UNITS[last] : null;
  if (unit) parts.pop();
  const word = (w, i) => {
    if (ACRONYMS.has(w)) return w.toUpperCase();
    if (w.endsWith('s') && ACRONYMS.has(w.slice(0, -1))) return `${w.slice(0, -1).toUpperCase()}s`;
    return i === 0 ? w[0].toUpperCase() + w.slice(1) : w;
  };
  const text = parts.map(word).join(' ');
  return unit ? `${text} (${unit})` : text;
}

/** The label of a schema property: its `title`, else its key in words. */
export function fieldLabel(key, prop) {
  const title = typeof prop?.title === 'string' ? prop.title.trim() : '';
  return title || humanise(key);
}
