/**
 * Globals that third-party declarations reached from memo-kernel's public types expect, so a host
 * app's strict type check (without `skipLibCheck`) needs nothing more than `@types/node`, whatever
 * its `lib`: web-tree-sitter's declarations (the command judge's parser types, under
 * `memo-kernel/pack`'s judge types) name Emscripten's `EmscriptenModule`, which lives in
 * @types/emscripten (a package web-tree-sitter does not depend on), and `WebAssembly.Module`, which
 * the DOM library declares and a Node host's `lib: ["ES2023"]` does not. Empty interfaces here merge
 * with the real ones when a host has them. Each public entry imports this module (no code: the
 * import is for the declarations it carries into the entry's .d.ts).
 */
/* eslint-disable @typescript-eslint/no-empty-object-type, @typescript-eslint/no-namespace -- names for web-tree-sitter's `Partial<EmscriptenModule>` and `WebAssembly.Module`, merged with the real declarations when present */
declare global {
  interface EmscriptenModule {}
  namespace WebAssembly {
    interface Module {}
  }
}
/* eslint-enable @typescript-eslint/no-empty-object-type, @typescript-eslint/no-namespace */

export {};
