import { EventEmitter } from 'node:events';
import type { Clock } from '../clock.js';
import { inject, injectable } from '../di.js';
import { toDisposable, type Disposable } from '../disposable.js';
import * as T from '../tokens.js';
import { withDeadline } from '../util/with-deadline.js';
import { ApprovalWithdrawn, type ApprovalFace, type ApprovalReply, type PermissionRequest } from './prompter.js';

/** How long a request waits in the broker when no face is attached (seed 003: an approval expires after 30 minutes). */
export const DEFAULT_APPROVAL_WAIT_MS = 30 * 60_000;

/** A request waiting for an answer, as any face or host sees it. */
export interface PendingApproval {
  id: string;
  request: PermissionRequest;
  /** When it was asked (epoch ms, kernel clock). */
  since: number;
  /** The faces it was put to (empty: it waits for a face to attach, or for `answer()`). */
  faces: string[];
  /** False for a request put to one face only (a CLI call's own prompt): `answer()` refuses it. */
  answerable: boolean;
}

/** What happened to a request: asked, or settled (and how). */
export type ApprovalEvent =
  | { kind: 'asked'; approval: PendingApproval }
  | { kind: 'settled'; id: string; outcome: 'answered'; by: string; reply: ApprovalReply }
  | { kind: 'settled'; id: string; outcome: 'timeout' | 'expired' | 'cancelled' | 'unanswered'; reason?: string };

/** How a request ended, for the gate. */
export type BrokerOutcome =
  | { kind: 'reply'; reply: ApprovalReply; by: string }
  /** `timeout`: a face's wait (60 s for a terminal) ran out; `expired`: it waited in the broker (30 minutes). */
  | { kind: 'timeout' | 'expired' | 'cancelled'; waitedMs: number }
  /** Every face it was put to refused to answer (e.g. no terminal); `reason` is the last one's. */
  | { kind: 'unanswered'; reason: string }
  /** No face attached and nobody watching, with `unattendedApprovals: 'refuse'`: refused without waiting. */
  | { kind: 'unattended' };

/** How a request that waited in the broker ended. */
type Settled = Exclude<BrokerOutcome, { kind: 'unattended' }>;

interface Entry {
  pending: PendingApproval;
  /** Put only to this face (a CLI call through the control socket answers its own calls). */
  exclusive: ApprovalFace | null;
  /** One controller per face asked: aborting it withdraws the question from that face alone. */
  asking: Map<ApprovalFace, AbortController>;
  /** Faces that could not answer it. */
  refused: Set<ApprovalFace>;
  hadFaces: boolean;
  settle: (outcome: Settled) => void;
  lastRefusal: string;
}

/**
 * Every pending permission request of the kernel, in one place. Faces (the terminal, a host app's
 * dialog, the web console) attach and detach at any time; each is asked every pending request; the
 * first answer wins and the question is withdrawn from the others with the reason (who answered).
 * A host can also answer a listed request directly (`answer(id, reply)`). A request with no face
 * waits up to 30 minutes (its expiry is an outcome of its own, not a denial); with faces, as long
 * as the longest of their waits (60 s for a terminal, seed 000).
 */
@injectable()
export class ApprovalBroker {
  private readonly faces = new Set<ApprovalFace>();
  private readonly entries = new Map<string, Entry>();
  private readonly events = new EventEmitter();

  constructor(
    @inject(T.Clock) private readonly clock: Clock,
    @inject(T.PromptTimeoutMs) private readonly faceWaitMs: number,
    @inject(T.ApprovalWaitMs) private readonly brokerWaitMs: number = DEFAULT_APPROVAL_WAIT_MS,
    @inject(T.UnattendedApprovals) private readonly unattended: 'wait' | 'refuse' = 'wait',
  ) {}

  /**
   * Whether anyone could answer a request now: a face is attached, or someone watches the requests
   * (`onChange`: `memo approvals list --watch`, the console, a host app's own dialog).
   */
  get attended(): boolean {
    return this.faces.size > 0 || this.events.listenerCount('change') > 0;
  }

  /** Attaches a face: it is asked every pending request now, and every new one until disposed. */
  attach(face: ApprovalFace): Disposable {
    this.faces.add(face);
    for (const entry of this.entries.values()) if (!entry.exclusive) this.put(entry, face);
    return toDisposable(() => {
      this.faces.delete(face);
      for (const entry of this.entries.values()) this.withdraw(entry, face, new ApprovalWithdrawn('detached'));
    });
  }

  /** The names of the attached faces. */
  faceNames(): string[] {
    return [...this.faces].map((f) => f.name);
  }

  /** The requests waiting for an answer, oldest first. */
  pending(): PendingApproval[] {
    return [...this.entries.values()].map((e) => ({ ...e.pending, faces: [...e.asking.keys()].map((f) => f.name) }));
  }

