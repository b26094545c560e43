// Packs' console panels, rendered from data (kernel/packs/console-panels.ts): actions run as tool calls
// through the pipeline, commands as the pack's CLI subcommands; no pack code reaches the browser.
import { useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from './api.js';
import { SchemaFields, schemaValues, SettingsForm } from './forms.js';
import { ResultView } from './result-view.js';

/** One action of a pack's panel: a form for the tool's arguments (the fixed ones left out), run as a tool call through the pipeline. */
function PanelAction({ panel, action }) {
  const [values, setValues] = useState({});
  const [state, setState] = useState('');
  const [result, setResult] = useState(undefined);
  const run = async (e) => {
    e.preventDefault();
    setResult(undefined);
    try {
      setState('Running… (a call that needs approval waits in the Approvals inbox)');
      const args = schemaValues(action.parameters, values);
      const r = await api(`/panels/${encodeURIComponent(panel.pack)}/${encodeURIComponent(panel.id)}/${encodeURIComponent(action.id)}`, {
        method: 'POST',
        body: { args },
      });
      // A short summary says what happened; a long one is the result itself, shown below.
      const told = r.ok && r.summary.length <= 160 && !/^[[{]/.test(r.summary);
      setState(r.ok ? (told ? `Done: ${r.summary}` : 'Done.') : `${r.error.code}: ${r.error.message}`);
      if (r.ok) setResult(r.value);
    } catch (err) {
      setState(err.message);
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
      ${state && html`<span role="status">${state}</span>`}
    </div>
    ${result !== undefined && html`<${ResultView} value=${result} label=${action.label} />`}
  </form>`;
}

export function PanelView({ panel, pack, reload }) {
  return html`<section class="panel" aria-labelledby=${`panel-${panel.pack}-${panel.id}`}>
    <h3 id=${`panel-${panel.pack}-${panel.id}`}>${panel.title}</h3>
    ${panel.description && html`<p class="note">${panel.description}</p>`}
    ${panel.settings && pack?.configSchema && html`<${SettingsForm} pack=${pack} onSaved=${reload} />`}
    ${(panel.actions ?? []).map((a) => html`<${PanelAction} key=${a.id} panel=${panel} action=${a} />`)}
    ${(panel.commands ?? []).map((c) => html`<${PanelAction} key=${c.id} panel=${panel} action=${c} />`)}
  </section>`;
}
