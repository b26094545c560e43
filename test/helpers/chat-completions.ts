/**
 * A model served over loopback HTTP in OpenAI's chat-completions wire format (the shape of
 * test/fixtures/providers/openai), for tests that drive the providers pack's real adapter. The
 * test's `handle` decides each answer: `reply` sends one assistant message, `calls` a message of
 * tool calls; `res` is there for a streamed answer written by hand.
 */
import * as http from 'node:http';

export interface ChatAnswer {
  reply: (message: Record<string, unknown>) => void;
  calls: (list: ReadonlyArray<readonly [string, object]>) => void;
  res: http.ServerResponse;
}

export function chatCompletionsServer(handle: (json: any, answer: ChatAnswer) => void): { server: http.Server; requests: any[] } {
  const requests: any[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const json = JSON.parse(body);
      requests.push(json);
      const n = requests.length;
      const reply = (message: Record<string, unknown>) => {
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': `req_${n}` });
        res.end(
          JSON.stringify({
            id: `chatcmpl-${n}`,
            object: 'chat.completion',
            created: 1733400000,
            model: json.model,
            choices: [{ index: 0, message, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
            usage: { prompt_tokens: 60, completion_tokens: 8, total_tokens: 68 },
          }),
        );
      };
      const calls = (list: ReadonlyArray<readonly [string, object]>) =>
        reply({
          role: 'assistant',
          content: null,
          tool_calls: list.map(([name, args], i) => ({ id: `call_${n}_${i}`, type: 'function', function: { name, arguments: JSON.stringify(args) } })),
        });
      handle(json, { reply, calls, res });
    });
  });
  return { server, requests };
}
