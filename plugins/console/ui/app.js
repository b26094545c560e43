/* global window, document, EventSource, Notification */
// The Memo web console: the approvals inbox over the kernel's approval broker. Preact + htm as
// plain ES modules served by memo serve itself (no build step, no CDN): see the web console section of README.md.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api, API } from './api.js';
import { ChatPage } from './chat.js';
import { ItemPage } from './items.js';
import { TYPE_NAMES } from './markdown.js';
import { Reminders } from './reminders.js';
import { permissionsChanged, UndoBar } from './risky.js';
import { McpPage, PacksPage, PermissionsPage, ProvidersPage } from './admin.js';
import { AuditPage, AuditRow, unasked } from './audit.js';
import { ToolsPage } from './tools.js';
import { PackPage } from './panels.js';
import { ApprovalCard, callerText } from './approval-card.js';

/** Requests grouped by caller, then tool: [{ key, caller, items }], groups in the order their first request came. */
function groupByCaller(list) {
  const groups = new Map();
  for (const a of list) {
    const key = `${a.caller.kind}:${a.caller.id ?? ''}`;
    if (!groups.has(key)) groups.set(key, { key, caller: a.caller, items: [] });
    groups.get(key).items.push(a);
  }
  for (const g of groups.values()) {
    const tools = [...new Set(g.items.map((a) => a.tool))];
    g.items = tools.flatMap((t) => g.items.filter((a) => a.tool === t));
  }
  return [...groups.values()];
}

/** A request's identity as the person saw it: an edit (here or elsewhere) makes a new revision, a new thing to look at. */
const keyOf = (a) => `${a.id}:${a.revision}`;