  /** Called once per request asked and once per request settled. */
  onChange(listener: (event: ApprovalEvent) => void): Disposable {
    this.events.on('change', listener);
    return toDisposable(() => this.events.off('change', listener));
  }

  /** Answers a pending request from outside any face (a host app's own UI, `memo approvals answer`). False if no such request waits. */
  answer(id: string, reply: ApprovalReply, by = 'host'): boolean {
    const entry = this.entries.get(id);
    if (!entry || entry.exclusive) return false;
    entry.settle({ kind: 'reply', reply, by });
    return true;
  }

  /**
   * Puts a request to the faces (or to `only`) and resolves with how it ended. `signal` is the
   * call's: its abort is a cancellation. Never rejects.
   */
  request(question: Omit<PermissionRequest, 'deadline'>, signal: AbortSignal, only?: ApprovalFace): Promise<BrokerOutcome> {
    const faces = only ? [only] : [...this.faces];
    const hadFaces = faces.length > 0;
    if (!only && this.unattended === 'refuse' && !this.attended) return Promise.resolve({ kind: 'unattended' });
    const waitMs = hadFaces ? Math.max(...faces.map((f) => f.waitMs ?? this.faceWaitMs)) : this.brokerWaitMs;
    const since = this.clock.now();
    const request: PermissionRequest = { ...question, deadline: since + waitMs };
    const waiting = withDeadline(signal, waitMs, this.clock);
    return new Promise<BrokerOutcome>((resolve) => {
      const entry: Entry = {
        pending: { id: request.callId, request, since, faces: [], answerable: !only },
        exclusive: only ?? null,
        asking: new Map(),
        refused: new Set(),
        hadFaces,
        lastRefusal: '',
        settle: (outcome) => {
          if (this.entries.get(request.callId) !== entry) return;
          this.entries.delete(request.callId);
          waiting.signal.removeEventListener('abort', onStop);
          waiting.dispose();
          const why =
            outcome.kind === 'reply'
              ? new ApprovalWithdrawn('answered', outcome.by)
              : new ApprovalWithdrawn(outcome.kind === 'unanswered' ? 'detached' : outcome.kind);
          for (const face of [...entry.asking.keys()]) this.withdraw(entry, face, why);
          this.emit(
            outcome.kind === 'reply'
              ? { kind: 'settled', id: request.callId, outcome: 'answered', by: outcome.by, reply: outcome.reply }
              : { kind: 'settled', id: request.callId, outcome: outcome.kind, ...(outcome.kind === 'unanswered' ? { reason: outcome.reason } : {}) },
          );
          resolve(outcome);
        },
      };
      const onStop = () => {
        const waited = this.clock.now() - since;
        if (waiting.cause === 'timeout') entry.settle({ kind: hadFaces ? 'timeout' : 'expired', waitedMs: waited });
        else entry.settle({ kind: 'cancelled', waitedMs: waited });
      };
      if (waiting.signal.aborted) {
        resolve({ kind: 'cancelled', waitedMs: 0 });
        return;
      }
      this.entries.set(request.callId, entry);
      waiting.signal.addEventListener('abort', onStop, { once: true });
      this.emit({ kind: 'asked', approval: this.pending().find((p) => p.id === request.callId)! });
      for (const face of faces) this.put(entry, face);
    });
  }

  private put(entry: Entry, face: ApprovalFace): void {
    if (entry.asking.has(face) || entry.refused.has(face)) return;
    const controller = new AbortController();
    entry.asking.set(face, controller);
    let reply: Promise<ApprovalReply>;
    try {
      reply = face.ask(entry.pending.request, controller.signal);
    } catch (err) {
      reply = Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    reply.then(
      (r) => {
        if (entry.asking.get(face) !== controller || controller.signal.aborted) return;
        // The face that answered is done with its question: only the others are withdrawn.
        entry.asking.delete(face);
        entry.settle({ kind: 'reply', reply: r, by: face.name });
      },
      (err: unknown) => {
        if (entry.asking.get(face) !== controller || controller.signal.aborted) return;
        // This face cannot answer (no terminal, its input ended): the others still may.
        entry.asking.delete(face);
        entry.refused.add(face);
        entry.lastRefusal = (err as Error)?.message ?? String(err);
        if (entry.hadFaces && entry.asking.size === 0) entry.settle({ kind: 'unanswered', reason: entry.lastRefusal });
      },
    );
  }

  private withdraw(entry: Entry, face: ApprovalFace, why: ApprovalWithdrawn): void {
    const controller = entry.asking.get(face);
    if (!controller) return;
    entry.asking.delete(face);
    controller.abort(why);
  }

  private emit(event: ApprovalEvent): void {
    this.events.emit('change', event);
  }
}
