/* global setInterval, clearInterval, window, document, EventSource, Notification */
// The Memo web console: the approvals inbox over the kernel's approval broker. Preact + htm as
// plain ES modules served by memo serve itself (no build step, no CDN): see the web console section of README.md.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { Preview } from './preview.js';
import { api, API } from './api.js';
import { ChatPage } from './chat.js';
import { Reminders } from './reminders.js';
import { offerUndo, permissionsChanged, RiskyButton, UndoBar } from './risky.js';
import { AuditPage, AuditRow, McpPage, PacksPage, PermissionsPage, ProvidersPage, unasked } from './admin.js';

const LABELS = {
  'allow-once': 'Allow once',
  'allow-conversation': 'Allow for this conversation',
  'allow-session': 'Allow for this session',
  'allow-forever': 'Always allow',
  'deny-once': 'Deny',
  'deny-forever': 'Always deny',
};

function callerText(caller) {
  const who = caller.id ? `${caller.kind} “${caller.id}”` : caller.kind;
  return caller.conversationId ? `${who}, conversation ${caller.conversationId.slice(0, 8)}` : who;
}

function remaining(ms) {
  if (ms <= 0) return 'expiring';
  const s = Math.ceil(ms / 1000);
  const m = Math.floor(s / 60);
  return m > 0 ? `${m} min ${String(s % 60).padStart(2, '0')} s` : `${s} s`;
}

/** Counts down from `expiresInMs` as the server measured it when it sent the request (the kernel's clock, not this browser's). */
function Countdown({ expiresAt, expiresInMs, receivedAt }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const left = expiresInMs - (now - receivedAt);
  return html`<span class=${left < 60_000 ? 'countdown urgent' : 'countdown'} title=${`expires at ${new Date(expiresAt).toLocaleTimeString()}`}
    >${remaining(left)} left</span
  >`;
}

/** The string argument a person would edit as a body of text, if the call has one. */
function bodyField(args) {
  for (const k of ['content', 'body', 'text', 'message']) if (typeof args?.[k] === 'string') return k;
  return null;
}

/** True when every argument is a string, number or boolean: a form fits. */
function fieldShaped(args) {
  return args && typeof args === 'object' && !Array.isArray(args) && Object.values(args).every((v) => ['string', 'number', 'boolean'].includes(typeof v));
}

/**
 * Edit before approve: a text box for a body, a form for field-shaped arguments, raw JSON for the
 * rest. Sending an edit is not an approval: the kernel validates and previews the edited call and
 * asks again (a new revision appears in the inbox).
 */
