import type { ModelProvider } from '../providers/provider.js';

/** The title a conversation has until (or unless) one is generated: the start of the first message. */
export function fallbackTitle(firstMessage: string): string {
  const line = firstMessage.replace(/\s+/g, ' ').trim();
  return line.length > 60 ? `${line.slice(0, 59)}…` : line || 'New conversation';
}

const TITLE_PROMPT =
  'Write a title of at most six words for the conversation below, in its language. Reply with the title only: no quotes, no punctuation at the end.';

/** The first line of a reply, without the decoration models like to add ("Title:", quotes, markdown). */
function cleanTitle(raw: string): string | null {
  const line = raw
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.length > 0);
  if (!line) return null;
  const title = line
    .replace(/^#+\s*/, '')
    .replace(/^title\s*:\s*/i, '')
    .replace(/^["'“”*_`]+|["'“”*_`]+$/g, '')
    .replace(/[.!。]+$/, '')
    .trim();
  if (!title) return null;
  return title.length > 60 ? `${title.slice(0, 59)}…` : title;
}

/**
 * Asks the conversation's model for a short title after its first exchange (seed 003). One small
 * request without tools (the title request never reaches a tool), cancelled with `signal`. Returns
 * null when the model fails or gives nothing usable: the caller keeps the fallback title.
 */
export async function generateTitle(provider: ModelProvider, model: string, firstMessage: string, answer: string, signal: AbortSignal): Promise<string | null> {
  const clip = (t: string) => (t.length > 1_500 ? `${t.slice(0, 1_500)}…` : t);
  try {
    const reply = await provider.chat({
      model,
      messages: [
        { role: 'system', content: TITLE_PROMPT },
        { role: 'user', content: `Person: ${clip(firstMessage)}\n\nAssistant: ${clip(answer)}` },
      ],
      tools: [],
      temperature: 0.2,
      maxOutputTokens: 32,
      signal,
    });
    return cleanTitle(reply.content);
  } catch {
    return null;
  }
}
