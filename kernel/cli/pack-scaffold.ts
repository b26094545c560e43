/**
 * The files of a new pack (`memo plugins new`): one safe read tool, one writing tool that shows a
 * preview before it is approved, a README and a test that runs with `node --test` on a real kernel
 * (`memo-kernel/testing`). With `ts`, the code is TypeScript typed by the generated tool-args.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateToolArgs } from '../packs/tool-types.js';

function manifest(id: string, prefix: string): Record<string, unknown> {
  return {
    id,
    name: id,
    version: '0.1.0',
    description: `Keeps short notes (${id}).`,
    main: 'index.js',
    tools: [
      {
        name: `${prefix}_list_notes`,
        description: 'Lists the notes saved so far, oldest first.',
        parameters: {
          type: 'object',
          properties: { limit: { type: 'integer', minimum: 1, maximum: 1000, description: 'At most this many notes (default all).' } },
          additionalProperties: false,
        },
        danger: 'safe',
        effect: 'read',
      },
      {
        name: `${prefix}_add_note`,
        description: 'Saves one note. The person is shown the note and asked first.',
        parameters: {
          type: 'object',
          properties: { text: { type: 'string', minLength: 1, maxLength: 2000, description: 'The note.' } },
          required: ['text'],
          additionalProperties: false,
        },
        danger: 'medium',
        effect: 'write',
      },
    ],
  };
}

const JS_INDEX = (prefix: string) => `// One handler per tool declared in plugin.json: the kernel refuses a pack whose code and manifest disagree.
// Arguments arrive already checked against each tool's "parameters" schema.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { defineTools } from 'memo-kernel/pack';

/** @param {string} dataDir @returns {Promise<string[]>} */
async function readNotes(dataDir) {
  try {
    return JSON.parse(await readFile(join(dataDir, 'notes.json'), 'utf8'));
  } catch {
    return [];
  }
}