function Inbox({ source, connected, announce }) {
  const [pending, setPending] = useState(/** @type {any} */ (null));
  // The selected request (keyOf), or null: nothing answers to a, d or e until j, k or a click picks one.
  const [selected, setSelected] = useState(/** @type {any} */ (null));
  const [quiet, setQuiet] = useState(/** @type {any[]} */ ([]));
  // Requests that ended without an answer (expired, cancelled, nobody to ask): they did not run.
  const [ended, setEnded] = useState(/** @type {any[]} */ ([]));
  // Requests this page is answering (id -> 'answer' | 'edit'): their `settled` or next revision is this page's doing.
  const answering = useRef(new Map());
  const nav = useRef(/** @type {{ list: any[], selected: string | null, current: any }} */ ({ list: [], selected: null, current: null }));
  useEffect(() => {
    if (!source) return undefined;
    const stamp = (a) => ({ ...a, receivedAt: Date.now() });
    const onPending = (e) => setPending(JSON.parse(e.data).map(stamp));
    const onAsked = (e) => {
      const a = stamp(JSON.parse(e.data));
      const { selected: sel } = nav.current;
      if (sel && sel.startsWith(`${a.id}:`) && sel !== keyOf(a)) {
        // A new revision of the selected request: an edit sent from here keeps it selected; one from elsewhere is a new request to look at.
        if (answering.current.get(a.id) === 'edit') setSelected(keyOf(a));
        else {
          setSelected(null);
          announce(`The selected ${a.tool} request was edited elsewhere: look at it again (j / k to select).`);
        }
      }
      answering.current.delete(a.id);
      setPending((list) => [...(list ?? []).filter((p) => p.id !== a.id), a]);
      announce(`New request: ${a.tool} from ${callerText(a.caller)}`);
    };
    const onSettled = (e) => {
      const s = JSON.parse(e.data);
      const { list: all, selected: sel } = nav.current;
      const mine = answering.current.get(s.id) === 'answer';
      answering.current.delete(s.id);
      if (sel && sel.startsWith(`${s.id}:`)) {
        if (mine) {
          // Answered here: the next request below is selected (after the last one, the one above).
          const i = all.findIndex((p) => p.id === s.id);
          const next = all[i + 1] ?? all[i - 1];
          setSelected(next ? keyOf(next) : null);
        } else {
          // Answered elsewhere: nothing is selected until a key press, so no answer lands on a request nobody picked.
          setSelected(null);
          announce(`The selected request was answered elsewhere; nothing is selected now (j / k to select).`);
        }
      }
      if (s.outcome !== 'answered') {
        const gone = all.find((p) => p.id === s.id);
        if (gone) {
          const why = s.outcome === 'expired' ? 'expired unanswered' : s.outcome === 'cancelled' ? 'was withdrawn by its caller' : `ended (${s.outcome})`;
          setEnded((e) => [{ id: s.id, tool: gone.tool, caller: gone.caller, why, at: Date.now() }, ...e].slice(0, 10));
          announce(`${gone.tool} from ${callerText(gone.caller)} ${why}: it did not run.`);
        }
      }
      setPending((list) => (list ?? []).filter((p) => p.id !== s.id));
    };
    source.addEventListener('pending', onPending);
    source.addEventListener('asked', onAsked);
    source.addEventListener('settled', onSettled);
    // The stream sends the pending list when it opens; a page opened later asks for it.
    api('/approvals').then(
      (list) => setPending((now) => [...(now ?? []), ...list.filter((a) => !(now ?? []).some((n) => n.id === a.id)).map(stamp)]),
      () => {},
    );
    // Merged with what the stream brought meanwhile (the trail is read from disk, which takes a moment).
    api('/audit?kind=calls&limit=100').then(
      (r) => setQuiet((now) => mergeQuiet(r.entries.filter(unasked).reverse(), now)),
      () => {},
    );
    const onAudit = (e) => {
      const fresh = JSON.parse(e.data).filter(unasked);
      if (fresh.length) setQuiet((q) => mergeQuiet(q, fresh));
    };
    source.addEventListener('audit', onAudit);
    return () => {
      source.removeEventListener('pending', onPending);
      source.removeEventListener('asked', onAsked);
      source.removeEventListener('settled', onSettled);
      source.removeEventListener('audit', onAudit);
    };
  }, [source]);
  // Grouped by who asks (and then by tool), each group in the order its first request came: the order
  // on screen is the order j and k go through, and the one an answer's successor is taken from.
  const groups = groupByCaller(pending ?? []);
  const list = groups.flatMap((g) => g.items);
  const current = list.find((p) => keyOf(p) === selected) ?? null;
  nav.current = { list, current, selected };
  // Past three requests, each shows as one line until selected.
  const compact = list.length > 3;
  // Requests picked (checkboxes) for one answer to several; only those still waiting count.
  const [picked, setPicked] = useState(() => new Set());
  const pickedNow = list.filter((a) => picked.has(keyOf(a)) && a.answerable);
  const pick = (a, on) =>
    setPicked((now) => {
      const next = new Set(now);
      if (on) next.add(keyOf(a));
      else next.delete(keyOf(a));
      return next;
    });
  /** Answers several requests, each as shown (its revision), one POST each; says how many counted. */
  const answerMany = async (items, reply, what) => {
    let done = 0;
    const failed = [];
    for (const a of items) {
      answering.current.set(a.id, 'answer');
      try {
        await api(`/approvals/${encodeURIComponent(a.id)}`, { method: 'POST', body: { answer: reply, revision: a.revision } });
        done++;
      } catch (err) {
        answering.current.delete(a.id);
        failed.push(`${a.tool}: ${err.message}`);
      }
    }
    setPicked(new Set());
    announce(`${what}: ${done} of ${items.length}${failed.length ? `; not answered: ${failed.join('; ')}` : ''}`);
  };
  /** Called by a card as it sends an answer or an edit; the returned function says it failed. */
  const onAnswering = (a, kind) => {
    answering.current.set(a.id, kind);
    return (ok) => {
      if (!ok) answering.current.delete(a.id);
    };
  };
  useEffect(() => {
    // j / k move the selection between requests (the selected one answers to a, d, e); with none selected, j or k picks the first.
    const onKey = (e) => {
      if ((e.key !== 'j' && e.key !== 'k') || e.target.closest?.('input, textarea, select') || e.ctrlKey || e.metaKey || e.altKey) return;
      const { list: all, current: now } = nav.current;
      const i = all.findIndex((p) => p.id === now?.id);
      const next = i < 0 ? all[0] : all[Math.min(all.length - 1, Math.max(0, i + (e.key === 'j' ? 1 : -1)))];
      if (!next) return;
      e.preventDefault();
      setSelected(keyOf(next));
      document.getElementById(`h-${next.id}`)?.scrollIntoView({ block: 'nearest' });
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  return html`<section aria-labelledby="inbox-title">
    <div class="section-head">
      <h1 id="inbox-title">Approvals</h1>
      <span class=${connected ? 'live on' : 'live'}>${connected ? 'live' : 'connecting…'}</span>
      <${NotifyToggle} />
    </div>
    <p class="hint">
      Keyboard: <kbd>j</kbd> / <kbd>k</kbd> select the next / previous request; on the selected one <kbd>a</kbd> allow once, <kbd>d</kbd> deny,
      <kbd>e</kbd> edit.
    </p>
    ${
      pending === null && connected
        ? html`<p>Loading…</p>`
        : list.length === 0
          ? connected
            ? html`<p class="empty-inbox">
                Nothing is waiting for an answer. Requests from agent turns, routines and MCP clients appear here as they are asked.
              </p>`
            : html`<p class="empty-inbox">Not connected to memo serve: requests waiting now cannot be shown until it answers again.</p>`
          : html`${
              pickedNow.length > 0 &&
              html`<div class="bulk" role="group" aria-label="Picked requests">
                <span>${pickedNow.length} picked</span>
                <button type="button" class="primary" onClick=${() => answerMany(pickedNow, 'allow-once', 'Allowed once')}>
                  Allow once (${pickedNow.length})
                </button>
                <button type="button" class="deny" onClick=${() => answerMany(pickedNow, 'deny-once', 'Denied')}>Deny (${pickedNow.length})</button>
                <button type="button" onClick=${() => setPicked(new Set())}>Clear</button>
              </div>`
            }
            ${groups.map(
              (g) =>
                html`<section class="request-group" aria-label=${`Requests from ${callerText(g.caller)}`} key=${g.key}>
                  ${
                    (groups.length > 1 || compact) &&
                    html`<div class="group-head">
                      <h2>${callerText(g.caller)}: ${g.items.length} request${g.items.length === 1 ? '' : 's'}</h2>
                      ${
                        g.items.some((a) => a.answerable) &&
                        html`<button
                          type="button"
                          class="deny"
                          onClick=${() =>
                            answerMany(
                              g.items.filter((a) => a.answerable),
                              'deny-once',
                              `Denied every request from ${callerText(g.caller)}`,
                            )}
                        >
                          Deny all from this client
                        </button>`
                      }
                    </div>`
                  }
                  ${g.items.map(
                    (a) =>
                      html`<${ApprovalCard}
                        key=${`${a.id}:${a.revision}`}
                        approval=${a}
                        selected=${current !== null && keyOf(current) === keyOf(a)}
                        onSelect=${() => setSelected(keyOf(a))}
                        onAnswering=${onAnswering}
                        announce=${announce}
                        compact=${compact}
                        checked=${picked.has(keyOf(a))}
                        onCheck=${(on) => pick(a, on)}
                      />`,
                  )}
                </section>`,
            )}`
    }
    ${
      ended.length > 0 &&
      html`<h2 class="quiet-title">Ended without an answer</h2>
        <ul class="ended-list">
          ${ended.map((e) => html`<li key=${e.id}><code>${e.tool}</code> from ${callerText(e.caller)}: ${e.why} (${new Date(e.at).toLocaleTimeString()}); it did not run.</li>`)}
        </ul>`
    }
    ${
      quiet.length > 0 &&
      html`<h2 class="quiet-title">Ran without a question</h2>
        <ol class="audit quiet-list" reversed>
          ${[...quiet].reverse().map((e) => html`<${AuditRow} key=${e.seq ?? e.id} entry=${e} />`)}
        </ol>`
    }
  </section>`;
}

/** The newest ten of two lists of quiet calls, oldest first, each call once. */
function mergeQuiet(a, b) {
  const byKey = new Map();
  for (const e of [...a, ...b]) byKey.set(`${e.instance ?? ''}#${e.seq ?? e.id}`, e);
  return [...byKey.values()].sort((x, y) => Date.parse(x.ts) - Date.parse(y.ts) || (x.seq ?? 0) - (y.seq ?? 0)).slice(-10);
}

const PAGES = [
  ['#/', 'Approvals'],
  ['#/chat', 'Chat'],
  ['#/audit', 'Audit'],
  ['#/tools', 'Tools'],
  ['#/packs', 'Packs'],
  ['#/permissions', 'Permissions'],
  ['#/providers', 'Providers'],
  ['#/mcp', 'MCP'],
];

function useRoute() {
  const [route, setRoute] = useState(window.location.hash || '#/');
  useEffect(() => {
    const on = () => setRoute(window.location.hash || '#/');
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  if (/^#\/item\/[^/]+\/.+/.test(route) || packRoute(route)) return route;
  return PAGES.some(([h]) => h === route) ? route : '#/';
}

/** The pack id of a pack's page route (#/pack/ID), or null. */
function packRoute(route) {
  const m = /^#\/pack\/([a-z0-9-]{1,64})$/.exec(route);
  return m ? m[1] : null;
}

/** Where an item view's Back goes: the last page shown before it (the chat, a pack's page), by default the chat. */
let lastPage = { href: '#/chat', label: 'the chat' };

/** The type and id of an item view's route (#/item/TYPE/ID), or null. */
function itemRoute(route) {
  const m = /^#\/item\/([^/]+)\/(.+)$/.exec(route);
  if (!m) return null;
  try {
    return { type: m[1], id: decodeURIComponent(m[2]) };
  } catch {
    return null;
  }
}

/** One event stream for the whole page: approvals and the audit tail. While it is open the broker counts as attended. */
function useEvents(active, onUnauthenticated) {
  const [source, setSource] = useState(/** @type {any} */ (null));
  const [connected, setConnected] = useState(false);
  // memo serve does not answer at all (stopped, or the machine asleep): said on every page until it does.
  const [down, setDown] = useState(false);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    if (!active) return undefined;
    const es = new EventSource(`${API}/events`);
    let retry = 0;
    es.addEventListener('pending', () => {
      setConnected(true);
      setDown(false);
    });
    es.onerror = () => {
      setConnected(false);
      // A stream that ends at once is a session that ended: ask the server which.
      api('/session').then(
        () => {
          // The server answers but the stream closed: open a new one.
          if (es.readyState === 2) retry = setTimeout(() => setAttempt((n) => n + 1), 2000);
        },
        (err) => {
          if (err.status === 401) {
            es.close();
            onUnauthenticated();
            return;
          }
          if (err.status === undefined) setDown(true);
          // The browser retries an open stream by itself; a closed one is opened again here.
          if (es.readyState === 2) retry = setTimeout(() => setAttempt((n) => n + 1), 5000);
        },
      );
    };
    setSource(es);
    return () => {
      clearTimeout(retry);
      es.close();
    };
  }, [active, attempt]);
  return { source, connected, down, reconnect: () => setAttempt((n) => n + 1) };
}

/**
 * How many requests wait, for every page: the nav's badge, the tab's title (`(3) Memo console`), and a
 * system notification for each new one while the tab is in the background (once the person let it).
 */
function usePendingCount(source) {
  const [ids, setIds] = useState(() => new Set());
  useEffect(() => {
    if (!source) return undefined;
    const onPending = (e) => setIds(new Set(JSON.parse(e.data).map((a) => a.id)));
    const onAsked = (e) => {
      const a = JSON.parse(e.data);
      setIds((now) => new Set([...now, a.id]));
      if (typeof Notification !== 'undefined' && Notification.permission === 'granted' && document.hidden) {
        try {
          new Notification(`Memo asks: ${a.tool}`, { body: `from ${callerText(a.caller)}; answer it in the console`, tag: `memo-approval-${a.id}` });
        } catch {
          // Offered but refused here: the badge and the title still say it.
        }
      }
    };
    const onSettled = (e) => {
      const s = JSON.parse(e.data);
      setIds((now) => new Set([...now].filter((id) => id !== s.id)));
    };
    source.addEventListener('pending', onPending);
    source.addEventListener('asked', onAsked);
    source.addEventListener('settled', onSettled);
    return () => {
      source.removeEventListener('pending', onPending);
      source.removeEventListener('asked', onAsked);
      source.removeEventListener('settled', onSettled);
    };
  }, [source]);
  return ids.size;
}

/** Asks once, on a click, whether this browser may show system notifications (new requests, reminders) while the tab is hidden. */
function NotifyToggle() {
  const [permission, setPermission] = useState(typeof Notification === 'undefined' ? 'unsupported' : Notification.permission);
  if (permission !== 'default') return null;
  return html`<button type="button" class="secondary" onClick=${async () => setPermission(await Notification.requestPermission())}>
    Notify me when this tab is in the background
  </button>`;
}

/** While global always-allow is on, every page says so, with the switch to turn it off. */
function AlwaysAllowBanner({ route, announce }) {
  const [on, setOn] = useState(false);
  const load = () =>
    api('/permissions').then(
      (p) => setOn(p.alwaysAllow === true),
      () => {},
    );
  useEffect(() => {
    void load();
  }, [route]);
  useEffect(() => {
    window.addEventListener('memo-permissions', load);
    return () => window.removeEventListener('memo-permissions', load);
  }, []);
  if (!on) return null;
  const off = async () => {
    try {
      await api('/permissions/always-allow', { method: 'POST', body: { on: false } });
      announce('Global always-allow is off');
      permissionsChanged();
    } catch (err) {
      announce(err.message);
    }
  };
  return html`<p class="always-allow-on" role="note">
    Global always-allow is on: agent turns and routines run medium and dangerous tools without asking.
    <button type="button" class="deny" onClick=${off}>Turn it off</button>
  </p>`;
}

/** Where commands cannot run in the OS sandbox, every page says so (and whether they are refused or run judged only). */
function SandboxNotice() {
  const [sandbox, setSandbox] = useState(/** @type {any} */ (null));
  useEffect(() => {
    api('/sandbox').then(setSandbox, () => setSandbox(null));
  }, []);
  if (!sandbox || sandbox.available) return null;
  return html`<p class="problem" role="alert">${sandbox.line}</p>`;
}

function App() {
  const [state, setState] = useState('checking');
  const [message, setMessage] = useState('');
  const route = useRoute();
  const { source, connected, down, reconnect } = useEvents(state === 'in', () => setState('out'));
  const waiting = usePendingCount(source);
  // Each page its own title; waiting requests counted first, so a background tab shows them.
  useEffect(() => {
    const item = itemRoute(route);
    const pack = packRoute(route);
    const page = item ? (TYPE_NAMES[item.type] ?? 'Item') : pack ? `Pack ${pack}` : (PAGES.find(([h]) => h === route)?.[1] ?? 'Approvals');
    if (!item)
      lastPage = pack ? { href: route, label: `the ${pack} page` } : { href: route, label: `${page === 'Approvals' ? 'Approvals' : `the ${page} page`}` };
    document.title = `${waiting ? `(${waiting}) ` : ''}${page} · Memo console`;
  }, [waiting, route]);
  useEffect(() => {
    api('/session').then(
      () => setState('in'),
      (err) => setState(err.status === 401 ? 'out' : 'error'),
    );
  }, []);
  const logout = async () => {
    await api('/ui/logout', { method: 'POST', body: {} }).catch(() => {});
    setState('out');
  };
  const timer = useRef(0);
  const announce = (text) => {
    setMessage(text);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => setMessage(''), 5000);
  };
  return html`<div class="shell">
    <header class="top">
      <span class="brand">Memo console</span>
      ${
        state === 'in' &&
        html`<nav aria-label="Console">
          ${PAGES.map(
            ([h, label]) =>
              html`<a href=${h} aria-current=${route === h ? 'page' : undefined}
                >${label}${h === '#/' && waiting > 0 ? html` <span class="count" aria-label=${`${waiting} waiting`}>${waiting}</span>` : ''}</a
              >`,
          )}
        </nav>`
      }
      ${state === 'in' && html`<button type="button" class="logout" onClick=${logout}>Log out</button>`}
    </header>
    <main>
      ${
        state === 'in' &&
        down &&
        html`<p class="problem server-down" role="alert">
          memo serve is not answering (stopped, or this machine was asleep): nothing here is live. Trying again every few seconds.
          <button type="button" onClick=${reconnect}>Reconnect now</button>
        </p>`
      }
      ${state === 'in' && html`<${SandboxNotice} />`} ${state === 'in' && html`<${AlwaysAllowBanner} route=${route} announce=${announce} />`}
      ${state === 'in' && html`<${Reminders} source=${source} announce=${(t) => announce(t)} />`} ${state === 'checking' && html`<p>Checking your session…</p>`}
      ${
        state === 'out' &&
        html`<section class="signed-out">
          <h1>Not logged in</h1>
          <p>
            Open the console link <code>memo serve</code> printed when it started. Each link works once; <code>memo console link</code> prints a new one (the
            MCP token and its clients are not touched).
          </p>
        </section>`
      }
      ${state === 'error' && html`<p role="alert">The console could not reach memo serve.</p>`}
      ${state === 'in' && route === '#/' && html`<${Inbox} source=${source} connected=${connected} announce=${announce} />`}
      ${state === 'in' && route === '#/chat' && html`<${ChatPage} events=${source} announce=${announce} />`}
      ${state === 'in' && itemRoute(route) && html`<${ItemPage} ...${itemRoute(route)} announce=${announce} events=${source} back=${lastPage} />`}
      ${state === 'in' && packRoute(route) && html`<${PackPage} id=${packRoute(route)} announce=${announce} />`}
      ${state === 'in' && route === '#/audit' && html`<${AuditPage} events=${source} />`}
      ${state === 'in' && route === '#/tools' && html`<${ToolsPage} announce=${announce} events=${source} />`}
      ${state === 'in' && route === '#/packs' && html`<${PacksPage} announce=${announce} events=${source} />`}
      ${state === 'in' && route === '#/permissions' && html`<${PermissionsPage} announce=${announce} events=${source} />`}
      ${state === 'in' && route === '#/mcp' && html`<${McpPage} announce=${announce} />`}
      ${state === 'in' && route === '#/providers' && html`<${ProvidersPage} announce=${announce} events=${source} />`}
    </main>
    <div class="status" role="status" aria-live="polite">${message}</div>
    ${state === 'in' && html`<${UndoBar} announce=${announce} />`}
  </div>`;
}

const root = document.getElementById('app');
if (!root) throw new Error('index.html has no #app element');
// The static "Loading…" text goes: Preact renders into an empty element.
root.textContent = '';
render(html`<${App} />`, root);
