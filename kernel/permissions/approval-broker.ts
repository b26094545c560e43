import { EventEmitter } from 'node:events';
import { Clock } from '../clock.js';
import { KernelConfig } from '../kernel-config.js';
import { inject, injectable } from '../di.js';
import { toDisposable, type Disposable } from '../disposable.js';
import { Logger } from '../logger.js';
import { instanceId } from '../storage/instance-id.js';
import { withDeadline } from '../util/with-deadline.js';
import { ApprovalWithdrawn, type ApprovalFace, type ApprovalReply, type PermissionRequest } from './prompter.js';
import { SharedApprovals, type ClaimResult, type RemoteApproval, type SettledNote } from '../storage/pg-shared-approvals.js';

/** How long a permission prompt waits for a face's answer (ms; 60 s, seed 000). */
export const PromptTimeoutMs = Symbol('PromptTimeoutMs');
/** How long a request waits in the approval broker when no face is attached (ms; 30 minutes, seed 003). */
export const ApprovalWaitMs = Symbol('ApprovalWaitMs');
/** What a permission request does when no face is attached and nobody watches the broker: `wait` or `refuse`. */
export const UnattendedApprovals = Symbol('UnattendedApprovals');

/** How long a request waits in the broker when no face is attached (seed 003: an approval expires after 30 minutes). */
export const DEFAULT_APPROVAL_WAIT_MS = 30 * 60_000;

/** What another instance's inbox shows of a request: no session id, no write capability. */
export interface SharedView {
  request: Omit<PermissionRequest, 'caller'> & { caller: { kind: PermissionRequest['caller']['kind']; id?: string; conversationId?: string } };
  since: number;
}

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
  /** With a shared database: the instance a request of another instance waits on (`answerAnywhere` answers it). */
  instance?: string;
  /** That instance stopped before the request was answered: listed until its expiry, not answerable. */
  gone?: boolean;
}

/** How `answerAnywhere` went: given, or why not. */
export type AnswerResult = ClaimResult<ApprovalReply> | { ok: false; code: 'NOT_ANSWERABLE'; message: string };

/** What happened to a request: asked, or settled (and how). */
export type ApprovalEvent =
  | { kind: 'asked'; approval: PendingApproval }
  | { kind: 'settled'; id: string; outcome: 'answered'; by: string; reply: ApprovalReply }
  | { kind: 'settled'; id: string; outcome: 'timeout' | 'expired' | 'cancelled' | 'unanswered'; reason?: string };

/** How a request ended, for the gate. */
export type BrokerOutcome =
  | { kind: 'reply'; reply: ApprovalReply; by: string }
  /**
   * `timeout`: a face's wait (60 s for a terminal) ran out; `expired`: it waited in the broker (30 minutes).
   * `unrecorded`: an answer given on this instance that could not be recorded in the shared inbox (its
   * database could not be reached), so it was not applied.
   */
  | { kind: 'timeout' | 'expired' | 'cancelled'; waitedMs: number; unrecorded?: UnrecordedAnswer }
  /** Every face it was put to refused to answer (e.g. no terminal); `reason` is the last one's. */
  | { kind: 'unanswered'; reason: string }
  /** No face attached and nobody watching, with `unattendedApprovals: 'refuse'`: refused without waiting. */
  | { kind: 'unattended' };

/** An answer given here that the shared inbox could not record (its database could not be reached). */
export interface UnrecordedAnswer {
  answer: string;
  by: string;
}

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
  /** Put in the shared inbox (a database is set and the request is not one face's alone). */
  published: boolean;
  /** The last allow given here that could not be recorded (the database could not be reached): named if the request times out. */
  unrecorded?: UnrecordedAnswer;
  /** Faces whose answer could not be recorded: asked again once the database answers. */
  reask: Set<ApprovalFace>;
}

/**
 * Every pending permission request of the kernel, in one place. Faces (the terminal, a host app's
 * dialog, the web console) attach and detach at any time; each is asked every pending request; the
 * first answer wins and the question is withdrawn from the others with the reason (who answered).
 * A host can also answer a listed request directly (`answer(id, reply)`). A request with no face
 * waits up to 30 minutes (its expiry is an outcome of its own, not a denial); with faces, as long
 * as the longest of their waits (60 s for a terminal, seed 000).
 *
 * With a shared database (`MEMO_DATABASE_URL`) the inbox is every instance's (storage/pg-shared-approvals.ts):
 * `pending()` and `onChange` include the requests waiting on other instances (with `instance`), and
 * `answerAnywhere` answers them; exactly one answer to a request counts, whichever instance gives it.
 * Without one, nothing here touches a database.
 */
