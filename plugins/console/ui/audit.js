/* global URLSearchParams */
// The audit page: the whole trail, paged by the server (a cursor per page, the total counted), filtered,
// exported as JSONL, with a live tail that can be paused.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from './api.js';

const PAGE_SIZE = 100;
const EMPTY_FILTER = { tool: '', caller: '', outcome: '', kind: '', text: '', since: '', until: '' };
/** After a new entry arrives, how long the live page waits for more before it reloads once. */
const LIVE_SETTLE_MS = 300;

function callerText(caller) {
  return caller.id ? `${caller.kind} “${caller.id}”` : caller.kind;
}

/** True for a call that ran without anyone being asked (seed 003: shown compact and subdued). */
export function unasked(entry) {
  // Ran, allowed without a person: the tool is safe, or a stored decision, always-allow or a routine's pre-approval covered it.
  // (An expired, cancelled or unanswered request did not run; a call the tool answered itself ran nothing.)
  return !entry.event && !entry.answeredBy && (entry.decision === 'auto' || /^allow:(stored-|always-allow|pre-approved)/.test(entry.decision));
}

/** The date and time a person reads, to the second, in their own zone. */
function when(ts) {
  const d = new Date(ts);
  return `${d.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' })} ${d.toLocaleTimeString()}`;
}

