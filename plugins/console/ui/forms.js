// Shared form components: fields made from a JSON Schema (settings, panel actions, providers) and the
// values they give the kernel.
import { useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from './api.js';

export function SchemaFields({ schema, values, onChange, idPrefix, skip = [], secrets = [], placeholders = {} }) {
  const props = schema?.properties ?? {};
  const required = new Set(schema?.required ?? []);
  return Object.entries(props)
    .filter(([k]) => !skip.includes(k))
    .map(([k, prop]) => {
      const id = `${idPrefix}-${k}`;
      const set = (v) => onChange({ ...values, [k]: v });
      const help = prop.description ? html`<small id=${`${id}-help`}>${prop.description}</small>` : null;
      const described = prop.description ? `${id}-help` : undefined;
      const label = html`<label for=${id}>${k}${required.has(k) ? html` <span aria-hidden="true">*</span>` : ''}</label>`;
      if (prop.type === 'boolean')
        return html`<div class="field check">
          <input
            type="checkbox"
            id=${id}
            aria-describedby=${described}
            checked=${values[k] === true}
            onChange=${(e) => set(e.currentTarget.checked)}
          />${label}${help}
        </div>`;
      if (Array.isArray(prop.enum))
        return html`<div class="field">
          ${label}<select id=${id} aria-describedby=${described} value=${values[k] ?? ''} onChange=${(e) => set(e.currentTarget.value)}>
            ${!required.has(k) && html`<option value="">(not set)</option>`} ${prop.enum.map((o) => html`<option value=${o}>${o}</option>`)}</select
          >${help}
        </div>`;
      if (prop.type === 'number' || prop.type === 'integer')
        return html`<div class="field">
          ${label}<input
            type="number"
            id=${id}
            aria-describedby=${described}
            required=${required.has(k)}
            value=${values[k] ?? ''}
            min=${prop.minimum}
            max=${prop.maximum}
            step=${prop.type === 'integer' ? 1 : 'any'}
            onInput=${(e) => set(e.currentTarget.value === '' ? undefined : Number(e.currentTarget.value))}
          />${help}
        </div>`;
      if (prop.type === 'string')
        return html`<div class="field">
          ${label}<input
            type=${values[k] === '[masked]' || secrets.includes(k) ? 'password' : 'text'}
            autocomplete=${secrets.includes(k) ? 'new-password' : undefined}
            placeholder=${placeholders[k]}
            id=${id}
            aria-describedby=${described}
            required=${required.has(k)}
            maxlength=${prop.maxLength}
            value=${values[k] ?? ''}
            onInput=${(e) => set(e.currentTarget.value)}
          />${help}
        </div>`;
      return html`<div class="field">
        <label for=${id}>${k} (JSON)</label
        ><textarea
          id=${id}
          aria-describedby=${described}
          rows="3"
          value=${typeof values[k] === 'string' ? values[k] : JSON.stringify(values[k] ?? null)}
          onInput=${(e) => set(e.currentTarget.value)}
        ></textarea
        >${help}
      </div>`;
    });
}

/** Values from SchemaFields as the kernel takes them: JSON fields parsed, unset ones left out. */
export function schemaValues(schema, values, unchanged = {}) {
  const out = {};
  for (const [k, prop] of Object.entries(schema?.properties ?? {})) {
    const v = values[k];
    if (v === undefined || v === unchanged[k] || (v === '' && Array.isArray(prop.enum))) continue;
    if (prop.type === 'object' || prop.type === 'array' || (!prop.type && typeof v === 'string')) {
      try {
        out[k] = typeof v === 'string' ? JSON.parse(v) : v;
      } catch {
        throw new Error(`${k}: not valid JSON`);
      }
    } else out[k] = v;
  }
  return out;
}

/** A pack's settings form, generated from its `config` JSON Schema; the kernel validates on save. */
export function SettingsForm({ pack, onSaved }) {
  const [values, setValues] = useState(() => ({ ...(pack.config ?? {}) }));
  const [message, setMessage] = useState('');
  const save = async (e) => {
    e.preventDefault();
    try {
      const changes = schemaValues(pack.configSchema, values, pack.config ?? {});
      await api(`/packs/${encodeURIComponent(pack.id)}/config`, { method: 'POST', body: { changes } });
      setMessage('Saved.');
      onSaved();
    } catch (err) {
      setMessage(err.message);
    }
  };
  const change = (v) => {
    setMessage('');
    setValues(v);
  };
  return html`<form class="settings" onSubmit=${save} aria-label=${`Settings of ${pack.name}`}>
    <${SchemaFields} schema=${pack.configSchema} values=${values} onChange=${change} idPrefix=${`cfg-${pack.id}`} />
    <div class="actions"><button type="submit" class="primary">Save settings</button>${message && html`<span role="status">${message}</span>`}</div>
  </form>`;
}