function Editor({ approval, onSend, onCancel }) {
  const args = approval.args ?? {};
  const [shape, setShape] = useState(fieldShaped(args) ? 'form' : 'json');
  const [values, setValues] = useState(() => ({ ...args }));
  const [raw, setRaw] = useState(() => JSON.stringify(args, null, 2));
  const [problem, setProblem] = useState('');
  const [newName, setNewName] = useState('');
  const [newValue, setNewValue] = useState('');
  const body = bodyField(args);
  // A field the agent left out (the preview may say "pass createDirs: true"): its value is JSON when it reads as JSON (true, 3, ["a"]), else text.
  const addField = () => {
    const name = newName.trim();
    if (!name) return setProblem('Name the field to add.');
    if (Object.hasOwn(values, name)) return setProblem(`${name} is already there: change it above.`);
    let value = newValue;
    try {
      value = JSON.parse(newValue);
    } catch {
      // Not JSON: the text as it is.
    }
    setValues({ ...values, [name]: value });
    setNewName('');
    setNewValue('');
    setProblem('');
  };
  const toJson = () => {
    setRaw(JSON.stringify(values, null, 2));
    setShape('json');
  };
  const submit = (e) => {
    e.preventDefault();
    if (shape === 'json') {
      try {
        const parsed = JSON.parse(raw);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('the arguments must be a JSON object');
        onSend(parsed);
      } catch (err) {
        setProblem(`Not valid: ${err.message}`);
      }
    } else onSend(values);
  };
  const id = (k) => `edit-${approval.id}-${k}`;
  return html`<form class="editor" onSubmit=${submit} aria-label=${`Edit the arguments of ${approval.tool}`}>
    ${
      shape === 'json'
        ? html`<label for=${id('raw')}>Arguments (JSON)</label>
            <textarea id=${id('raw')} rows="8" value=${raw} onInput=${(e) => setRaw(e.currentTarget.value)}></textarea>`
        : Object.entries(values).map(([k, v]) => {
            const set = (value) => setValues({ ...values, [k]: value });
            if (v !== null && typeof v === 'object')
              return html`<div class="field">
                <span class="label">${k}</span> <code>${JSON.stringify(v)}</code> <small>(Edit as JSON to change it)</small>
              </div>`;
            if (typeof v === 'boolean')
              return html`<div class="field check">
                <input type="checkbox" id=${id(k)} checked=${values[k]} onChange=${(e) => set(e.currentTarget.checked)} /><label for=${id(k)}>${k}</label>
              </div>`;
            if (typeof v === 'number')
              return html`<div class="field">
                <label for=${id(k)}>${k}</label><input type="number" id=${id(k)} value=${values[k]} onInput=${(e) => set(Number(e.currentTarget.value))} />
              </div>`;
            return k === body
              ? html`<div class="field">
                  <label for=${id(k)}>${k}</label><textarea id=${id(k)} rows="8" value=${values[k]} onInput=${(e) => set(e.currentTarget.value)}></textarea>
                </div>`
              : html`<div class="field">
                  <label for=${id(k)}>${k}</label><input type="text" id=${id(k)} value=${values[k]} onInput=${(e) => set(e.currentTarget.value)} />
                </div>`;
          })
    }
    ${
      shape === 'form' &&
      html`<fieldset class="add-field">
        <legend>Add a field the call does not have</legend>
        <label for=${id('new-name')}>Name</label>
        <input id=${id('new-name')} type="text" value=${newName} onInput=${(e) => setNewName(e.currentTarget.value)} />
        <label for=${id('new-value')}>Value (true, 3, "text" or any JSON; plain words are text)</label>
        <input id=${id('new-value')} type="text" value=${newValue} onInput=${(e) => setNewValue(e.currentTarget.value)} />
        <button type="button" onClick=${addField}>Add field</button>
      </fieldset>`
    }
    ${problem && html`<p class="problem" role="alert">${problem}</p>`}
    <div class="actions">
      <button type="submit" class="primary">Send edit for review</button>
      ${shape === 'form' && html`<button type="button" onClick=${toJson}>Edit as JSON</button>`}
      <button type="button" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}

const MAX_MINUTES = 525600;

function Answers({ approval, answer }) {
  const [minutes, setMinutes] = useState(30);
  // A whole number of minutes from 1 to a year: anything else is said here, never sent.
  const minutesOk = Number.isInteger(minutes) && minutes >= 1 && minutes <= MAX_MINUTES;
  const offered = approval.answers;
  const allows = offered.filter((a) => a.startsWith('allow-') && a !== 'allow-minutes:N');
  const denies = offered.filter((a) => a.startsWith('deny-'));
  return html`<div class="answers" role="group" aria-label=${`Answer ${approval.tool}`}>
    ${allows.map((a) =>
      a === 'allow-forever'
        ? html`<${RiskyButton}
            label=${LABELS[a]}
            question=${`Always allow ${approval.tool}? Every later call of it runs without asking, until you revoke it on the Permissions page.`}
            confirmLabel=${`Always allow ${approval.tool}`}
            onConfirm=${async () => {
              await answer(a);
              permissionsChanged();
              offerUndo(`${approval.tool} is always allowed`, async () => {
                await api(`/permissions/${encodeURIComponent(approval.tool)}/revoke`, { method: 'POST', body: {} });
                permissionsChanged();
              });
            }}
          />`
        : html`<button type="button" class=${a === 'allow-once' ? 'primary' : ''} onClick=${() => answer(a)}>${LABELS[a] ?? a}</button>`,
    )}
    ${
      offered.includes('allow-minutes:N') &&
      html`<span class="minutes">
        <label for=${`min-${approval.id}`}>Allow for</label>
        <input
          id=${`min-${approval.id}`}
          type="number"
          min="1"
          max=${MAX_MINUTES}
          step="1"
          value=${minutes}
          aria-invalid=${!minutesOk}
          aria-describedby=${minutesOk ? undefined : `min-problem-${approval.id}`}
          onInput=${(e) => setMinutes(e.currentTarget.value === '' ? NaN : Number(e.currentTarget.value))}
        />
        <span aria-hidden="true">min</span>
        <button type="button" disabled=${!minutesOk} onClick=${() => minutesOk && answer(`allow-minutes:${minutes}`)}>
          Allow ${minutesOk ? minutes : '…'} min
        </button>
        ${!minutesOk && html`<span class="problem" id=${`min-problem-${approval.id}`}>A whole number of minutes from 1 to ${MAX_MINUTES}.</span>`}
      </span>`
    }
    ${denies.map((a) => html`<button type="button" class="deny" onClick=${() => answer(a)}>${LABELS[a] ?? a}</button>`)}
  </div>`;
}

function ApprovalCard({ approval, selected, onSelect, onAnswering, announce, compact, checked, onCheck }) {
  const [editing, setEditing] = useState(false);
  const [busy, setBusy] = useState(false);
  const ref = useRef(null);
  const answer = async (reply) => {
    setBusy(true);
    // Said before the request goes: its `settled` event can arrive before this POST's response.
    const done = onAnswering(approval, typeof reply === 'string' ? 'answer' : 'edit');
    try {
      // The revision this page showed: an answer to a request edited since (elsewhere) is refused, not applied to the new one.
      const body = typeof reply === 'string' ? { answer: reply, revision: approval.revision } : { edit: reply, revision: approval.revision };
      await api(`/approvals/${encodeURIComponent(approval.id)}`, { method: 'POST', body });
      announce(typeof reply === 'string' ? `${approval.tool}: ${LABELS[reply] ?? reply}` : `${approval.tool}: edit sent; it will be asked again`);
      setEditing(false);
    } catch (err) {
      done(false);
      announce(`${approval.tool}: ${err.message}`);
    } finally {
      setBusy(false);
    }
  };
  // The key handler is registered once and reads the newest render's values: a handler that
  // closed over an older render could answer a request that is no longer the selected one.
  const latest = useRef({});
  latest.current = { selected, editing, busy, approval, answer };
  useEffect(() => {
    const onKey = (e) => {
      const { selected: on, editing: busyEditing, busy: sending, approval: a, answer: reply } = latest.current;
      // While its answer is on the way a request takes no second key (a repeated `d` must not reach the next one either).
      if (!on || busyEditing || sending || e.target.closest?.('input, textarea, select') || e.ctrlKey || e.metaKey || e.altKey) return;
      if (!a.answerable) return;
      if (e.key === 'a') void reply('allow-once');
      else if (e.key === 'd') void reply('deny-once');
      else if (e.key === 'e' && a.editable) setEditing(true);
      else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  const headingId = `h-${approval.id}`;
  // The kernel's facts as it laid them out (caller, revision, concern: escaped); the tool's own come with the preview.
  const kernelFacts = approval.display.facts.filter((f) => f.by === 'kernel' && f.label !== 'concern' && f.label !== 'edit refused');
  const concern = approval.display.facts.find((f) => f.by === 'kernel' && f.label === 'concern');
  const editProblem = approval.display.facts.find((f) => f.by === 'kernel' && f.label === 'edit refused');
  return html`<article
    ref=${ref}
    class=${`approval danger-${approval.danger}${selected ? ' selected' : ''}`}
    aria-labelledby=${headingId}
    aria-busy=${busy}
    data-tool=${approval.tool}
    data-id=${approval.id}
    onFocusIn=${(e) => e.target.classList?.contains('pick') || onSelect()}
    onClick=${onSelect}
  >
    <header>
      ${
        approval.answerable &&
        html`<input
          type="checkbox"
          class="pick"
          aria-label=${`Pick this ${approval.tool} request for an answer to several`}
          checked=${checked}
          onClick=${(e) => e.stopPropagation()}
          onChange=${(e) => onCheck(e.currentTarget.checked)}
        />`
      }
      <h2 id=${headingId}>${approval.tool} <span class="plugin">(${approval.plugin})</span></h2>
      <span class=${`badge ${approval.danger}`}>${approval.danger}</span>
      <span class="badge effect">${approval.effect}</span>
      <${Countdown} expiresAt=${approval.expiresAt} expiresInMs=${approval.expiresInMs} receivedAt=${approval.receivedAt} />
      ${compact && !selected && html`<button type="button" class="expand" onClick=${onSelect}>Show</button>`}
    </header>
    ${
      compact && !selected
        ? ''
        : html` <dl class="facts">
              ${kernelFacts.map(
                (f) =>
                  html`<dt>${f.label}</dt>
                    <dd>${f.value}</dd>`,
              )}
              ${
                approval.instance &&
                html`<dt>instance</dt>
                  <dd>${approval.instance}</dd>`
              }
            </dl>
            ${concern && html`<div class="concern" role="note"><strong>Judge: ask</strong> ${concern.value}</div>`}
            ${editProblem && html`<p class="problem" role="alert">The last edit was refused: ${editProblem.value}</p>`}
            <${Preview} preview=${approval.preview} display=${approval.display} />
            <details class="args" open=${!approval.preview}>
              <summary>Arguments (masked)${approval.preview ? '' : ': there is no preview, so here they are'}</summary>
              <pre>${JSON.stringify(approval.args, null, 2)}</pre>
            </details>
            ${
              approval.gone
                ? html`<p class="note" role="note">
                    Gone: the instance ${approval.instance} that asked this stopped before anyone answered. The call will not run, so it cannot be answered; it
                    leaves the list at its expiry.
                  </p>`
                : !approval.answerable
                  ? html`<p class="note">Asked by a <code>memo tools call</code> at its own terminal: it can be answered only there.</p>`
                  : editing
                    ? html`<${Editor} approval=${approval} onSend=${(args) => answer(args)} onCancel=${() => setEditing(false)} />`
                    : html`<div class="answer-row">
                        <${Answers} approval=${approval} answer=${answer} />
                        ${approval.editable && html`<button type="button" class="edit" onClick=${() => setEditing(true)}>Edit arguments…</button>`}
                      </div>`
            }`
    }
  </article>`;
}

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
  const [pending, setPending] = useState(null);
  // The selected request (keyOf), or null: nothing answers to a, d or e until j, k or a click picks one.
  const [selected, setSelected] = useState(null);
  const [quiet, setQuiet] = useState([]);
  // Requests that ended without an answer (expired, cancelled, nobody to ask): they did not run.
  const [ended, setEnded] = useState([]);
  // Requests this page is answering (id -> 'answer' | 'edit'): their `settled` or next revision is this page's doing.
  const answering = useRef(new Map());
  const nav = useRef({});
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
    api('/audit?limit=100').then(
      (r) => setQuiet(r.entries.filter(unasked).slice(-10)),
      () => {},
    );
    const onAudit = (e) => {
      const fresh = JSON.parse(e.data).filter(unasked);
      if (fresh.length) setQuiet((q) => [...q, ...fresh].slice(-10));
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

const PAGES = [
  ['#/', 'Approvals'],
  ['#/chat', 'Chat'],
  ['#/audit', 'Audit'],
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
  return PAGES.some(([h]) => h === route) ? route : '#/';
}

/** One event stream for the whole page: approvals and the audit tail. While it is open the broker counts as attended. */
function useEvents(active, onUnauthenticated) {
  const [source, setSource] = useState(null);
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
  const count = ids.size;
  useEffect(() => {
    document.title = count ? `(${count}) Memo console` : 'Memo console';
  }, [count]);
  return count;
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
  const [sandbox, setSandbox] = useState(null);
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
      ${state === 'in' && route === '#/audit' && html`<${AuditPage} events=${source} />`}
      ${state === 'in' && route === '#/packs' && html`<${PacksPage} announce=${announce} />`}
      ${state === 'in' && route === '#/permissions' && html`<${PermissionsPage} announce=${announce} />`}
      ${state === 'in' && route === '#/mcp' && html`<${McpPage} announce=${announce} />`}
      ${state === 'in' && route === '#/providers' && html`<${ProvidersPage} announce=${announce} />`}
    </main>
    <div class="status" role="status" aria-live="polite">${message}</div>
    ${state === 'in' && html`<${UndoBar} announce=${announce} />`}
  </div>`;
}

const root = document.getElementById('app');
// The static "Loading…" text goes: Preact renders into an empty element.
root.textContent = '';
render(html`<${App} />`, root);
