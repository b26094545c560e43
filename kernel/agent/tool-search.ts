/**
 * Tool search: which of the enabled tools fit a request in a person's words. One lexical index
 * (MiniSearch's BM25+) over each tool's name (split at `_`), description, pack, argument names and
 * descriptions, and the `keywords` and `examples` its pack declares; rebuilt when packs change. The
 * agent's per-turn tool set, the `find_tools` tool and `memo tools search` all rank with it, so an
 * author sees exactly what the agent would be offered.
 */
import MiniSearch from 'minisearch';
import { inject, injectable } from '../di.js';
import type { Disposable } from '../disposable.js';
import type { JsonSchema } from '../tools/contract.js';
import { ToolRegistry, type RegisteredTool } from '../tools/tool-registry.js';

export interface ToolHit {
  name: string;
  pack: string;
  /** BM25+ score, higher is better; comparable only within one search. */
  score: number;
}

interface ToolDocument {
  id: string;
  name: string;
  pack: string;
  description: string;
  keywords: string;
  examples: string;
  args: string;
}

/** Words that say nothing about which tool fits ("what is on my calendar" is about the calendar). */
const STOP_WORDS = new Set(
  (
    'a an and are as at be by can could do does for from has have how i if in into is it its me my of on or our please ' +
    'so than that the their them then there these this to up us was we what when where which who will with would you your'
  ).split(' '),
);

/**
 * What a request names without saying it: a file name or path ("what does hello.txt say") is about
 * files, a URL about the web. Their words are added to the query, so the file tools rank for a
 * request that never says "file".
 */
function expand(query: string): string {
  const extra: string[] = [];
  if (/https?:\/\/|\bwww\./i.test(query)) extra.push('web page url');
  else if (/(?:^|\s)(?:[~.]?\/)?[\w.-]+(?:\/[\w.-]+)*\.[a-z0-9]{1,6}(?=$|[\s?!,;:)'"])/i.test(query) || /(?:^|\s)[~.]?\/[\w.-]+/.test(query))
    extra.push('file');
  return extra.length ? `${query} ${extra.join(' ')}` : query;
}

/**
 * Lower case, then a light English stemmer (plurals and -ing/-ed/-es endings), so "meetings" finds
 * "meeting" and "renamed" finds "rename". Applied alike to the index and the query.
 */
function stem(word: string): string {
  if (word.length <= 3) return word;
  if (word.endsWith('ies') && word.length > 4) return `${word.slice(0, -3)}y`;
  if (word.endsWith('sses')) return word.slice(0, -2);
  if (word.endsWith('ing') && word.length > 5) return word.slice(0, -3);
  if (word.endsWith('ed') && word.length > 4) return word.slice(0, -2);
  if (word.endsWith('es') && /(?:ch|sh|x|ss|zz)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us')) return word.slice(0, -1);
  return word;
}

function processTerm(term: string): string | null {
  const t = term.toLowerCase();
  if (t.length < 2 || STOP_WORDS.has(t)) return null;
  return stem(t);
}

/** The argument names and descriptions of a tool's parameters, one level deep (and array items). */
function argumentText(schema: JsonSchema | undefined, depth = 0): string {
  if (!schema || typeof schema !== 'object' || depth > 2) return '';
  const parts: string[] = [];
  const properties = (schema as { properties?: Record<string, JsonSchema> }).properties ?? {};
  for (const [name, sub] of Object.entries(properties)) {
    parts.push(name.replace(/[_-]+/g, ' '));
    const description = (sub as { description?: unknown }).description;
    if (typeof description === 'string') parts.push(description);
    parts.push(argumentText(sub, depth + 1));
  }
  const items = (schema as { items?: JsonSchema }).items;
  if (items) parts.push(argumentText(items, depth + 1));
  return parts.filter(Boolean).join(' ');
}

function documentOf(tool: RegisteredTool): ToolDocument {
  const spec = tool.spec;
  return {
    id: spec.name,
    name: spec.name.replace(/[_-]+/g, ' '),
    pack: `${tool.pack.id.replace(/-/g, ' ')} ${tool.pack.name}`,
    description: spec.description,
    keywords: (spec.keywords ?? []).join(' '),
    examples: (spec.examples ?? []).join(' '),
    args: argumentText(spec.parameters),
  };
}

/** Field weights: a word of the name or a declared keyword counts most, argument text least. */
const BOOST = { name: 3, keywords: 2.5, examples: 1.5, description: 1, pack: 1, args: 0.5 };

/**
 * Ranks the enabled tools for a query. `among` narrows the candidates (a turn's access mode, an MCP
 * profile); `limit` caps the answer (default 5). Words are matched whole after stemming, and by
 * prefix from four letters on ("calend" finds calendar); an empty or all-stop-word query finds nothing.
 */
@injectable()
export class ToolSearch implements Disposable {
  private index: MiniSearch<ToolDocument> | undefined;
  private packs = new Map<string, string>();
  private readonly subscription: Disposable;

  constructor(@inject(ToolRegistry) private readonly registry: ToolRegistry) {
    this.subscription = registry.onChange(() => (this.index = undefined));
  }

  search(query: string, options: { limit?: number; among?: Iterable<string> } = {}): ToolHit[] {
    const index = this.built();
    const among = options.among ? new Set(options.among) : undefined;
    const limit = Math.max(1, Math.min(options.limit ?? 5, 100));
    const hits = index.search(expand(query), {
      boost: BOOST,
      prefix: (term) => term.length >= 4,
      combineWith: 'OR',
      ...(among ? { filter: (r) => among.has(String(r.id)) } : {}),
    });
    return hits.slice(0, limit).map((h) => ({ name: String(h.id), pack: this.packs.get(String(h.id)) ?? '', score: Math.round(h.score * 1000) / 1000 }));
  }

  dispose(): void {
    this.subscription.dispose();
  }

  private built(): MiniSearch<ToolDocument> {
    if (this.index) return this.index;
    const tools = this.registry.list();
    const index = new MiniSearch<ToolDocument>({
      fields: ['name', 'pack', 'description', 'keywords', 'examples', 'args'],
      processTerm,
    });
    index.addAll(tools.map(documentOf));
    this.packs = new Map(tools.map((t) => [t.spec.name, t.pack.id]));
    return (this.index = index);
  }
}
