/**
 * Which names (argument keys, environment variables, header and option names) hold secrets.
 *
 * A name is split into words (`x-api-key`, `apiKey`, `API_KEY`, `PGPASSWORD` -> words), and is
 * sensitive when one of its words is a secret word, or ends in one (`pgpassword`, `csrftoken`), or
 * when its last word is `pass`, `pwd` or `dsn` (`DB_PASS`, `MYSQL_PWD`, `SENTRY_DSN`). Word-wise, so
 * `keyword`, `monkey` and `max_tokens` stay visible. Not secrets, whatever their words: `PWD` and
 * `OLDPWD` themselves (the working directory), and names whose last word says the value is a
 * place or a kind rather than the secret (`SSH_AUTH_SOCK`, `KEY_FILE`, `AUTH_URL`, `TOKEN_TYPE`):
 * a URL among those still has its password masked by value shape.
 */

const SECRET_WORDS = new Set([
  'key',
  'keys',
  'apikey',
  'apikeys',
  'token',
  'accesstoken',
  'refreshtoken',
  'authtoken',
  'secret',
  'secrets',
  'password',
  'passwords',
  'passwd',
  'passphrase',
  'auth',
  'authorization',
  'cookie',
  'cookies',
  'credential',
  'credentials',
  'privatekey',
  'clientsecret',
  'sessionid',
  'bearer',
  'webhook',
  'webhooks',
  'dsn',
]);

/** A single word that ends in one of these holds a secret (`pgpassword`, `githubtoken`, `appsecret`). */
const SECRET_SUFFIXES = ['password', 'passwd', 'passphrase', 'secret', 'token', 'apikey', 'accesskey', 'secretkey', 'privatekey'];

/** Secret only as the last word: `DB_PASS`, `MYSQL_PWD`, `SENTRY_DSN` (`PASS_THROUGH` is not). */
const SECRET_LAST_WORDS = new Set(['pass', 'pwd', 'dsn']);

/** A last word that says the value points at or describes the secret, not is it. */
const NOT_SECRET_LAST_WORDS = new Set([
  'sock',
  'socket',
  'path',
  'paths',
  'dir',
  'dirs',
  'file',
  'files',
  'home',
  'type',
  'types',
  'method',
  'methods',
  'mode',
  'user',
  'username',
  'name',
  'names',
  'host',
  'hosts',
  'port',
  'url',
  'uri',
  'endpoint',
  'server',
  'provider',
  'command',
  'cmd',
  'count',
  'length',
  'len',
  'limit',
  'max',
  'min',
  'size',
  'id',
  'ids',
  'enabled',
  'disabled',
  'required',
  'header',
  'field',
  'prefix',
  'env',
  'var',
  'format',
  'version',
  'ttl',
  'expiry',
  'expires',
  'timeout',
  'algorithm',
  'alg',
  'scheme',
  'region',
]);

/** Exactly these names are never secrets (compared case-insensitively). */
const NEVER_SECRET = new Set(['pwd', 'oldpwd']);

/** Splits `x-api-key`, `apiKey`, `API_KEY`, `accessToken` into lower-case words. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

const cache = new Map<string, boolean>();

/** True when a value stored under this name is a secret (argument key, env var, header, option). */
export function isSensitiveName(name: string): boolean {
  const hit = cache.get(name);
  if (hit !== undefined) return hit;
  const result = judge(name);
  if (cache.size > 5000) cache.clear();
  cache.set(name, result);
  return result;
}

function judge(name: string): boolean {
  const squashed = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (NEVER_SECRET.has(squashed)) return false;
  const words = nameWords(name);
  const last = words.at(-1);
  if (last === undefined) return false;
  if (SECRET_LAST_WORDS.has(last)) return true;
  // A single word of the secret vocabulary, whatever its separators (`api_key`, `ApiKey`, `x-api-key`).
  if (SECRET_WORDS.has(squashed)) return true;
  // A webhook URL is the secret itself (`SLACK_WEBHOOK_URL`, `DISCORD_HOOK_URL`).
  if (words.some((w) => w === 'webhook' || w === 'webhooks') || ((last === 'url' || last === 'uri') && words.some((w) => w === 'hook' || w === 'hooks')))
    return true;
  if (words.length > 1 && NOT_SECRET_LAST_WORDS.has(last)) return false;
  return words.some((w) => SECRET_WORDS.has(w) || SECRET_SUFFIXES.some((s) => w.length > s.length && w.endsWith(s)));
}
