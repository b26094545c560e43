import type { ChatRequest, ChatResponse, ModelProvider, ToolCallRequestPart } from '../../kernel/providers/provider.js';

export type Script = (request: ChatRequest, call: number) => ChatResponse | Promise<ChatResponse>;

/** A model that answers from a script: the edge of the world (a hosted model) replaced, nothing else. */
export class ScriptedProvider implements ModelProvider {
  readonly name = 'scripted';
  readonly kind = 'scripted';
  readonly requests: ChatRequest[] = [];
  constructor(
    private readonly script: Script,
    private readonly window?: number,
  ) {}
  async chat(request: ChatRequest): Promise<ChatResponse> {
    // Keep a copy: the loop goes on appending to its own arrays.
    this.requests.push({ ...request, messages: structuredClone(request.messages), tools: structuredClone(request.tools) });
    return this.script(request, this.requests.length);
  }
  contextWindow(): number | undefined {
    return this.window;
  }
}

let seq = 0;
export function toolCall(name: string, args: Record<string, unknown> = {}): ToolCallRequestPart {
  return { id: `call_${++seq}`, name, arguments: args };
}

export function reply(content: string, ...toolCalls: ToolCallRequestPart[]): ChatResponse {
  return { content, toolCalls, usage: { inputTokens: 100, outputTokens: 10 } };
}