@injectable()
export class ApprovalBroker {
  private readonly faces = new Set<ApprovalFace>();
  private readonly entries = new Map<string, Entry>();
  private readonly events = new EventEmitter();
  private readonly shared: SharedApprovals<SharedView, ApprovalReply> | undefined;

  constructor(
    @inject(Clock) private readonly clock: Clock,
    @inject(PromptTimeoutMs) private readonly faceWaitMs: number,
    @inject(ApprovalWaitMs) private readonly brokerWaitMs: number = DEFAULT_APPROVAL_WAIT_MS,
    @inject(UnattendedApprovals) private readonly unattended: 'wait' | 'refuse' = 'wait',
    @inject(KernelConfig) config?: KernelConfig,
    @inject(Logger) private readonly logger?: Logger,
  ) {
    const database = config?.database;
    if (database) {
      this.shared = new SharedApprovals(
        database,
        () => instanceId(config.dataDir),
        {
          changed: (asked, settled) => this.remoteChanged(asked, settled),
          answered: (id, reply, by) => this.entries.get(id)?.settle({ kind: 'reply', reply, by }),
          watchers: () => this.faces.size + this.events.listenerCount('change'),
          mine: () => [...this.entries.values()].filter((e) => e.published).map((e) => ({ id: e.pending.id, view: sharedView(e.pending) })),
          reachable: () => this.askAgain(),
        },
        logger,
      );
    }
  }

  /**
   * Whether anyone could answer a request now: a face is attached, or someone watches the requests
   * (`onChange`: `memo approvals list --watch`, the console, a host app's own dialog), here or, with a
   * shared database, on another live instance.
   */
  get attended(): boolean {
    return this.faces.size > 0 || this.events.listenerCount('change') > 0 || this.shared?.attendedElsewhere === true;
  }

  /** Attaches a face: it is asked every pending request now, and every new one until disposed. */
  attach(face: ApprovalFace): Disposable {
    this.faces.add(face);
    this.shared?.watchersChanged();
    for (const entry of this.entries.values()) if (!entry.exclusive) this.put(entry, face);
    return toDisposable(() => {
      this.faces.delete(face);
      this.shared?.watchersChanged();
      for (const entry of this.entries.values()) this.withdraw(entry, face, new ApprovalWithdrawn('detached'));
    });
  }

  /** With a shared database: resolves once the other instances' requests have been read (or after a few seconds). */
  sync(): Promise<void> {
    return this.shared ? this.shared.ready() : Promise.resolve();
  }

  /** Closes the shared inbox (nothing to do without a database). */
  async close(): Promise<void> {
    await this.shared?.close();
  }

  /** The names of the attached faces. */
  faceNames(): string[] {
    return [...this.faces].map((f) => f.name);
  }

  /** The requests waiting for an answer, oldest first (this instance's, then, with a shared database, the others'). */
  pending(): PendingApproval[] {
    const mine = [...this.entries.values()].map((e) => ({ ...e.pending, faces: [...e.asking.keys()].map((f) => f.name) }));
    if (!this.shared) return mine;
    void this.shared.ready();
    return [...mine, ...this.shared.list().map(remotePending)];
  }

  /** Called once per request asked and once per request settled. */
  onChange(listener: (event: ApprovalEvent) => void): Disposable {
    this.events.on('change', listener);
    if (this.shared) {
      void this.shared.ready();
      this.shared.watchersChanged();
    }
    return toDisposable(() => {
      this.events.off('change', listener);
      this.shared?.watchersChanged();
    });
  }

  /**
   * Answers a pending request of this instance from outside any face (a host app's own UI, `memo
   * approvals answer`). False if no such request waits here. With a shared database the answer is
   * recorded first, and one given on another instance at the same moment may win instead:
   * `answerAnywhere` says which.
   */
  answer(id: string, reply: ApprovalReply, by = 'host'): boolean {
    const entry = this.entries.get(id);
    if (!entry || entry.exclusive) return false;
    void this.reply(entry, reply, by);
    return true;
  }

