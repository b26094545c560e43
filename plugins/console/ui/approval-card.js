/* global setInterval, clearInterval, window */
// One approval request as a card: its facts, preview, arguments and answers (with edit before
// approve). The approvals inbox lists them; a chat turn shows its own waiting request inline.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { itemHref } from './markdown.js';
import { Preview } from './preview.js';
import { api } from './api.js';
import { offerUndo, permissionsChanged, RiskyButton } from './risky.js';

const LABELS = {
  'allow-once': 'Allow once',
  'allow-conversation': 'Allow for this conversation',
  'allow-session': 'Allow for this session',
  'allow-forever': 'Always allow',
  'deny-once': 'Deny',
  'deny-forever': 'Always deny',
};

export function callerText(caller) {
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

export function ApprovalCard({ approval, selected, onSelect, onAnswering, announce, compact, checked, onCheck, pickable = true }) {
  const [editing, setEditing] = useState(false);
  const [busy, setBusy] = useState(false);
  const ref = useRef(/** @type {any} */ (null));
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
  const latest = useRef(/** @type {{ selected: boolean, editing: boolean, busy: boolean, approval: any, answer: (reply: string) => void }} */ ({}));
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
        pickable &&
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
            ${
              approval.preview?.document &&
              html`<p class="review-link">
                <a href=${itemHref(approval.preview.document.type, approval.preview.document.id)}
                  >${approval.preview.document.type === 'journal' ? 'Open journal' : 'Open note'} to review the change in place</a
                >
                (or answer here without looking).
              </p>`
            }
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
