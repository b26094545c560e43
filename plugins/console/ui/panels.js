/* global window */
// Packs' console panels, rendered from data (kernel/packs/console-panels.ts): actions run as tool calls
// through the pipeline, commands as the pack's CLI subcommands, lists as tables of a read tool's rows
// with each row's own buttons; no pack code reaches the browser. A pack's page (#/pack/ID) shows all
// of its panels.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from './api.js';
import { SchemaFields, schemaValues, SettingsForm } from './forms.js';
import { ItemLink } from './items.js';
import { CardTable } from './components.js';
import { ResultView } from './result-view.js';

/**
 * What each action and row action last said, kept while the console is open: going to another page
 * and back shows it again instead of losing it.
 */
const remembered = new Map();

/** A short summary says what happened; a long one is the result itself, shown below. */
function outcomeText(r) {
  if (!r.ok) return `${r.error.code}: ${r.error.message}`;
  const told = r.summary.length <= 160 && !/^[[{]/.test(r.summary);
  return told ? `Done: ${r.summary}` : 'Done.';
}

/**
 * One action of a pack's panel: a form for the tool's arguments (the fixed ones left out), run as a
 * tool call through the pipeline. With `refresh`, it runs again every so many seconds while shown,
 * until the result's `until` key is true (a pairing QR that is replaced until the phone is linked).
 */
function PanelAction({ panel, action }) {
  const key = `${panel.pack}/${panel.id}/${action.id}`;
  const [values, setValues] = useState({});
  const [said, setSaid] = useState(() => remembered.get(key) ?? { state: '', result: undefined });
  const timer = useRef(/** @type {number | undefined} */ (undefined));
  const say = (next) => {
    remembered.set(key, next);
    setSaid(next);
  };
  const call = async (args) => {
    const r = await api(`/panels/${encodeURIComponent(panel.pack)}/${encodeURIComponent(panel.id)}/${encodeURIComponent(action.id)}`, {
      method: 'POST',
      body: { args },
    });
    say({ state: outcomeText(r), result: r.ok ? r.value : undefined });
    const again = action.refresh && r.ok && !(action.refresh.until && r.value && r.value[action.refresh.until] === true);
    window.clearTimeout(timer.current);
    if (again) timer.current = window.setTimeout(() => void call(args).catch(() => {}), action.refresh.seconds * 1000);
  };
  useEffect(() => () => window.clearTimeout(timer.current), []);
  const run = async (e) => {
    e.preventDefault();
    try {
      say({ state: 'Running… (a call that needs approval waits in the Approvals inbox)', result: undefined });
      await call(schemaValues(action.parameters, values));
    } catch (err) {
      say({ state: err.message, result: undefined });
    }
  };
  return html`<form class="panel-action" onSubmit=${run} aria-label=${action.label}>
    <${SchemaFields}
      schema=${action.parameters}
      values=${values}
      onChange=${setValues}
      idPrefix=${`act-${panel.pack}-${panel.id}-${action.id}`}
      skip=${Object.keys(action.args ?? {})}
    />
    <div class="actions">
      <button type="submit" disabled=${!action.available}>${action.label}</button>
      ${said.state && html`<span role="status">${said.state}</span>`}
    </div>
    ${said.result !== undefined && html`<${ResultView} value=${said.result} label=${action.label} />`}
  </form>`;
}

/** YYYY-MM-DD of today plus `days`, in the person's own zone. */
function dayFromToday(days) {
  const d = new Date();
  d.setDate(d.getDate() + days);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

function Cell({ column, value, row }) {
  if (value === null || value === undefined || value === '') return html`<span class="muted">—</span>`;
  const itemId = column.itemId ? row[column.itemId] : value;
  if (column.item && (typeof itemId === 'string' || typeof itemId === 'number'))
    return html`<${ItemLink} item=${{ type: column.item, id: String(itemId), title: String(value) }} chip=${false} />`;
  if (column.time && (typeof value === 'string' || typeof value === 'number')) {
    const t = new Date(value);
    if (!Number.isNaN(t.getTime())) return html`<time datetime=${t.toISOString()}>${t.toLocaleString()}</time>`;
  }
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return String(value);
}

/** A row's name for its buttons' labels: its first column's value. */
const rowName = (list, row) => String(row[list.columns[0].key] ?? '');

/**
 * A list of a pack's panel: the pack's read tool run when shown (the person's search fields, the
 * declared dates, Refresh, and every `refreshSeconds`), its rows as a table (each a card on a phone),
 * each row with the list's actions.
 */
function PanelList({ panel, list }) {
  const base = `/panels/${encodeURIComponent(panel.pack)}/${encodeURIComponent(panel.id)}/lists/${encodeURIComponent(list.id)}`;
  const key = `${panel.pack}/${panel.id}/${list.id}`;
  const [fields, setFields] = useState({});
  const [data, setData] = useState(/** @type {any} */ (null));
  const [problem, setProblem] = useState('');
  const [said, setSaid] = useState(() => remembered.get(key) ?? null);
  const asked = useRef(0);
  const load = async (given = fields) => {
    const n = ++asked.current;
    const dates = Object.fromEntries(Object.entries(list.dates ?? {}).map(([k, days]) => [k, dayFromToday(days)]));
    try {
      const r = await api(base, { method: 'POST', body: { fields: given, dates } });
      if (n !== asked.current) return;
      if (r.ok) {
        setData(r);
        setProblem('');
      } else setProblem(`${r.error.code}: ${r.error.message}`);
    } catch (err) {
      if (n === asked.current) setProblem(err.message);
    }
  };
  useEffect(() => {
    if (!list.available) return undefined;
    void load();
    if (!list.refreshSeconds) return undefined;
    const t = window.setInterval(() => void load(), list.refreshSeconds * 1000);
    return () => window.clearInterval(t);
  }, []);
  const act = async (action, row) => {
    const name = rowName(list, row);
    const note = (state, result) => {
      const next = { action: action.label, row: name, state, result };
      remembered.set(key, next);
      setSaid(next);
    };
    note('Running… (a call that needs approval waits in the Approvals inbox)');
    try {
      const r = await api(`${base}/actions/${encodeURIComponent(action.id)}`, { method: 'POST', body: { row } });
      note(outcomeText(r), r.ok ? r.value : undefined);
      void load();
    } catch (err) {
      note(err.message);
    }
  };
  const id = `list-${panel.pack}-${panel.id}-${list.id}`;
  const hasFields = Object.keys(list.parameters?.properties ?? {}).length > 0;
  return html`<section class="panel-list" aria-labelledby=${id}>
    <h4 id=${id}>${list.title}</h4>
    <form
      class="filters"
      role=${hasFields ? 'search' : undefined}
      aria-label=${list.title}
      onSubmit=${(e) => {
        e.preventDefault();
        void load();
      }}
    >
      ${hasFields && html`<${SchemaFields} schema=${list.parameters} values=${fields} onChange=${setFields} idPrefix=${id} />`}
      <div class="actions">
        <button type="submit" disabled=${!list.available} aria-label=${`${hasFields ? 'Search' : 'Refresh'} ${list.title}`}>
          ${hasFields ? 'Search' : 'Refresh'}
        </button>
      </div>
    </form>
    ${!list.available && html`<p class="note">${list.tool} is not available (its pack is disabled?).</p>`}
    ${problem && html`<p class="problem" role="alert">${problem}</p>`}
    ${
      data &&
      (data.rows.length === 0
        ? html`<p class="note" role="status">${list.empty ?? 'Nothing to show.'}</p>`
        : html`<p class="note" role="status">
              ${data.total > data.rows.length ? `${data.rows.length} of ${data.total} shown.` : `${data.total} ${data.total === 1 ? 'row' : 'rows'}.`}
            </p>
            <${CardTable}
              class="panel-rows"
              label=${list.title}
              rows=${data.rows}
              rowKey=${(_row, i) => i}
              columns=${[
                ...list.columns.map((c) => ({ label: c.label, cell: (row) => html`<${Cell} column=${c} value=${row[c.key]} row=${row} />` })),
                ...((list.rowActions ?? []).length > 0
                  ? [
                      {
                        label: '',
                        class: 'row-actions',
                        cell: (row) =>
                          list.rowActions.map(
                            (a) =>
                              html`<button type="button" onClick=${() => act(a, row)} aria-label=${`${a.label}: ${rowName(list, row)}`}>${a.label}</button>`,
                          ),
                      },
                    ]
                  : []),
              ]}
            />`)
    }
    ${
      said &&
      html`<div class="list-outcome">
        <p role="status"><strong>${said.action}</strong> (${said.row}): ${said.state}</p>
        ${said.result !== undefined && html`<${ResultView} value=${said.result} label=${`${said.action}: ${said.row}`} />`}
      </div>`
    }
  </section>`;
}

export function PanelView({ panel, pack, reload }) {
  return html`<section class="panel" aria-labelledby=${`panel-${panel.pack}-${panel.id}`}>
    <h3 id=${`panel-${panel.pack}-${panel.id}`}>${panel.title}</h3>
    ${panel.description && html`<p class="note">${panel.description}</p>`}
    ${panel.settings && pack?.configSchema && html`<${SettingsForm} pack=${pack} onSaved=${reload} />`}
    ${(panel.lists ?? []).map((l) => html`<${PanelList} key=${l.id} panel=${panel} list=${l} />`)}
    ${(panel.actions ?? []).map((a) => html`<${PanelAction} key=${a.id} panel=${panel} action=${a} />`)}
    ${(panel.commands ?? []).map((c) => html`<${PanelAction} key=${c.id} panel=${panel} action=${c} />`)}
  </section>`;
}

/** A pack's own page (#/pack/ID): its description, state and every panel it contributes. */
export function PackPage({ id, announce }) {
  const [pack, setPack] = useState(/** @type {any} */ (undefined));
  const [panels, setPanels] = useState(/** @type {any[]} */ ([]));
  const reload = () =>
    Promise.all([api('/packs'), api('/panels')]).then(
      ([packs, all]) => {
        const own = all.filter((p) => p.pack === id);
        // A pack a host registers in code is not a folder's: no state of its own, but its panels are shown.
        setPack(packs.find((p) => p.id === id) ?? (own.length ? { id, name: id, status: 'loaded', enabled: true, description: null } : null));
        setPanels(own);
      },
      (err) => announce(err.message),
    );
  useEffect(() => {
    void reload();
  }, [id]);
  if (pack === undefined) return html`<section><p>Loading…</p></section>`;
  if (pack === null)
    return html`<section aria-labelledby="pack-title">
      <h1 id="pack-title">No such pack</h1>
      <p>There is no pack “${id}”. <a href="#/packs">All packs</a></p>
    </section>`;
  return html`<section aria-labelledby="pack-title" class="pack-page">
    <p><a href="#/packs">← All packs</a></p>
    <div class="section-head">
      <h1 id="pack-title">${pack.name}</h1>
      <span class=${`badge ${pack.status === 'failed' ? 'dangerous' : 'effect'}`}
        >${pack.status === 'failed' ? 'failed to load' : pack.enabled ? 'enabled' : 'disabled'}</span
      >
    </div>
    ${pack.description && html`<p class="note">${pack.description}</p>`}
    ${!pack.enabled && html`<p class="note">Enable the pack on the Packs page to use its panels.</p>`}
    ${pack.enabled && panels.length === 0 && html`<p class="note">This pack has no console panels.</p>`}
    ${pack.enabled && panels.map((p) => html`<${PanelView} key=${p.id} panel=${p} pack=${pack} reload=${reload} />`)}
  </section>`;
}
