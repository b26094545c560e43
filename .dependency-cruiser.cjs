/**
 * The kernel's layers, checked on every `npm test` (pretest: `npm run layers`). Each layer may import
 * only from the layers below it; nothing may import in a cycle (type-only imports and import()
 * included: tsPreCompilationDeps). From the bottom:
 *
 *   base      errors, clock, logger, disposables, DI helpers, util/
 *   secrets   secret shapes, names and known values: masking and scrubbing  -> base
 *   storage   databases (SQLite, PostgreSQL), the kernel-state engine        -> secrets, base
 *   audit     the hash-chained trail (file, PostgreSQL)                      -> storage, secrets, base
 *   sandbox   the OS sandbox, the command judge, paths, process running      -> secrets, base
 *   core      registry, pipeline, gate and broker, limiter, packs, skills,   -> sandbox, audit, storage, secrets, base
 *             providers' contract and settings, the kernel's stored state
 *   agent     the agent loop, conversations, providers, CLI backends         -> core and below
 *   kernel    kernel.ts and compose/: the Kernel, composed of the core and    -> agent and below
 *             the agent, and the administration view built on both
 *   faces     the CLI, MCP, the control socket, the web console              -> kernel and below
 *   entries   index.ts, pack.ts, testing.ts: what hosts and packs import     -> anything in kernel/
 *   plugins   packs, through memo-kernel/pack only
 */
const LAYERS = [
  ['base', '^kernel/(errors|clock|logger|disposable|di)\\.ts$|^kernel/util/'],
  ['secrets', '^kernel/secrets/'],
  ['storage', '^kernel/storage/'],
  ['audit', '^kernel/audit/'],
  ['sandbox', '^kernel/sandbox/'],
  ['core', '^kernel/(tools|permissions|rate-limit|packs|skills|providers|state)/|^kernel/kernel-config\\.ts$'],
  ['agent', '^kernel/agent/'],
  ['kernel', '^kernel/(kernel|kernel-tokens)\\.ts$|^kernel/compose/'],
  ['faces', '^kernel/(cli|mcp|control|console)/'],
  ['entries', '^kernel/(index|pack|testing)\\.ts$'],
];
/** What each layer may import besides itself. */
const ALLOWED = {
  base: [],
  secrets: ['base'],
  storage: ['secrets', 'base'],
  audit: ['storage', 'secrets', 'base'],
  sandbox: ['secrets', 'base'],
  core: ['sandbox', 'audit', 'storage', 'secrets', 'base'],
  agent: ['core', 'sandbox', 'audit', 'storage', 'secrets', 'base'],
  kernel: ['agent', 'core', 'sandbox', 'audit', 'storage', 'secrets', 'base'],
  faces: ['kernel', 'agent', 'core', 'sandbox', 'audit', 'storage', 'secrets', 'base'],
  entries: ['faces', 'kernel', 'agent', 'core', 'sandbox', 'audit', 'storage', 'secrets', 'base'],
};
const pathOf = Object.fromEntries(LAYERS);
const all = LAYERS.map(([, p]) => `(${p})`).join('|');

module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      severity: 'error',
      comment: 'an import cycle: the modules in it cannot be understood or loaded apart',
      from: {},
      to: { circular: true },
    },
    ...LAYERS.map(([name, p]) => ({
      name: `layer-${name}`,
      severity: 'error',
      comment: `${name} may import only ${ALLOWED[name].join(', ') || 'nothing else in kernel/'} (see the layers at the top of .dependency-cruiser.cjs)`,
      from: { path: p },
      to: { path: all, pathNot: [p, ...ALLOWED[name].map((l) => pathOf[l])].map((x) => `(${x})`).join('|') },
    })),
    {
      name: 'packs-through-pack-api',
      severity: 'error',
      comment: 'a pack imports the kernel only as memo-kernel/pack (kernel/pack.ts)',
      from: { path: '^plugins/' },
      to: { path: '^kernel/', pathNot: '^kernel/pack\\.ts$' },
    },
    {
      name: 'kernel-not-plugins',
      severity: 'error',
      comment: 'the kernel knows no pack by its code',
      from: { path: '^kernel/' },
      to: { path: '^plugins/' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules|test|bench|scripts)/' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs'] },
  },
};
