import { randomBytes, timingSafeEqual } from 'node:crypto';
import { MemoError } from '../errors.js';

interface Capability {
  token: string;
  conversationId: string;
}

/**
 * Single-turn write capabilities. The kernel mints one when one of its own agent turns starts and
 * destroys it when the turn ends; an external MCP caller may run write tools only while presenting
 * a live one. A conversation id is not a credential: only the random token is.
 */
export class WriteCapabilities {
  private readonly live = new Map<string, Capability>();

  /** `conversationExists` asks the conversation store: a capability belongs to a stored conversation, and dies with it. */
  constructor(private readonly conversationExists: (conversationId: string) => Promise<boolean>) {}

  /** A capability for one turn of a stored conversation; NOT_FOUND when there is no such conversation. */
  async mint(conversationId: string): Promise<string> {
    if (!(await this.conversationExists(conversationId)))
      throw new MemoError(
        'NOT_FOUND',
        `There is no conversation ${JSON.stringify(String(conversationId).slice(0, 100))}: a write capability belongs to a stored conversation.`,
      );
    const token = `memo-cap-${randomBytes(24).toString('base64url')}`;
    this.live.set(token, { token, conversationId });
    return token;
  }

  revoke(token: string): void {
    this.live.delete(token);
  }

  /** Destroys every capability of a conversation (it was deleted). */
  revokeConversation(conversationId: string): void {
    for (const [token, cap] of this.live) if (cap.conversationId === conversationId) this.live.delete(token);
  }

  revokeAll(): void {
    this.live.clear();
  }

  /** The capability's conversation, if the token is live and its conversation still exists. */
  async check(token: string | undefined): Promise<string | null> {
    if (!token) return null;
    // Compare in constant time against each live token, so timing does not reveal a prefix.
    const given = Buffer.from(token);
    for (const cap of this.live.values()) {
      const mine = Buffer.from(cap.token);
      if (mine.length === given.length && timingSafeEqual(mine, given)) {
        return (await this.conversationExists(cap.conversationId)) ? cap.conversationId : null;
      }
    }
    return null;
  }

  get size(): number {
    return this.live.size;
  }
}
