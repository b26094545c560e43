/**
 * Module resolve hook for hot reload. ESM caches modules by URL, so a reloaded pack is imported
 * as `index.js?memo-v=N`. Its own relative imports (`./helpers.js`) must be fresh too, or a change
 * in a helper file would never be seen: this hook carries the version query from a versioned
 * parent to each relative import it makes. Bare and `node:` imports are left alone (shared).
 */
interface ResolveContext {
  parentURL?: string;
}
type NextResolve = (specifier: string, context: ResolveContext) => Promise<{ url: string; format?: string | null; shortCircuit?: boolean }>;

const VERSION = /[?&]memo-v=(\d+)/;

export async function resolve(specifier: string, context: ResolveContext, next: NextResolve) {
  const result = await next(specifier, context);
  const parent = context.parentURL;
  if (!parent || !(specifier.startsWith('./') || specifier.startsWith('../'))) return result;
  const m = VERSION.exec(parent);
  if (!m || !result.url.startsWith('file:') || VERSION.test(result.url)) return result;
  return { ...result, url: `${result.url}${result.url.includes('?') ? '&' : '?'}memo-v=${m[1]}` };
}
