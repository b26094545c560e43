/**
 * Loading tree-sitter's bash grammar: once per process, lazily, because the WASM module costs a few
 * milliseconds to instantiate and most processes never judge a command.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { Language, Parser } from 'web-tree-sitter';

let parserPromise: Promise<Parser> | null = null;

export function loadParser(): Promise<Parser> {
  parserPromise ??= (async () => {
    await Parser.init();
    const requireHere = createRequire(import.meta.url);
    const grammarDir = path.dirname(requireHere.resolve('tree-sitter-bash/package.json'));
    const bash = await Language.load(path.join(grammarDir, 'tree-sitter-bash.wasm'));
    const parser = new Parser();
    parser.setLanguage(bash);
    return parser;
  })().catch((err: unknown) => {
    parserPromise = null; // let a later call retry
    throw err;
  });
  return parserPromise;
}
