import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { MemoError } from '../errors.js';
import type { AccessMode, ItemRef } from '../tools/contract.js';

/** A call made with a capability, as its turn learns of it: which tool, and the items its result named. */
export interface CapabilityCall {
  tool: string;
  ok: boolean;
  items?: ItemRef[];
}

interface Capability {
  token: string;
  conversationId: string;
  /** The agent turn it belongs to (Caller.turn): an MCP caller presenting it counts as that turn. */
  turn: string;
  /** The turn's access mode when it is narrower than Computer access: an MCP caller presenting it is offered that mode's tools only. */
  mode?: AccessMode;
  /** Told of each call made with it (the turn that minted it links the items its results named). */
  observer?: (call: CapabilityCall) => void;
}

/**
 * Single-turn write capabilities. The kernel mints one when one of its own agent turns starts and
 * destroys it when the turn ends; an external MCP caller may run write tools only while presenting
 * a live one. A conversation id is not a credential: only the random token is.
 */
export class WriteCapabilities {
  private readonly live = new Map<string, Capability>();
  private readonly revoked = new Set<(turn: string) => void>();

  /** `conversationExists` asks the conversation store: a capability belongs to a stored conversation, and dies with it. */
  constructor(private readonly conversationExists: (conversationId: string) => Promise<boolean>) {}

  /**
   * A capability for one turn of a stored conversation; NOT_FOUND when there is no such conversation.
   * `turn` is the turn's id (Caller.turn), a fresh one when the turn has none of its own; `mode`, the
   * turn's access mode (what an MCP caller presenting the capability is offered; absent: every tool).
   */
  async mint(conversationId: string, turn: string = randomUUID(), mode?: AccessMode): Promise<string> {
    if (!(await this.conversationExists(conversationId)))
      throw new MemoError(
        'NOT_FOUND',
        `There is no conversation ${JSON.stringify(String(conversationId).slice(0, 100))}: a write capability belongs to a stored conversation.`,
      );
    const token = `memo-cap-${randomBytes(24).toString('base64url')}`;
    this.live.set(token, { token, conversationId, turn, ...(mode && mode !== 'computer' ? { mode } : {}) });
    return token;
  }

  /** Tells `listener` the turn of every capability destroyed from now on (its turn has ended). */
  onRevoke(listener: (turn: string) => void): () => void {
    this.revoked.add(listener);
    return () => void this.revoked.delete(listener);
  }

  private drop(cap: Capability): void {
    this.live.delete(cap.token);
    for (const listener of this.revoked) listener(cap.turn);
  }

  revoke(token: string): void {
    const cap = this.live.get(token);
    if (cap) this.drop(cap);
  }

  /** Destroys every capability of a conversation (it was deleted). */
  revokeConversation(conversationId: string): void {
    for (const cap of [...this.live.values()]) if (cap.conversationId === conversationId) this.drop(cap);
  }

  revokeAll(): void {
    for (const cap of [...this.live.values()]) this.drop(cap);
  }

  /**
   * Tells `listener` of every call made with the live capability `token` from now on, until the
   * capability dies or the returned function is called: the turn that minted it (an agent CLI's)
   * learns what its calls' results named, which the CLI's own output does not carry.
   */
  observe(token: string, listener: (call: CapabilityCall) => void): () => void {
    const cap = this.live.get(token);
    if (!cap) return () => undefined;
    cap.observer = listener;
    return () => {
      if (cap.observer === listener) delete cap.observer;
    };
  }

  /** A call presenting `token` has finished (the pipeline's report): its observer, if any, is told. */
  report(token: string | undefined, call: CapabilityCall): void {
    if (!token) return;
    const observer = this.find(token)?.observer;
    if (!observer) return;
    try {
      observer(call);
    } catch {
      // An observer's failure is its own: the call has its result.
    }
  }

  /** The live capability whose token is `token`, compared in constant time so timing does not reveal a prefix. */
  private find(token: string): Capability | undefined {
    const given = Buffer.from(token);
    for (const cap of this.live.values()) {
      const mine = Buffer.from(cap.token);
      if (mine.length === given.length && timingSafeEqual(mine, given)) return cap;
    }
    return undefined;
  }

  /** The turn a live capability belongs to (never the token itself), or undefined. */
  turnOf(token: string | undefined): string | undefined {
    return token ? this.find(token)?.turn : undefined;
  }

  /** The access mode of a live capability's turn when it is narrower than Computer access, or undefined. */
  modeOf(token: string | undefined): AccessMode | undefined {
    return token ? this.find(token)?.mode : undefined;
  }

  /** The capability's conversation, if the token is live and its conversation still exists. */
  async check(token: string | undefined): Promise<string | null> {
    if (!token) return null;
    const cap = this.find(token);
    if (!cap) return null;
    return (await this.conversationExists(cap.conversationId)) ? cap.conversationId : null;
  }

  get size(): number {
    return this.live.size;
  }
}
