// The Tools page: every enabled tool, searchable, with its danger, effect, pack and the rule in force,
// and the rules a person may add from here (the same limits as `memo permissions allow|deny`).
import { useEffect, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from './api.js';
import { CardTable } from './components.js';
import { useSettingsChanged } from './live.js';
import { offerUndo, permissionsChanged } from './risky.js';

/** How long a standing allow lasts, as the page offers it (minutes; '' = until revoked). */
export const ALLOW_FOR = [
  ['', 'until revoked'],
  ['60', 'for 1 hour'],
  ['1440', 'for 1 day'],
  ['10080', 'for 1 week'],
];

/** The words for a duration ALLOW_FOR offers ('' = until revoked). */
export function allowForText(minutes) {
  return ALLOW_FOR.find(([m]) => m === minutes)?.[1] ?? `for ${minutes} minutes`;
}

/** Stores a rule through the console's API (as `memo permissions allow|deny`); resolves to what the server said. */
export async function addRule(tool, decision, minutes) {
  const body = { tool, decision, ...(minutes ? { minutes: Number(minutes) } : {}) };
  const r = await api('/permissions', { method: 'POST', body });
  permissionsChanged();
  return r;
}

export function revokeRule(tool) {
  return api(`/permissions/${encodeURIComponent(tool)}/revoke`, { method: 'POST', body: {} }).then((r) => {
    permissionsChanged();
    return r;
  });
}

/** Allow ahead: asks how long first (inline), then stores it. */
function AllowAhead({ tool, onDone, announce }) {
  const [open, setOpen] = useState(false);
  const [minutes, setMinutes] = useState('');
  if (!open) return html`<button type="button" onClick=${() => setOpen(true)} aria-label=${`Allow ${tool.name} ahead of time`}>Allow</button>`;
  const id = `allow-for-${tool.name}`;
  const confirm = async () => {
    try {
      await addRule(tool.name, 'allow', minutes);
      setOpen(false);
      announce(`Allowed ${tool.name} ${allowForText(minutes)}`);
      offerUndo(`Allowed ${tool.name}`, () => revokeRule(tool.name).then(onDone));
      onDone();
    } catch (err) {
      announce(err.message);
    }
  };
  return html`<span class="confirm" role="group" aria-label=${`Allow ${tool.name} ahead of time`}>
    <label for=${id}>For</label>
    <select id=${id} value=${minutes} onChange=${(e) => setMinutes(e.currentTarget.value)}>
      ${ALLOW_FOR.map(([m, label]) => html`<option value=${m}>${label}</option>`)}
    </select>
    <button type="button" class="deny" onClick=${confirm}>Allow ${tool.name}</button>
    <button type="button" onClick=${() => setOpen(false)}>Cancel</button>
  </span>`;
}

function ToolActions({ tool, reload, announce }) {
  const deny = async () => {
    try {
      await addRule(tool.name, 'deny');
      announce(`Denied ${tool.name} for every caller`);
      offerUndo(`Denied ${tool.name}`, () => revokeRule(tool.name).then(reload));
      reload();
    } catch (err) {
      announce(err.message);
    }
  };
  const revoke = async () => {
    try {
      await revokeRule(tool.name);
      announce(`Revoked the stored decisions for ${tool.name}`);
      reload();
    } catch (err) {
      announce(err.message);
    }
  };
  return html`<div class="row-actions">
    ${tool.canAllow && tool.rule === 'asked' && html`<${AllowAhead} tool=${tool} onDone=${reload} announce=${announce} />`}
    ${tool.rule !== 'denied' && html`<button type="button" class="deny" onClick=${deny} aria-label=${`Deny ${tool.name}`}>Deny</button>`}
    ${tool.stored && html`<button type="button" onClick=${revoke} aria-label=${`Revoke the rule for ${tool.name}`}>Revoke</button>`}
  </div>`;
}

const DANGERS = ['safe', 'medium', 'dangerous'];

export function ToolsPage({ announce, events }) {
  const [data, setData] = useState(/** @type {any} */ (null));
  const [query, setQuery] = useState('');
  const [pack, setPack] = useState('');
  const [danger, setDanger] = useState('');
  const reload = () => api('/tools').then(setData, (err) => announce(err.message));
  useEffect(() => {
    void reload();
  }, []);
  useSettingsChanged(events, ['permissions', 'packs'], reload);
  if (data === null)
    return html`<section aria-labelledby="tools-title">
      <div class="section-head"><h1 id="tools-title">Tools</h1></div>
      <p>Loading…</p>
    </section>`;
  const words = query.trim().toLowerCase();
  const shown = data.tools.filter(
    (t) => (!pack || t.pack === pack) && (!danger || t.danger === danger) && (!words || `${t.name} ${t.pack} ${t.description}`.toLowerCase().includes(words)),
  );
  const packs = [...new Set(data.tools.map((t) => t.pack))].sort();
  return html`<section aria-labelledby="tools-title">
    <div class="section-head"><h1 id="tools-title">Tools</h1></div>
    <p class="hint">
      Every tool the enabled packs and skills offer, and what happens when it is called. Allow ahead stores an answer for every caller (as
      <code>memo permissions allow</code>); deletes and tools asked every time take none. MCP clients may call read tools only, unless you let them ask to write
      (Permissions).
    </p>
    <form class="filters" role="search" aria-label="Find tools" onSubmit=${(e) => e.preventDefault()}>
      <div class="field">
        <label for="tools-q">Search</label>
        <input id="tools-q" type="search" value=${query} onInput=${(e) => setQuery(e.currentTarget.value)} placeholder="name, pack or what it does" />
      </div>
      <div class="field">
        <label for="tools-pack">Pack</label>
        <select id="tools-pack" value=${pack} onChange=${(e) => setPack(e.currentTarget.value)}>
          <option value="">all</option>
          ${packs.map((p) => html`<option value=${p}>${p}</option>`)}
        </select>
      </div>
      <div class="field">
        <label for="tools-danger">Danger</label>
        <select id="tools-danger" value=${danger} onChange=${(e) => setDanger(e.currentTarget.value)}>
          <option value="">any</option>
          ${DANGERS.map((d) => html`<option value=${d}>${d}</option>`)}
        </select>
      </div>
    </form>
    <p role="status" aria-live="polite">
      ${shown.length === data.tools.length ? `${data.tools.length} tools.` : `${shown.length} of ${data.tools.length} tools.`}
    </p>
    ${
      shown.length > 0 &&
      html`<${CardTable}
        class="tools"
        rows=${shown}
        rowKey=${(t) => t.name}
        rowAttrs=${(t) => ({ 'data-tool': t.name })}
        columns=${[
          { label: 'Tool', cell: (t) => html`<code>${t.name}</code><small class="tool-description">${t.description}</small>` },
          { label: 'Pack', cell: (t) => t.pack },
          { label: 'Danger', cell: (t) => html`<span class=${`danger ${t.danger}`}>${t.danger}</span>` },
          { label: 'Effect', cell: (t) => t.effect },
          { label: 'When called', class: 'rule', cell: (t) => html`<span class=${`rule-${t.rule}`}>${t.ruleText}</span>` },
          { label: '', cell: (t) => html`<${ToolActions} tool=${t} reload=${reload} announce=${announce} />` },
        ]}
      />`
    }
  </section>`;
}
