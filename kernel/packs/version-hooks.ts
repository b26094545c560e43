/**
 * Module resolve hook for pack code (registered once, the first time a pack folder loads).
 *
 * 1. `memo-kernel`, `memo-kernel/pack` and `memo-kernel/mcp` imported by pack code resolve to the
 *    running kernel's own modules, wherever the pack folder lies (a folder outside this package
 *    cannot see it by name). One kernel module per process: a pack's `ProviderError` is the kernel's.
 * 2. Hot reload: ESM caches modules by URL, so a pack is imported as
 *    `index.js?memo-v=N&memo-pack=<folder>`. Each import it makes of a file *inside its own folder*
 *    carries the same query, so a changed helper file is seen too. Files outside the folder (the
 *    kernel, node_modules above it) are left alone: shared, never loaded twice.
 */
interface ResolveContext {
  parentURL?: string;
}
type NextResolve = (specifier: string, context: ResolveContext) => Promise<{ url: string; format?: string | null; shortCircuit?: boolean }>;

const KERNEL_ENTRIES: Readonly<Record<string, string>> = {
  'memo-kernel': new URL('../index.js', import.meta.url).href,
  'memo-kernel/pack': new URL('../pack.js', import.meta.url).href,
  'memo-kernel/mcp': new URL('../mcp/index.js', import.meta.url).href,
};

function packQuery(url: string): { version: string | null; folder: string } | null {
  const q = url.indexOf('?');
  if (q < 0) return null;
  const params = new URLSearchParams(url.slice(q + 1));
  const folder = params.get('memo-pack');
  return folder ? { version: params.get('memo-v'), folder } : null;
}

/** True when `url` (a file: URL, query ignored) names a file inside the folder URL `folder` (segment-wise). */
function insideFolder(url: string, folder: string): boolean {
  const bare = url.split('?')[0]!;
  const base = folder.endsWith('/') ? folder : `${folder}/`;
  return bare.startsWith(base);
}

export async function resolve(specifier: string, context: ResolveContext, next: NextResolve) {
  const parent = context.parentURL;
  const pack = parent ? packQuery(parent) : null;
  const kernel = KERNEL_ENTRIES[specifier];
  if (kernel && pack) return { url: kernel, format: 'module', shortCircuit: true };
  const result = await next(specifier, context);
  if (!pack || !result.url.startsWith('file:') || packQuery(result.url) || !insideFolder(result.url, pack.folder)) return result;
  const query = new URLSearchParams({ ...(pack.version ? { 'memo-v': pack.version } : {}), 'memo-pack': pack.folder });
  return { ...result, url: `${result.url}${result.url.includes('?') ? '&' : '?'}${query.toString()}` };
}