export const tools = defineTools({
  /** @param {{ limit?: number }} args @param {import('memo-kernel/pack').ToolContext} ctx */
  ${prefix}_list_notes: async (args, ctx) => {
    const notes = (await readNotes(ctx.dataDir)).slice(0, args.limit);
    return { notes, summary: \`\${notes.length} notes\` };
  },
  ${prefix}_add_note: {
    // Shown to the person before they approve (danger "medium" asks first).
    /** @param {{ text: string }} args */
    preview: (args) => ({ kind: 'text', text: \`Save the note: \${args.text}\` }),
    /** @param {{ text: string }} args @param {import('memo-kernel/pack').ToolContext} ctx */
    run: async (args, ctx) => {
      const notes = [...(await readNotes(ctx.dataDir)), args.text];
      await mkdir(ctx.dataDir, { recursive: true });
      await writeFile(join(ctx.dataDir, 'notes.json'), JSON.stringify(notes));
      return { saved: args.text, count: notes.length, summary: \`saved note \${notes.length}\` };
    },
  },
});
`;

const TS_INDEX = (prefix: string) => `// One handler per tool declared in plugin.json: the kernel refuses a pack whose code and manifest disagree.
// ToolArgs is generated from plugin.json (memo plugins types .): change a tool's parameters there,
// regenerate, and the compiler shows every handler that no longer fits.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { defineTools } from 'memo-kernel/pack';
import type { ToolArgs } from './tool-args.js';

async function readNotes(dataDir: string): Promise<string[]> {
  try {
    return JSON.parse(await readFile(join(dataDir, 'notes.json'), 'utf8')) as string[];
  } catch {
    return [];
  }
}

export const tools = defineTools<ToolArgs>({
  ${prefix}_list_notes: async (args, ctx) => {
    const notes = (await readNotes(ctx.dataDir)).slice(0, args.limit);
    return { notes, summary: \`\${notes.length} notes\` };
  },
  ${prefix}_add_note: {
    // Shown to the person before they approve (danger "medium" asks first).
    preview: (args) => ({ kind: 'text', text: \`Save the note: \${args.text}\` }),
    run: async (args, ctx) => {
      const notes = [...(await readNotes(ctx.dataDir)), args.text];
      await mkdir(ctx.dataDir, { recursive: true });
      await writeFile(join(ctx.dataDir, 'notes.json'), JSON.stringify(notes));
      return { saved: args.text, count: notes.length, summary: \`saved note \${notes.length}\` };
    },
  },
});
`;

const TEST = (prefix: string) => `// Runs with \`node --test\` in this folder: a real kernel (temporary folders), calls through the
// same pipeline as the agent's (schema check, permission question, audit).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { createTestKernel } from 'memo-kernel/testing';

const packDir = fileURLToPath(new URL('.', import.meta.url));

test('saves a note once the person allows it, and lists it', async () => {
  const t = await createTestKernel({ packs: [packDir], answer: 'allow-once' });
  try {
    const added = await t.call('${prefix}_add_note', { text: 'buy milk' });
    assert.equal(added.ok, true, JSON.stringify(added));
    assert.equal(t.asked.length, 1);
    assert.equal(t.asked[0].preview.text, 'Save the note: buy milk');
    const listed = await t.call('${prefix}_list_notes', {});
    assert.deepEqual(listed.ok && listed.value.notes, ['buy milk']);
  } finally {
    await t.close();
  }
});

test('saves nothing when the person says no', async () => {
  const t = await createTestKernel({ packs: [packDir], answer: 'deny-once' });
  try {
    const added = await t.call('${prefix}_add_note', { text: 'secret plan' });
    assert.equal(added.ok, false);
    assert.equal(added.error.code, 'PERMISSION_DENIED');
    const listed = await t.call('${prefix}_list_notes', {});
    assert.deepEqual(listed.ok && listed.value.notes, []);
  } finally {
    await t.close();
  }
});
`;

const README = (id: string, prefix: string, ts: boolean) => `# ${id}

A Memo tool pack: \`${prefix}_list_notes\` (safe, read) and \`${prefix}_add_note\` (medium, write:
the person sees a preview and is asked first). Notes live in the pack's data folder.

- \`plugin.json\` is the source of truth: tools, their danger, effect and JSON Schema parameters.
- \`index.${ts ? 'ts' : 'js'}\` has one handler per declared tool${ts ? '; `tool-args.ts` is generated from plugin.json (`memo plugins types .`)' : ''}.
- \`pack.test.mjs\` runs with \`node --test\` on a real kernel (\`memo-kernel/testing\`).

The code imports \`memo-kernel/pack\`; the test imports \`memo-kernel/testing\`. When Memo loads the
pack it provides \`memo-kernel/pack\` itself; the test${ts ? ' and the compiler use' : ' uses'} the \`memo-kernel\`
that \`npm install\` links here from the Memo this pack was made with (\`package.json\`'s
\`file:\` path; memo-kernel is not on the npm registry: change the path if Memo moves).

\`\`\`sh
npm install                            # links memo-kernel${ts ? ', installs typescript and @types/node, builds index.js' : ''}
${ts ? 'memo plugins types . && npm run build   # after each change to plugin.json or index.ts\n' : ''}memo plugins validate .                # every problem, located; exit 1 if any
node --test                            # the pack's tests
\`\`\`

Check the arguments in \`assess\` (a refusal there reaches the caller before anyone is asked), show
what will change in \`preview\`, and do it in \`run\`; open paths only through \`ctx.sandbox\`.
`;

const TSCONFIG = `{
  "compilerOptions": {
    "target": "ES2022",
    "module": "nodenext",
    "moduleResolution": "nodenext",
    "strict": true,
    "skipLibCheck": true,
    "types": ["node"]
  },
  "files": ["index.ts", "tool-args.ts"]
}
`;

/**
 * Where the pack's `npm install` gets what its code and test import: memo-kernel is not on the npm
 * registry, so it is this install itself, by a `file:` path (npm links it); with TypeScript, the
 * compiler and Node's types at the versions this install was built with.
 */
export interface ScaffoldDeps {
  /** The memo-kernel package folder (absolute). */
  memoRoot: string;
  typescript: string;
  typesNode: string;
}

/**
 * This install's memo-kernel folder (the nearest package.json named memo-kernel above this module:
 * the checkout, or node_modules/memo-kernel) and the TypeScript and Node types versions it declares.
 */
export function scaffoldDeps(from = fileURLToPath(import.meta.url)): ScaffoldDeps {
  for (let dir = path.dirname(from); ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; devDependencies?: Record<string, string> };
      if (pkg.name === 'memo-kernel')
        return { memoRoot: dir, typescript: pkg.devDependencies?.typescript ?? '^6.0.0', typesNode: pkg.devDependencies?.['@types/node'] ?? '^20.0.0' };
    } catch {
      // No package.json here: look further up.
    }
    if (path.dirname(dir) === dir) throw new Error(`memo-kernel's package.json was not found above ${from}`);
  }
}

function packageJson(id: string, ts: boolean, deps: ScaffoldDeps): string {
  return (
    JSON.stringify(
      {
        name: id,
        version: '0.1.0',
        private: true,
        type: 'module',
        // npm runs prepare after a plain `npm install` here: with TypeScript, index.js is built then.
        scripts: ts ? { prepare: 'tsc', build: 'tsc', test: 'tsc && node --test' } : { test: 'node --test' },
        devDependencies: {
          'memo-kernel': `file:${deps.memoRoot}`,
          ...(ts ? { typescript: deps.typescript, '@types/node': deps.typesNode } : {}),
        },
      },
      null,
      2,
    ) + '\n'
  );
}

/** The new pack's files by name (relative to its folder). Tool names start with the id in snake case, so two new packs never collide. */
export function scaffoldFiles(id: string, ts: boolean, deps: ScaffoldDeps): Record<string, string> {
  const prefix = id.replace(/-/g, '_');
  const m = manifest(id, prefix);
  const files: Record<string, string> = {
    'plugin.json': JSON.stringify(m, null, 2) + '\n',
    'package.json': packageJson(id, ts, deps),
    'README.md': README(id, prefix, ts),
    'pack.test.mjs': TEST(prefix),
  };
  if (ts) {
    files['index.ts'] = TS_INDEX(prefix);
    files['tool-args.ts'] = generateToolArgs(m);
    files['tsconfig.json'] = TSCONFIG;
  } else files['index.js'] = JS_INDEX(prefix);
  return files;
}
