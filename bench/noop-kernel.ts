import { createKernel, type Kernel, type ToolImplementation } from '../kernel/index.js';

/** A kernel with one safe no-op tool `noop({ n })` and no rate limits: what the overhead benches measure around. */
export function noopKernel(root: string, dataDir: string, handler: ToolImplementation, quiet = false): Kernel {
  return createKernel({
    root,
    dataDir,
    rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 },
    ...(quiet ? { logger: { info() {}, warn() {}, error() {} } } : {}),
    packs: [
      {
        id: 'bench',
        tools: [
          {
            spec: {
              name: 'noop',
              description: 'no-op',
              danger: 'safe',
              effect: 'read',
              parameters: { type: 'object', properties: { n: { type: 'integer' } } },
            },
            impl: handler,
          },
        ],
      },
    ],
  });
}