  /**
   * Answers a request waiting here or, with a shared database, on another instance (the web
   * console): resolves with whether this answer is the one that counts, or why not (already answered
   * elsewhere, its instance is gone, no longer waiting, the database cannot be reached).
   */
  answerAnywhere(id: string, reply: ApprovalReply, by: string): Promise<AnswerResult> {
    const entry = this.entries.get(id);
    if (entry?.exclusive)
      return Promise.resolve({
        ok: false,
        code: 'NOT_ANSWERABLE',
        message: `${entry.pending.request.tool} was asked at its own terminal; it can be answered only there.`,
      });
    if (entry) return this.reply(entry, reply, by);
    if (this.shared) return this.shared.claim(id, reply, `${by}@${this.shared.name}`, false);
    return Promise.resolve({ ok: false, code: 'NOT_PENDING', message: 'This request is no longer waiting: it was answered, expired or cancelled.' });
  }

  /**
   * A reply for one of this instance's requests. Without a shared database it settles the request at
   * once; with one it is recorded first, and only the first answer recorded counts (another
   * instance's may have come first: the request then settles with that one). When the claim is not
   * recorded, the database decides: an answer committed there wins; when it holds none (the row is
   * missing or no longer waiting), this instance's answer counts. When the database cannot be reached
   * and the request was put there (someone may have answered it, and been told so), this answer is
   * refused and the request keeps waiting: never two answers that both "count". A request that never
   * reached the database (asked during the outage) is answered here.
   */
  private async reply(entry: Entry, reply: ApprovalReply, by: string): Promise<AnswerResult> {
    const shared = this.shared;
    if (!shared || !entry.published) {
      entry.settle({ kind: 'reply', reply, by });
      return { ok: true };
    }
    const id = entry.pending.id;
    const claimed = await shared.claim(id, reply, by, true);
    if (claimed.ok) {
      entry.settle({ kind: 'reply', reply, by });
      return { ok: true };
    }
    if (claimed.code === 'ALREADY_ANSWERED' && claimed.winner) {
      entry.settle({ kind: 'reply', reply: claimed.winner.reply, by: claimed.winner.by });
      return claimed;
    }
    let committed: { reply: ApprovalReply; by: string } | undefined;
    let unreachable: string | undefined;
    try {
      committed = await shared.answerOf(id);
      // Reachable now, but the claim was not recorded: the request may still wait there, so another
      // answer could still come in after a local one. Not applied; answering again decides.
      if (!committed && claimed.code === 'UNAVAILABLE') unreachable = claimed.message;
    } catch (err) {
      unreachable = (err as Error)?.message ?? String(err);
    }
    if (unreachable !== undefined) {
      if (!shared.isShared(id)) {
        // Never put in the shared inbox: nobody else can have answered it.
        entry.settle({ kind: 'reply', reply, by });
        return { ok: true };
      }
      if (reply === 'deny-once' || reply === 'deny-forever') {
        // A denial runs nothing: it settles the request here at once. Should someone on another instance
        // have allowed it meanwhile, this denial wins; the shared inbox records it (and says so) once it answers.
        this.logger?.warn(
          `${entry.pending.request.tool} (${id}): denied here (${reply} by ${by}) while the shared approvals cannot be reached; ` +
            `a denial applies at once, and wins over any answer given on another instance meanwhile (${this.shared?.scrub(unreachable) ?? unreachable})`,
        );
        entry.settle({ kind: 'reply', reply, by });
        return { ok: true };
      }
      entry.unrecorded = { answer: typeof reply === 'string' ? reply : 'edit', by };
      const message =
        `The shared approvals cannot be reached, and this request is in the shared inbox, where someone on another instance ` +
        `may already have answered it: your answer was not applied and the request still waits; answer again once the database answers (${this.shared?.scrub(unreachable) ?? unreachable})`;
      this.logger?.warn(`${entry.pending.request.tool} (${id}): ${message}`);
      if (!this.entries.has(id))
        return { ok: false, code: 'NOT_PENDING', message: 'This request is no longer waiting: it was answered, expired or cancelled.' };
      return { ok: false, code: 'UNAVAILABLE', message };
    }
    if (committed) {
      entry.settle({ kind: 'reply', reply: committed.reply, by: committed.by });
      return {
        ok: false,
        code: 'ALREADY_ANSWERED',
        message: `This request was already answered (${committed.by}); exactly one answer counts, and yours was not applied.`,
        winner: committed,
      };
    }
    // The database holds no answer for it (and it is not waiting there): this instance's counts.
    entry.settle({ kind: 'reply', reply, by });
    return { ok: true };
  }

