/**
 * `find_tools`, the kernel's own tool for a model that was not sent every definition: it searches the
 * tools its caller may use (the turn's access mode: `ctx.scope`) by what the model wants to do, and
 * names the ones found with their descriptions. The agent loop offers the found tools' full
 * definitions from the next model call on (agent/tool-budget.ts). A call of it goes through the one
 * pipeline like any other (validated, rate-limited, audited); it reads nothing but the tool list.
 */
import type { PackDefinition } from '../tools/tool-registry.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { ToolSearch } from './tool-search.js';

export const FIND_TOOLS = 'find_tools';
export const FIND_TOOLS_DEFAULT_LIMIT = 5;
export const FIND_TOOLS_MAX_LIMIT = 10;

/** What find_tools answers: the tools found, best first. */
export interface FoundTools {
  tools: Array<{ name: string; pack: string; description: string; score: number }>;
  summary: string;
}

export function findToolsPack(search: ToolSearch, registry: ToolRegistry): PackDefinition {
  return {
    id: 'tool-search',
    name: 'Tool search',
    version: '1.0.0',
    description: 'Finds the tools that fit a task among those this conversation may use.',
    source: 'kernel',
    tools: [
      {
        spec: {
          name: FIND_TOOLS,
          description:
            'Search the tools you may use by what you want to do, when none of the tools you were given fits. The tools found can be called from your next step on. Describe the task in a few words (for example "move a task to another project").',
          parameters: {
            type: 'object',
            properties: {
              query: { type: 'string', minLength: 1, maxLength: 300, description: 'The task, in a few words.' },
              limit: {
                type: 'integer',
                minimum: 1,
                maximum: FIND_TOOLS_MAX_LIMIT,
                description: `How many tools to return at most (default ${FIND_TOOLS_DEFAULT_LIMIT}).`,
              },
            },
            required: ['query'],
            additionalProperties: false,
          },
          danger: 'safe',
          effect: 'read',
          modes: ['vault'],
          keywords: ['discover', 'lookup', 'capability', 'function'],
          examples: ['which tool can rename a note', 'find a tool for sending a message'],
        },
        impl: (args, ctx): FoundTools => {
          const query = String(args.query);
          const limit = typeof args.limit === 'number' ? args.limit : FIND_TOOLS_DEFAULT_LIMIT;
          const among = (ctx.scope ?? registry.list().map((t) => t.spec.name)).filter((name) => name !== FIND_TOOLS);
          const tools = search.search(query, { limit, among }).map((hit) => ({
            name: hit.name,
            pack: hit.pack,
            description: registry.get(hit.name)?.spec.description ?? '',
            score: hit.score,
          }));
          const summary = tools.length
            ? `${tools.length} tool${tools.length === 1 ? '' : 's'} for "${query}": ${tools.map((t) => t.name).join(', ')}`
            : `No tool fits "${query}"; try other words.`;
          return { tools, summary };
        },
      },
    ],
  };
}
