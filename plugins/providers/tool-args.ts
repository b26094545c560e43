// generated from plugin.json by memo plugins types; do not edit

/** Each tool of this pack, by name: the arguments its handler is given (validated against plugin.json). */
export interface ToolArgs {
  /** Add or update a model provider configuration (stored in data/providers.json, mode 0600). An update keeps the fields it does not mention. Prefer apiKeyEnv (the name of an environment variable holding the key) over apiKey; a stored key is never shown again. A person answers every call: no stored approval or always-allow covers it. */
  configure_provider: {
    /** Provider name: lowercase letters, digits, - or _ (e.g. groq, local-llama) */
    name: string;
    /** Wire format; required for a new provider */
    kind?: 'openai-compatible' | 'anthropic' | 'gemini';
    /** Known endpoint of the kind; custom needs baseUrl. ollama, lmstudio and llamacpp run on this machine */
    preset?: 'openai' | 'groq' | 'openrouter' | 'xai' | 'opencode-zen' | 'opencode-go' | 'ollama' | 'lmstudio' | 'llamacpp' | 'anthropic' | 'gemini' | 'custom';
    /** Endpoint URL (required for custom; overrides the preset's) */
    baseUrl?: string;
    /** Default model id */
    model?: string;
    /** Name of the environment variable holding the API key (preferred) */
    apiKeyEnv?: string;
    /** The API key itself, stored masked; not together with apiKeyEnv */
    apiKey?: string;
    /** The model's context window in tokens, when the pack does not know it or the server is set smaller */
    contextWindow?: number;
  };
}
