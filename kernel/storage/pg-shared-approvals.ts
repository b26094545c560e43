/**
 * The approvals inbox of every instance on one PostgreSQL database (`MEMO_DATABASE_URL`), schema
 * `memo_approvals`: each instance's approval broker publishes the requests waiting in it, lists the
 * others', and can answer them. The call itself always waits in the broker of the instance that made
 * it (its owner); the database carries the question out and the answer back.
 *
 * - **One answer wins**: answering is one conditional UPDATE (`state = 'pending'` to `answered`), the
 *   owner's own faces included, so two people clicking on two instances cannot both succeed; the
 *   loser is told who answered first.
 * - **Wake-ups**: NOTIFY on the channel `memo_approvals` (asked, answered, settled) wakes the owner of
 *   an answered request and refreshes every other inbox; each instance also re-reads every 2 s
 *   (the fallback for a notification lost while its listening connection was down).
 * - **Gone**: each running broker beats every 2 s (`instances.seen_at`, the database's clock). A
 *   waiting request whose owner has not beaten for 10 s (killed, or cut off) is marked `gone`: listed
 *   as such, not answerable by the others, until its expiry. An owner that reconnects publishes its
 *   waiting requests again (pending once more). An answered request is never marked gone nor put back:
 *   its answer stays until its owner takes it (or it expires).
 * - Every statement is bounded (5 s) and the beats never overlap: a hung database is an unreachable one.
 * - The answer row holds an edit's arguments only until the owner takes it. A settled request stays
 *   10 minutes as `settled` (how it ended and who answered, no arguments), so a late second answer
 *   is told who answered first.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import type { DatabaseUrl } from './database-url.js';
import type { Logger } from '../logger.js';

export const APPROVALS_SCHEMA = 'memo_approvals';
const CHANNEL = 'memo_approvals';
const BEAT_MS = 2_000;
const STALE_S = 10;
/** How long a caller waits for the first read of the shared inbox before going on with what it has. */
const FIRST_READ_WAIT_MS = 3_000;
/** A statement (or a connection for it) not answered within this is abandoned, its connection closed: a hung database counts as unreachable. */
const QUERY_TIMEOUT_MS = 5_000;

class CreateApprovals1796188100000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "instances" (
      "incarnation" text PRIMARY KEY, "instance" text NOT NULL, "seen_at" timestamptz NOT NULL, "watchers" integer NOT NULL)`);
    await qr.query(`CREATE TABLE "approvals" (
      "id" text PRIMARY KEY, "instance" text NOT NULL, "incarnation" text NOT NULL, "revision" integer NOT NULL,
      "view" jsonb NOT NULL, "state" text NOT NULL CHECK ("state" IN ('pending', 'answered', 'settled', 'gone')),
      "answer" jsonb, "answered_by" text, "reply" text, "outcome" text,
      "expires_at" timestamptz NOT NULL, "changed_at" timestamptz NOT NULL DEFAULT now())`);
    await qr.query(`CREATE INDEX "approvals_incarnation" ON "approvals" ("incarnation")`);
  }
  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP TABLE "approvals"`);
    await qr.query(`DROP TABLE "instances"`);
  }
}

/**
 * What another instance's inbox shows of a request, as the approval broker publishes it (its shape is
 * the broker's: permissions/approval-broker.ts). Stored as JSON; only the revision and the deadline are
 * read here.
 */
export interface PublishedView {
  request: { revision: number; deadline: number };
}

/** A request waiting (or gone) on another instance. */
export interface RemoteApproval<V extends PublishedView = PublishedView> {
  id: string;
  instance: string;
  view: V;
  gone: boolean;
}

export type ClaimResult<R = unknown> =
  { ok: true } | { ok: false; code: 'NOT_PENDING' | 'ALREADY_ANSWERED' | 'GONE' | 'UNAVAILABLE'; message: string; winner?: { reply: R; by: string } };

