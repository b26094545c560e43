import { randomBytes, timingSafeEqual } from 'node:crypto';

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
  private conversationExists: (id: string) => boolean = () => true;

  /** The agent module says which conversations still exist; a deleted one's capability is refused. */
  setConversationCheck(check: (conversationId: string) => boolean): void {
    this.conversationExists = check;
  }

  mint(conversationId: string): string {
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
  check(token: string | undefined): string | null {
    if (!token) return null;
    // Compare in constant time against each live token, so timing does not reveal a prefix.
    const given = Buffer.from(token);
    for (const cap of this.live.values()) {
      const mine = Buffer.from(cap.token);
      if (mine.length === given.length && timingSafeEqual(mine, given)) {
        return this.conversationExists(cap.conversationId) ? cap.conversationId : null;
      }
    }
    return null;
  }

  get size(): number {
    return this.live.size;
  }
}
