/** Endpoint defaults and the stdio capability, apart from the server code so the CLI can use them without loading the SDK. */
export const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60_000;
export const DEFAULT_MAX_SESSIONS = 64;

/** The environment variable an agent-turn backend uses to hand `memo serve --stdio` its write capability. */
export const CAPABILITY_ENV = 'MEMO_WRITE_CAPABILITY';

/**
 * Reads the write capability from the environment once and deletes it there, so nothing the kernel
 * spawns later (a shell command, a skill's tool) inherits it.
 */
export function takeWriteCapabilityFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[CAPABILITY_ENV];
  delete env[CAPABILITY_ENV];
  return value ? value : undefined;
}