function AuditDetail({ entry }) {
  return html`<dl class="facts detail">
    <dt>Call</dt>
    <dd><code>${entry.id}</code>${entry.seq !== undefined ? ` (#${entry.seq})` : ''}</dd>
    <dt>Time</dt>
    <dd>${entry.ts}</dd>
    <dt>Tool</dt>
    <dd><code>${entry.tool}</code>${entry.pack ? ` (${entry.pack})` : ''}</dd>
    <dt>Caller</dt>
    <dd>${callerText(entry.caller)}${entry.caller.conversationId ? `, conversation ${entry.caller.conversationId}` : ''}</dd>
    <dt>Decision</dt>
    <dd>${entry.decision}${entry.answeredBy ? `, answered by ${entry.answeredBy}` : ''}${entry.editedBy ? `, edited by ${entry.editedBy}` : ''}</dd>
    <dt>Outcome</dt>
    <dd>${entry.outcome}${entry.error ? `: ${entry.error.code}: ${entry.error.message}` : ''} (${Math.round(entry.durationMs)} ms)</dd>
    <dt>Result</dt>
    <dd>${entry.summary || '—'}</dd>
    <dt>Arguments</dt>
    <dd><pre>${JSON.stringify(entry.args, null, 2)}</pre></dd>
  </dl>`;
}

/** What an event line says in a few words: a person's change, or what the log saw about itself. */
function eventText(e) {
  if (e.event === 'admin') return `${e.action}${e.target ? ` ${e.target}` : ''}${e.outcome === 'failed' ? ' (failed)' : ''}`;
  if (e.event === 'gap') return `gap: ${e.seen ?? 'lines missing'}`;
  if (e.event === 'agent-access') return `agent CLI ${e.backend ?? ''} with ${e.access === 'computer' ? 'Computer access' : 'Vault only'}`;
  return e.event;
}

function EventRow({ entry }) {
  const { seq, ts, prev: _prev, hash: _hash, pid, event, ...rest } = entry;
  return html`<li class=${`audit-row event ${entry.outcome === 'failed' || event === 'gap' ? 'failed' : ''}`}>
    <details>
      <summary>
        <time datetime=${ts}>${when(ts)}</time>
        <span class="kind">${event === 'admin' ? 'change' : 'event'}</span>
        <span class="tool">${eventText(entry)}</span>
        ${entry.by && html`<span class="who">by ${entry.by}</span>`}
        ${entry.instance && html`<span class="instance" title="the instance that wrote it">${entry.instance}</span>`}
      </summary>
      <dl class="facts detail">
        <dt>Line</dt>
        <dd>#${seq}, ${ts}${pid ? `, process ${pid}` : ''}</dd>
        <dt>Details</dt>
        <dd><pre>${JSON.stringify(rest, null, 2)}</pre></dd>
      </dl>
    </details>
  </li>`;
}

export function AuditRow({ entry }) {
  if (entry.event) return html`<${EventRow} entry=${entry} />`;
  const quiet = unasked(entry);
  return html`<li class=${`audit-row ${quiet ? 'quiet' : ''} ${entry.outcome === 'error' ? 'failed' : ''}`}>
    <details>
      <summary>
        <time datetime=${entry.ts}>${when(entry.ts)}</time>
        <code class="tool">${entry.tool}</code>
        <span class="who">${callerText(entry.caller)}</span>
        ${entry.instance && html`<span class="instance" title="the instance that ran the call">${entry.instance}</span>`}
        <span class="decision">${entry.decision}</span>
        <span class="outcome">${entry.outcome === 'ok' ? 'ok' : (entry.error?.code ?? 'error')}</span>
      </summary>
      <${AuditDetail} entry=${entry} />
    </details>
  </li>`;
}

/**
 * What Verify found: the data folder's file (one chain), or, on a shared database, every instance's
 * chain, one sentence each.
 */
function verifyText(verify) {
  const count = (n) => `${n} ${n === 1 ? 'entry' : 'entries'}`;
  if (!Array.isArray(verify.chains)) {
    return verify.ok
      ? `Verified: ${count(verify.entries)}, the keyed chain and its head are intact.`
      : `Verify failed: ${verify.problem?.message ?? 'unknown problem'}`;
  }
  const chains = verify.chains.map((c) => (c.ok ? `${c.instance}: ${count(c.entries)}, intact` : `${c.instance}: ${c.problem?.message ?? 'not intact'}`));
  if (verify.problem) chains.unshift(`${verify.problem.instance}: ${verify.problem.message}`);
  const head = verify.ok ? `Verified ${verify.chains.length} ${verify.chains.length === 1 ? 'chain' : 'chains'} in ${verify.database}` : 'Verify failed';
  return `${head}. ${chains.join('; ')}.`;
}

/** The search a filter asks for, as the API's query string (times made ISO; the cursor last). */
function searchParams(filter, cursor) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(filter)) if (v) p.set(k, k === 'since' || k === 'until' ? new Date(v).toISOString() : v);
  if (cursor) p.set('cursor', cursor);
  return p;
}

const number = (n) => n.toLocaleString();

/** "Lines 101–200 of 10,000, newest first." */
function rangeText(page) {
  if (page.total === 0) return 'No lines match.';
  const from = page.newerCount + 1;
  const to = page.newerCount + page.entries.length;
  return `Lines ${number(from)}–${number(to)} of ${number(page.total)}, newest first.`;
}

/**
 * The audit viewer: the whole trail, a page at a time from the server. On the newest page new lines
 * arrive live (the console's event stream) unless paused; on any other page, or paused, they are
 * counted and one click shows them.
 */
export function AuditPage({ events }) {
  const [filter, setFilter] = useState(EMPTY_FILTER);
  /** The filter the page shows (what Search last applied): paging and export use it, not the half-typed one. */
  const [applied, setApplied] = useState(EMPTY_FILTER);
  const [cursor, setCursor] = useState(/** @type {any} */ (null));
  const [page, setPage] = useState(/** @type {any} */ (null));
  const [loading, setLoading] = useState(false);
  const [problem, setProblem] = useState('');
  const [verify, setVerify] = useState(/** @type {any} */ (null));
  const [paused, setPaused] = useState(false);
  const [fresh, setFresh] = useState(0);
  const asked = useRef(0);
  const load = (f = applied, c = cursor) => {
    const n = ++asked.current;
    setLoading(true);
    const p = searchParams(f, c);
    p.set('limit', String(PAGE_SIZE));
    return api(`/audit?${p}`).then(
      (r) => {
        if (n !== asked.current) return; // a later request's answer wins
        setPage(r);
        setProblem(r.restarted ? 'The trail changed under that page (it was replaced or cut): this is the newest page.' : '');
        if (r.restarted) setCursor(null);
        setLoading(false);
      },
      (err) => {
        if (n !== asked.current) return;
        setProblem(err.message);
        setLoading(false);
      },
    );
  };
  useEffect(() => {
    void load();
  }, []);
  // Read by the stream's listener when an entry arrives (a ref, so a pause takes effect at once, not after the next effect).
  const live = useRef(true);
  live.current = cursor === null && !paused;
  const reload = useRef(load);
  reload.current = load;
  useEffect(() => {
    if (!events) return undefined;
    let timer;
    const onAudit = (e) => {
      if (!live.current) {
        setFresh((n) => n + JSON.parse(e.data).length);
        return;
      }
      // A burst of calls reloads the page once, when it settles.
      clearTimeout(timer);
      timer = setTimeout(() => {
        if (live.current) void reload.current();
      }, LIVE_SETTLE_MS);
    };
    events.addEventListener('audit', onAudit);
    return () => {
      clearTimeout(timer);
      events.removeEventListener('audit', onAudit);
    };
  }, [events]);
  const go = (c) => {
    setCursor(c);
    setFresh(0);
    void load(applied, c);
  };
  const set = (k) => (e) => setFilter({ ...filter, [k]: e.currentTarget.value });
  const submit = (e) => {
    e.preventDefault();
    setApplied(filter);
    setCursor(null);
    setFresh(0);
    void load(filter, null);
  };
  const clear = () => {
    setFilter(EMPTY_FILTER);
    setApplied(EMPTY_FILTER);
    setCursor(null);
    setFresh(0);
    void load(EMPTY_FILTER, null);
  };
  const runVerify = () =>
    api('/audit/verify', { method: 'POST', body: {} }).then(setVerify, (err) => setVerify({ ok: false, problem: { message: err.message } }));
  const exportHref = `/ui/api/audit/export?${searchParams(applied, null)}`;
  const pager = (where) =>
    page &&
    page.total > 0 &&
    html`<nav class="pager" aria-label=${`Audit pages (${where})`}>
      <button type="button" onClick=${() => go(null)} disabled=${!page.newer}>Newest</button>
      <button type="button" onClick=${() => go(page.newer)} disabled=${!page.newer}>Newer</button>
      <button type="button" onClick=${() => go(page.older)} disabled=${!page.older}>Older</button>
      <button type="button" onClick=${() => go('oldest')} disabled=${!page.older}>Oldest</button>
    </nav>`;
  return html`<section aria-labelledby="audit-title">
    <div class="section-head">
      <h1 id="audit-title">Audit trail</h1>
      <div class="actions">
        <button type="button" aria-pressed=${paused ? 'true' : 'false'} onClick=${() => setPaused(!paused)}>
          ${paused ? 'Resume live updates' : 'Pause live updates'}
        </button>
        <a class="button" href=${exportHref} download>Export JSONL</a>
        <button type="button" onClick=${runVerify}>Verify the chain</button>
      </div>
    </div>
    <form class="filters" onSubmit=${submit} aria-label="Search the audit trail">
      <div class="field">
        <label for="f-tool">Tool</label><input id="f-tool" value=${filter.tool} onInput=${set('tool')} placeholder="vault_ or a whole name" />
      </div>
      <div class="field">
        <label for="f-caller">Caller</label><input id="f-caller" value=${filter.caller} onInput=${set('caller')} placeholder="agent, mcp, a client name" />
      </div>
      <div class="field">
        <label for="f-outcome">Outcome</label>
        <select id="f-outcome" value=${filter.outcome} onChange=${set('outcome')}>
          <option value="">any</option>
          <option value="ok">ok</option>
          <option value="error">failed</option>
          <option value="denied">denied</option>
        </select>
      </div>
      <div class="field">
        <label for="f-kind">Lines</label>
        <select id="f-kind" value=${filter.kind} onChange=${set('kind')}>
          <option value="">all</option>
          <option value="calls">tool calls</option>
          <option value="changes">settings changes</option>
          <option value="events">the log's own events</option>
        </select>
      </div>
      <div class="field">
        <label for="f-text">Words</label
        ><input id="f-text" type="search" value=${filter.text} onInput=${set('text')} placeholder="in arguments, results, errors" />
      </div>
      <div class="field"><label for="f-since">From</label><input id="f-since" type="datetime-local" value=${filter.since} onInput=${set('since')} /></div>
      <div class="field"><label for="f-until">To</label><input id="f-until" type="datetime-local" value=${filter.until} onInput=${set('until')} /></div>
      <div class="actions"><button type="submit" class="primary">Search</button><button type="button" onClick=${clear}>Clear</button></div>
    </form>
    ${verify && html`<p class=${verify.ok ? 'verify ok' : 'verify bad'} role="status">${verifyText(verify)}</p>`}
    ${problem && html`<p class="problem" role="alert">${problem}</p>`}
    <p class="range" role="status" aria-live="polite">
      ${page ? rangeText(page) : 'Loading…'} ${loading && page ? ' Loading…' : ''}
      ${
        fresh > 0 &&
        html` <button type="button" class="link" onClick=${() => go(null)}>${number(fresh)} new ${fresh === 1 ? 'line' : 'lines'}: show the newest</button>`
      }
      ${paused && fresh === 0 ? ' Live updates are paused.' : ''}
    </p>
    ${pager('top')}
    ${
      page &&
      page.entries.length > 0 &&
      html`<ol class="audit">
        ${page.entries.map((e) => html`<${AuditRow} key=${`${e.instance ?? ''}#${e.seq ?? e.id}`} entry=${e} />`)}
      </ol>`
    }
    ${page && page.entries.length > 20 && pager('bottom')}
  </section>`;
}
