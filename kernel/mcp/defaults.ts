/** Endpoint defaults, apart from the server code so the CLI can show them without loading the SDK. */
export const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60_000;
export const DEFAULT_MAX_SESSIONS = 64;