/** How a settled request is told to the other inboxes. */
export interface SettledNote {
  outcome: 'answered' | 'timeout' | 'expired' | 'cancelled' | 'unanswered';
  by?: string;
  reply?: string;
  reason?: string;
}

export interface SharedApprovalsHost<V extends PublishedView, R> {
  /** Other instances' requests were asked (or changed: a new revision, gone), or left the inbox (and how, when known). */
  changed(asked: Array<RemoteApproval<V>>, settled: Array<{ id: string; note: SettledNote }>): void;
  /** One of this broker's requests was answered on another instance. */
  answered(id: string, reply: R, by: string): void;
  /** How many faces and watchers this broker has (others wait for a request only when someone watches). */
  watchers(): number;
  /** The requests this broker waits on, for publishing again after an outage. */
  mine(): Array<{ id: string; view: V }>;
  /** A beat reached the database (faces whose answers it could not record may be asked again). */
  reachable?(): void;
}

interface Row<V> {
  id: string;
  instance: string;
  incarnation: string;
  view: V;
  state: 'pending' | 'answered' | 'settled' | 'gone';
}

export class SharedApprovals<V extends PublishedView, R> {
  /** This broker's run: a restarted instance is a new incarnation, so its old requests go gone. */
  private readonly incarnation = randomUUID();
  private instanceId: string | undefined;
  private opening: Promise<DataSource> | undefined;
  private started: Promise<void> | undefined;
  private listener: pg.Client | undefined;
  private beat: NodeJS.Timeout | undefined;
  private reconnect: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  private remote = new Map<string, RemoteApproval<V>>();
  private readonly notes = new Map<string, SettledNote>();
  private watchingElsewhere = false;
  /** Database writes per request, in order: a revision's publish never overtakes the previous one's delete. */
  private readonly chains = new Map<string, Promise<unknown>>();
  /** True until the first beat, and after a failed one: the next good beat publishes this broker's requests (again). */
  private down = true;
  private warnedDown = false;
  private readonly unsettled = new Map<string, { revision: number; how: SettledNote }>();
  private closed = false;
  /** A beat is running: the next one is skipped (a hung database never piles them up). */
  private ticking: Promise<void> | undefined;
  /** This broker's requests known to be in the shared inbox. */
  private readonly landed = new Set<string>();

  constructor(
    private readonly url: DatabaseUrl,
    private readonly instance: () => string,
    private readonly host: SharedApprovalsHost<V, R>,
    private readonly logger: Logger | undefined,
  ) {}

  get name(): string {
    return (this.instanceId ??= this.instance());
  }

  /** Other instances' requests, as last read. */
  list(): Array<RemoteApproval<V>> {
    return [...this.remote.values()];
  }

  /** Whether a face or watcher is attached to another live instance. */
  get attendedElsewhere(): boolean {
    return this.watchingElsewhere;
  }

  /** Starts listening, beating and polling (once); resolves after the first read, or after a short wait. */
  start(): Promise<void> {
    this.started ??= this.open().then(
      async () => {
        await this.listen();
        await this.tick();
        this.beat = setInterval(() => void this.tick(), BEAT_MS);
        this.beat.unref();
      },
      (err: unknown) => {
        this.started = undefined;
        throw err;
      },
    );
    return this.started;
  }