  /** Other instances' requests came, changed or went: told to this broker's watchers as their own are. */
  private remoteChanged(asked: Array<RemoteApproval<SharedView>>, settled: Array<{ id: string; note: SettledNote }>): void {
    for (const r of asked) this.emit({ kind: 'asked', approval: remotePending(r) });
    for (const { id, note } of settled) {
      if (note.outcome === 'answered')
        this.emit({
          kind: 'settled',
          id,
          outcome: 'answered',
          by: note.by ?? 'unknown',
          reply: note.reply === undefined || note.reply === 'edit' ? { edit: {} } : (note.reply as ApprovalReply),
        });
      else this.emit({ kind: 'settled', id, outcome: note.outcome, ...(note.reason ? { reason: note.reason } : {}) });
    }
  }

  /**
   * Puts a request to the faces (or to `only`) and resolves with how it ended. `signal` is the
   * call's: its abort is a cancellation. Never rejects.
   */
  request(question: Omit<PermissionRequest, 'deadline'>, signal: AbortSignal, only?: ApprovalFace): Promise<BrokerOutcome> {
    // Whether someone watches on another instance is known once the shared inbox has been read.
    if (!only && this.shared && this.unattended === 'refuse' && !this.attended)
      return this.shared.lookForWatchers().then(() => this.ask(question, signal, only));
    return this.ask(question, signal, only);
  }

  private ask(question: Omit<PermissionRequest, 'deadline'>, signal: AbortSignal, only?: ApprovalFace): Promise<BrokerOutcome> {
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
        published: false,
        reask: new Set(),
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
          if (entry.published) this.shared?.settled(request.callId, request.revision, settledNote(outcome));
        },
      };
      const onStop = () => {
        const waited = this.clock.now() - since;
        const unrecorded = entry.unrecorded ? { unrecorded: entry.unrecorded } : {};
        if (waiting.cause === 'timeout') entry.settle({ kind: hadFaces ? 'timeout' : 'expired', waitedMs: waited, ...unrecorded });
        else entry.settle({ kind: 'cancelled', waitedMs: waited });
      };
      if (waiting.signal.aborted) {
        resolve({ kind: 'cancelled', waitedMs: 0 });
        return;
      }
      this.entries.set(request.callId, entry);
      if (this.shared && !only) {
        entry.published = true;
        this.shared.publish(request.callId, sharedView(entry.pending)).catch(() => {
          // Logged by the shared inbox; the request still waits here, and is put there again once it answers.
        });
      }
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
        void this.reply(entry, r, face.name).then((result) => {
          // Not recorded (the database cannot be reached): a face asks once, so it is asked again once the database answers.
          if (!result.ok && result.code === 'UNAVAILABLE' && this.entries.get(entry.pending.id) === entry) entry.reask.add(face);
        });
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

  /** The shared database answers again: faces whose answer it could not record are asked again (those still attached). */
  private askAgain(): void {
    for (const entry of this.entries.values()) {
      const faces = [...entry.reask];
      entry.reask.clear();
      for (const face of faces) if (this.faces.has(face)) this.put(entry, face);
    }
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

/** A request as another instance's inbox gets it: the caller by kind and name only (no session id, no write capability). */
function sharedView(p: PendingApproval): SharedView {
  const c = p.request.caller;
  return {
    request: {
      ...p.request,
      caller: { kind: c.kind, ...(c.id !== undefined ? { id: c.id } : {}), ...(c.conversationId !== undefined ? { conversationId: c.conversationId } : {}) },
    },
    since: p.since,
  };
}

function remotePending(r: RemoteApproval<SharedView>): PendingApproval {
  return {
    id: r.id,
    request: { ...r.view.request, caller: r.view.request.caller },
    since: r.view.since,
    faces: [],
    answerable: !r.gone,
    instance: r.instance,
    ...(r.gone ? { gone: true } : {}),
  };
}

/** How a request ended, for the other inboxes: an edit is named, never sent. */
function settledNote(outcome: Settled): SettledNote {
  if (outcome.kind === 'reply') return { outcome: 'answered', by: outcome.by, reply: typeof outcome.reply === 'string' ? outcome.reply : 'edit' };
  if (outcome.kind === 'unanswered') return { outcome: 'unanswered', reason: outcome.reason };
  return { outcome: outcome.kind };
}