  /** `start`, waited for at most a few seconds; never rejects (an unreachable database leaves the inbox local). */
  async ready(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.start().catch((err: unknown) => {
        // Once per outage: every listing asks again.
        if (this.warnedDown) return;
        this.warnedDown = true;
        this.warn(`the shared approvals inbox cannot be opened: ${(err as Error).message}`);
      }),
      new Promise<void>((r) => (timer = setTimeout(r, FIRST_READ_WAIT_MS))),
    ]);
    clearTimeout(timer);
  }

  /** Puts one of this broker's requests (or a new revision of it) in the shared inbox. */
  publish(id: string, view: V): Promise<void> {
    return this.chain(id, async () => {
      try {
        await this.start();
        // Settled meanwhile (a beat's republish queued behind its settle): never put back.
        if (!this.host.mine().some((m) => m.id === id && m.view.request.revision === view.request.revision)) return;
        // A row already answered (or settled) for this revision is never put back to pending: its answer
        // was given and its answerer told so. Only a new revision (after an edit) replaces it.
        await this.q(
          `WITH up AS (
           INSERT INTO "approvals" ("id", "instance", "incarnation", "revision", "view", "state", "expires_at")
           VALUES ($1, $2, $3, $4, $5, 'pending', to_timestamp($6 / 1000.0))
           ON CONFLICT ("id") DO UPDATE SET "instance" = $2, "incarnation" = $3, "revision" = $4, "view" = $5, "state" = 'pending',
             "answer" = NULL, "answered_by" = NULL, "reply" = NULL, "outcome" = NULL, "expires_at" = to_timestamp($6 / 1000.0), "changed_at" = now()
           WHERE "approvals"."state" IN ('pending', 'gone') OR "approvals"."revision" < $4
           RETURNING "id")
         SELECT pg_notify($7, $8) FROM up`,
          [id, this.name, this.incarnation, view.request.revision, JSON.stringify(view), view.request.deadline, CHANNEL, note({ k: 'asked', id })],
        );
        this.landed.add(id);
        // Answered before this: the owner takes that answer.
        const answered = await this.answerOf(id);
        if (answered) this.host.answered(id, answered.reply, answered.by);
      } catch (err) {
        // Not put there (the database is down): the next good beat puts every waiting request there again.
        this.down = true;
        // Sent, and no answer (the server hangs, or the connection broke): it may have been put there,
        // and answered on another instance meanwhile. Counted as shared, so an answer given here while
        // the database cannot be reached is not applied over one that may count there.
        if ((err as { sent?: boolean } | null)?.sent) this.landed.add(id);
        throw err;
      }
    });
  }

  /**
   * Answers a request in the shared inbox: this broker's own (`own`) or another instance's. Exactly
   * one answer to a request wins; a losing one learns the winner's (for its owner) or who it was.
   */
  claim(id: string, reply: R, by: string, own: boolean): Promise<ClaimResult<R>> {
    const attempt = async (): Promise<ClaimResult<R>> => {
      // The notification is part of the statement: the answer is recorded and announced together, or
      // neither (a winner is never told "not given" for an answer that counts). The owner, which holds
      // the call and is alive, may answer its own request even if it was marked gone while it was late.
      // A statement this side gave up on may still run when a hung server wakes up: it must then change
      // nothing (this answerer was told "not given"). So it applies only before a deadline on the server's
      // own clock, read first, that comes before this side gives up (QUERY_TIMEOUT_MS after sending it).
      const [deadline] = await this.q<Array<{ until: string }>>(`SELECT (clock_timestamp() + make_interval(secs => $1))::text AS "until"`, [
        (QUERY_TIMEOUT_MS - 1_000) / 1000,
      ]);
      const won = await this.q<Array<{ incarnation: string }>>(
        `WITH won AS (
           UPDATE "approvals" SET "state" = 'answered', "answer" = $2, "answered_by" = $3, "reply" = $5, "changed_at" = now()
           WHERE "id" = $1 AND ${own ? `"state" IN ('pending', 'gone') AND "incarnation" = $4` : `"state" = 'pending' AND "incarnation" <> $4`}
             AND clock_timestamp() < $7::timestamptz
           RETURNING "incarnation")
         SELECT "incarnation", pg_notify($6, json_build_object('k', 'answered', 'id', $1::text, 'inc', "incarnation")::text) FROM won`,
        [id, JSON.stringify(reply), by, this.incarnation, typeof reply === 'string' ? reply : 'edit', CHANNEL, deadline!.until],
      );
      if (won.length > 0) return { ok: true };
      const found = await this.q<Array<{ state: string; answer: R | null; answered_by: string | null; instance: string; outcome: string | null }>>(
        `SELECT "state", "answer", "answered_by", "instance", "outcome" FROM "approvals" WHERE "id" = $1`,
        [id],
      );
      const row = found[0];
      if (row?.state === 'answered' || (row?.state === 'settled' && row.outcome === 'answered'))
        return {
          ok: false,
          code: 'ALREADY_ANSWERED',
          message: `This request was already answered (${row.answered_by ?? 'by someone'}); exactly one answer counts, and yours was not applied.`,
          ...(row.answer !== null ? { winner: { reply: row.answer, by: row.answered_by ?? 'unknown' } } : {}),
        };
      if (row?.state === 'gone')
        return {
          ok: false,
          code: 'GONE',
          message: `The instance ${row.instance} that asked this is not answering (stopped, or cut off from the database), so it cannot be answered now; if that instance comes back, the request waits again and can be answered then.`,
        };
      return { ok: false, code: 'NOT_PENDING', message: 'This request is no longer waiting: it was answered, expired or cancelled.' };
    };
    const run = () =>
      attempt().catch((err: unknown): ClaimResult<R> => ({
        ok: false,
        code: 'UNAVAILABLE',
        message: `The shared approvals cannot be reached, so the answer was not given: ${this.url.scrub((err as Error)?.message ?? String(err))}`,
      }));
    return own ? this.chain(id, run) : run();
  }

  /** The answer another instance gave to one of this broker's requests, once it is recorded. */
  async answerOf(id: string): Promise<{ reply: R; by: string } | undefined> {
    const rows = await this.q<Array<{ answer: R; answered_by: string }>>(
      `SELECT "answer", "answered_by" FROM "approvals" WHERE "id" = $1 AND "incarnation" = $2 AND "state" = 'answered'`,
      [id, this.incarnation],
    );
    const row = rows[0];
    return row ? { reply: row.answer, by: row.answered_by } : undefined;
  }

  /** A database message without the password. */
  scrub(message: string): string {
    return this.url.scrub(message);
  }

  /** Whether one of this broker's requests was put in the shared inbox (others may have answered it there). */
  isShared(id: string): boolean {
    return this.landed.has(id);
  }

  /** One of this broker's requests ended: it leaves the shared inbox, and the answer it held is dropped. */
  settled(id: string, revision: number, how: SettledNote): void {
    this.landed.delete(id);
    // Kept until it is recorded: the next good beat tries again (others would list it as waiting).
    this.unsettled.set(id, { revision, how });
    void this.chain(id, async () => {
      // What the row held before: an answer committed on another instance while this one could not
      // reach the database, after the request had ended here (a denial given here wins), is told.
      const [was] = await this.q<Array<{ state: string; by: string | null; reply: string | null }>>(
        `WITH done AS (
           UPDATE "approvals" AS a SET "state" = 'settled', "answer" = NULL, "view" = '{}', "outcome" = $6, "answered_by" = $7, "reply" = $8, "changed_at" = now()
           FROM (SELECT "id", "state", "answered_by", "reply" FROM "approvals" WHERE "id" = $1 FOR UPDATE) AS old
           WHERE a."id" = old."id" AND a."incarnation" = $2 AND a."revision" = $3
           RETURNING old."state", old."answered_by" AS "by", old."reply")
         SELECT "state", "by", "reply", pg_notify($4, $5) FROM done`,
        [id, this.incarnation, revision, CHANNEL, note({ k: 'settled', id, ...how }), how.outcome, how.by ?? null, how.reply ?? null],
      );
      if (was?.state === 'answered' && (was.by !== (how.by ?? null) || was.reply !== (how.reply ?? null)))
        this.warn(
          `approval request ${id}: the answer given on another instance (${was.reply ?? 'an answer'} by ${was.by ?? 'someone'}) was recorded while this instance ` +
            `could not reach the database, but the request had already ended here (${how.outcome}${how.reply ? `: ${how.reply}` : ''}${how.by ? ` by ${how.by}` : ''}), which counts; the shared inbox now says so`,
        );
      if (this.unsettled.get(id)?.revision === revision) this.unsettled.delete(id);
    }).catch((err: unknown) => this.warn(`a settled approval request could not be taken out of the shared inbox: ${(err as Error).message}`));
  }

  /** Reads now whether someone watches on another instance (before refusing a request nobody here watches). Never rejects. */
  async lookForWatchers(): Promise<void> {
    await this.ready();
    if (this.started && !this.closed) await this.heartbeat().catch(() => {});
  }

  /** Faces or watchers came or went here: the other instances learn it at once. */
  watchersChanged(): void {
    if (this.started && !this.closed) void this.heartbeat().catch(() => {});
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.beat);
    clearTimeout(this.reconnect);
    // Statements in flight end (each is bounded) before the pool closes.
    await Promise.allSettled([...this.chains.values(), this.ticking, this.refreshing]);
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => {});
    const ds = await this.opening?.catch(() => undefined);
    if (ds?.isInitialized) {
      await this.q(`DELETE FROM "instances" WHERE "incarnation" = $1`, [this.incarnation], ds).catch(() => {});
      await ds.destroy().catch(() => {});
    }
  }

  /**
   * One statement on a connection of its own, bounded: not answered within QUERY_TIMEOUT_MS (the
   * server hangs, packets are dropped), it is abandoned and its connection closed, and this rejects.
   * A rejection after the statement was sent carries `sent: true`: the server may have run it.
   * UPDATE ... RETURNING comes back as [rows, count] from typeorm's postgres driver: the rows are returned.
   */
  private async q<T = unknown[]>(sql: string, params: unknown[] = [], opened?: DataSource): Promise<T> {
    const ds = opened ?? (await this.open());
    const qr = ds.createQueryRunner() as QueryRunner & { releasePostgresConnection(err?: Error): Promise<void> };
    const connecting = qr.connect() as Promise<unknown>;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`The database ${this.url.display} did not answer within ${QUERY_TIMEOUT_MS / 1000} s`)), QUERY_TIMEOUT_MS);
    });
    timeout.catch(() => {});
    let sent = false;
    try {
      await Promise.race([connecting, timeout]);
      sent = true;
      const result = (await Promise.race([qr.query(sql, params), timeout])) as unknown[];
      void qr.release();
      return (result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number' ? result[0] : result) as T;
    } catch (err) {
      // Closed, not returned to the pool: a connection whose statement hangs is useless.
      void connecting.then(
        () => qr.releasePostgresConnection(err as Error),
        () => {},
      );
      if (sent && err instanceof Error) Object.assign(err, { sent: true });
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private open(): Promise<DataSource> {
    if (this.closed) return Promise.reject(new Error('the kernel is shutting down'));
    if (!this.opening) {
      const opening = import('../storage/postgres.js').then(({ openPostgres }) =>
        openPostgres(this.url, APPROVALS_SCHEMA, { entities: [], migrations: [CreateApprovals1796188100000] }),
      );
      this.opening = opening;
      opening.catch(() => {
        if (this.opening === opening) this.opening = undefined;
      });
    }
    return this.opening;
  }

  private chain<T>(id: string, step: () => Promise<T>): Promise<T> {
    const before = this.chains.get(id) ?? Promise.resolve();
    const next = before.then(step, step);
    const tail = next.catch(() => {});
    this.chains.set(id, tail);
    void tail.then(() => {
      if (this.chains.get(id) === tail) this.chains.delete(id);
    });
    return next;
  }

  /** A connection of its own that LISTENs; lost, it is made again (and everything re-read) a second later. */
  private async listen(): Promise<void> {
    if (this.closed || this.listener) return;
    const client = new pg.Client({
      ...this.url.clientOptions(),
      application_name: 'memo-approvals',
      connectionTimeoutMillis: 10_000,
    });
    const lost = () => {
      if (this.listener !== client) return;
      this.listener = undefined;
      void client.end().catch(() => {});
      if (!this.closed) {
        clearTimeout(this.reconnect);
        this.reconnect = setTimeout(
          () =>
            void this.listen().then(
              () => this.tick(),
              () => {},
            ),
          1_000,
        );
        this.reconnect.unref();
      }
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (msg) => {
      if (msg.channel !== CHANNEL) return;
      this.heard(msg.payload ?? '');
    });
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      lost();
      throw new Error(`The database ${this.url.display} cannot be reached for approvals: ${this.url.scrub((err as Error).message)}`, { cause: err });
    }
  }

  private heard(payload: string): void {
    let msg: { k?: string; id?: string; inc?: string; outcome?: SettledNote['outcome']; by?: string; reply?: string; reason?: string };
    try {
      msg = JSON.parse(payload) as typeof msg;
    } catch {
      return;
    }
    if (msg.k === 'answered' && msg.inc === this.incarnation && typeof msg.id === 'string') void this.takeAnswer(msg.id);
    if (msg.k === 'settled' && typeof msg.id === 'string' && msg.outcome)
      this.notes.set(msg.id, {
        outcome: msg.outcome,
        ...(msg.by ? { by: msg.by } : {}),
        ...(msg.reply ? { reply: msg.reply } : {}),
        ...(msg.reason ? { reason: msg.reason } : {}),
      });
    this.refresh().catch(() => {
      // The next beat reads again.
    });
  }

  private async takeAnswer(id: string): Promise<void> {
    try {
      const a = await this.answerOf(id);
      if (a) this.host.answered(id, a.reply, a.by);
    } catch (err) {
      // The next beat looks for it again.
      this.warn(`an answer given on another instance could not be read yet: ${(err as Error).message}`);
    }
  }

  /** Beat, mark the requests of instances that stopped beating as gone, take missed answers, re-read. */
  private async tick(): Promise<void> {
    if (this.closed || this.ticking) return this.ticking;
    this.ticking = this.beatOnce().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private async beatOnce(): Promise<void> {
    try {
      await this.heartbeat();
      if (this.down) {
        this.down = false;
        this.warnedDown = false;
        // First beat, or back after an outage: requests asked meanwhile were not put there, or were marked gone.
        for (const m of this.host.mine()) void this.publish(m.id, m.view).catch(() => {});
      }
      // Reached (an outage may have been shorter than a beat): answers it could not record are asked for again.
      this.host.reachable?.();
      for (const [id, { revision, how }] of this.unsettled) this.settled(id, revision, how);
      // Only waiting requests go gone: an answered one keeps its answer (its answerer was told it counts)
      // until its owner takes it, or it expires.
      await this.q(
        `WITH marked AS (
           UPDATE "approvals" SET "state" = 'gone', "changed_at" = now()
           WHERE "state" = 'pending' AND "incarnation" NOT IN (SELECT "incarnation" FROM "instances" WHERE "seen_at" > now() - make_interval(secs => $1))
           RETURNING "id")
         SELECT pg_notify($2, $3) FROM (SELECT 1 FROM marked LIMIT 1) AS any_marked`,
        [STALE_S, CHANNEL, note({ k: 'gone' })],
      );
      // An answer whose owner stopped stays until the request's expiry; a live owner takes it first.
      await this.q(
        `DELETE FROM "approvals" WHERE ("state" = 'gone' AND "expires_at" < now()) OR ("state" = 'settled' AND "changed_at" < now() - interval '10 minutes')
           OR ("state" = 'answered' AND "expires_at" < now() AND "incarnation" NOT IN (SELECT "incarnation" FROM "instances" WHERE "seen_at" > now() - make_interval(secs => $1)))`,
        [STALE_S],
      );
      await this.q(`DELETE FROM "instances" WHERE "seen_at" < now() - interval '1 day'`);
      // Answers whose notification was missed; and requests of this broker marked gone while its beats
      // were late (a stalled event loop), which still wait here: put back.
      const own = await this.q<Array<{ id: string; state: string }>>(
        `SELECT "id", "state" FROM "approvals" WHERE "incarnation" = $1 AND "state" IN ('answered', 'gone')`,
        [this.incarnation],
      );
      const waiting = new Map(this.host.mine().map((m) => [m.id, m.view]));
      for (const { id, state } of own) {
        if (state === 'answered') void this.takeAnswer(id);
        else if (waiting.has(id)) void this.publish(id, waiting.get(id)!).catch(() => {});
      }
      await this.refresh();
    } catch (err) {
      if (!this.down || !this.warnedDown)
        this.warn(`the shared approvals inbox cannot be reached; requests wait here until it answers again: ${(err as Error).message}`);
      this.down = true;
      this.warnedDown = true;
    }
  }

  private async heartbeat(): Promise<void> {
    const rows = await this.q<Array<{ watching: boolean }>>(
      `WITH me AS (
         INSERT INTO "instances" ("incarnation", "instance", "seen_at", "watchers") VALUES ($1, $2, now(), $3)
         ON CONFLICT ("incarnation") DO UPDATE SET "seen_at" = now(), "watchers" = $3 RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM "instances" WHERE "incarnation" <> $1 AND "watchers" > 0 AND "seen_at" > now() - make_interval(secs => $4)) AS "watching"
       FROM me`,
      [this.incarnation, this.name, this.host.watchers(), STALE_S],
    );
    this.watchingElsewhere = rows[0]?.watching === true;
  }

  /** Re-reads the other instances' requests and tells the broker what changed (one read at a time, the last request coalesced). */
  private refresh(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        // An answered request is out of every inbox already; only its owner still has to take the answer.
        const rows = await this.q<Array<Row<V> & { answered_by: string | null; reply: string | null; outcome: SettledNote['outcome'] | null }>>(
          `SELECT "id", "instance", "incarnation", "view", "state", "answered_by", "reply", "outcome"
           FROM "approvals" WHERE "incarnation" <> $1 ORDER BY "changed_at", "id"`,
          [this.incarnation],
        );
        const next = new Map<string, RemoteApproval<V>>();
        const ended = new Map<string, SettledNote>();
        for (const r of rows) {
          if (r.state === 'pending' || r.state === 'gone') next.set(r.id, { id: r.id, instance: r.instance, view: r.view, gone: r.state === 'gone' });
          else
            ended.set(r.id, {
              outcome: r.state === 'answered' ? 'answered' : (r.outcome ?? 'unanswered'),
              ...(r.answered_by ? { by: r.answered_by } : {}),
              ...(r.reply ? { reply: r.reply } : {}),
            });
        }
        const asked = [...next.values()].filter((r) => {
          const before = this.remote.get(r.id);
          return !before || before.gone !== r.gone || before.view.request.revision !== r.view.request.revision;
        });
        const settled: Array<{ id: string; note: SettledNote }> = [];
        for (const [id, before] of this.remote) {
          if (next.has(id)) continue;
          settled.push({
            id,
            note: this.notes.get(id) ?? ended.get(id) ?? { outcome: 'unanswered', reason: `it is no longer waiting on instance ${before.instance}` },
          });
        }
        for (const { id } of settled) this.notes.delete(id);
        // Notes of requests this inbox never listed (settled before it read them) are dropped now and then.
        if (this.notes.size > 1000) this.notes.clear();
        this.remote = next;
        if (asked.length || settled.length) this.host.changed(asked, settled);
      } while (this.refreshAgain && !this.closed);
    })().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private warn(message: string): void {
    this.logger?.warn(this.url.scrub(message));
  }
}

/** A notification's payload: ids and outcomes only (no arguments, no edits), well under NOTIFY's 8000 bytes. */
function note(fields: Record<string, unknown>): string {
  return JSON.stringify(fields);
}
