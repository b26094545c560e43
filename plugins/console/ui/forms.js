// Shared form components: fields made from a JSON Schema (settings, panel actions, providers) and the
// values they give the kernel.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from './api.js';
import { fieldLabel } from './labels.js';

/**
 * Inputs for the properties of a JSON Schema object: text, numbers with their bounds, switches,
 * choices (enum), JSON for the rest, each labelled by its `title` or its key in words. `showKeys`
 * shows each key beside its label (what `memo plugins config <pack> key=value` takes); `errors`
 * (problems by key) marks a field invalid and says why under it.
 */
export function SchemaFields({ schema, values, onChange, idPrefix, skip = [], secrets = [], placeholders = {}, showKeys = false, errors = {} }) {
  const props = schema?.properties ?? {};
  const required = new Set(schema?.required ?? []);
  return Object.entries(props)
    .filter(([k]) => !skip.includes(k))
    .map(([k, prop]) => {
      const id = `${idPrefix}-${k}`;
      const set = (v) => onChange({ ...values, [k]: v });
      const problem = typeof errors[k] === 'string' ? errors[k] : '';
      const help = prop.description ? html`<small id=${`${id}-help`}>${prop.description}</small>` : null;
      const wrong = problem ? html`<small class="field-problem" id=${`${id}-problem`}>${problem}</small>` : null;
      const key = showKeys ? html`<code class="key" id=${`${id}-key`}>${k}</code>` : null;
      const described = [problem && `${id}-problem`, prop.description && `${id}-help`, showKeys && `${id}-key`].filter(Boolean).join(' ') || undefined;
      const invalid = problem ? 'true' : undefined;
      const json = !['boolean', 'number', 'integer', 'string'].includes(prop.type) && !Array.isArray(prop.enum);
      const label = html`<label for=${id}
        >${fieldLabel(k, prop)}${json ? ' (JSON)' : ''}${required.has(k) ? html` <span aria-hidden="true">*</span>` : ''}</label
      >`;
      const name = html`<span class="field-name">${label}${key}</span>`;
      const cls = `field${problem ? ' invalid' : ''}`;
      if (prop.type === 'boolean')
        return html`<div class=${`${cls} check`}>
          <input
            type="checkbox"
            id=${id}
            aria-describedby=${described}
            aria-invalid=${invalid}
            checked=${values[k] === true}
            onChange=${(e) => set(e.currentTarget.checked)}
          />${name}${wrong}${help}
        </div>`;
      if (Array.isArray(prop.enum))
        return html`<div class=${cls}>
          ${name}<select id=${id} aria-describedby=${described} aria-invalid=${invalid} value=${values[k] ?? ''} onChange=${(e) => set(e.currentTarget.value)}>
            ${!required.has(k) && html`<option value="">(not set)</option>`} ${prop.enum.map((o) => html`<option value=${o}>${o}</option>`)}</select
          >${wrong}${help}
        </div>`;
      if (prop.type === 'number' || prop.type === 'integer')
        return html`<div class=${cls}>
          ${name}<input
            type="number"
            id=${id}
            aria-describedby=${described}
            aria-invalid=${invalid}
            required=${required.has(k)}
            value=${values[k] ?? ''}
            min=${prop.minimum}
            max=${prop.maximum}
            step=${prop.type === 'integer' ? 1 : 'any'}
            onInput=${(e) => set(e.currentTarget.value === '' ? undefined : Number(e.currentTarget.value))}
          />${wrong}${help}
        </div>`;
      if (prop.type === 'string')
        return html`<div class=${cls}>
          ${name}<input
            type=${values[k] === '[masked]' || secrets.includes(k) ? 'password' : 'text'}
            autocomplete=${secrets.includes(k) ? 'new-password' : undefined}
            placeholder=${placeholders[k]}
            id=${id}
            aria-describedby=${described}
            aria-invalid=${invalid}
            required=${required.has(k)}
            maxlength=${prop.maxLength}
            value=${values[k] ?? ''}
            onInput=${(e) => set(e.currentTarget.value)}
          />${wrong}${help}
        </div>`;
      return html`<div class=${cls}>
        ${name}<textarea
          id=${id}
          aria-describedby=${described}
          aria-invalid=${invalid}
          rows="3"
          value=${typeof values[k] === 'string' ? values[k] : JSON.stringify(values[k] ?? null)}
          onInput=${(e) => set(e.currentTarget.value)}
        ></textarea
        >${wrong}${help}
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
        throw Object.assign(new Error(`${k}: not valid JSON`), { fields: { [k]: 'is not valid JSON' } });
      }
    } else out[k] = v;
  }
  return out;
}

/**
 * A pack's settings form, generated from its `config` JSON Schema. The kernel is the one judge
 * (the form does not stop at the browser's own checks): what it refuses is shown under each field it
 * names, and the whole answer in an alert line.
 */
export function SettingsForm({ pack, onSaved }) {
  const [values, setValues] = useState(() => ({ ...(pack.config ?? {}) }));
  const [message, setMessage] = useState(/** @type {any} */ (null));
  const [errors, setErrors] = useState({});
  const form = useRef(/** @type {any} */ (null));
  useEffect(() => {
    // After a refusal, the first field it names takes the focus.
    if (Object.keys(errors).length > 0) form.current?.querySelector('[aria-invalid="true"]')?.focus();
  }, [errors]);
  const save = async (e) => {
    e.preventDefault();
    try {
      const changes = schemaValues(pack.configSchema, values, pack.config ?? {});
      await api(`/packs/${encodeURIComponent(pack.id)}/config`, { method: 'POST', body: { changes } });
      setErrors({});
      setMessage({ ok: true, text: 'Saved.' });
      onSaved();
    } catch (err) {
      setErrors(err.fields ?? {});
      setMessage({ ok: false, text: err.message });
    }
  };
  const change = (v) => {
    setMessage(null);
    // A field changed since the refusal is no longer marked (the others are, until the next save).
    setErrors((was) => Object.fromEntries(Object.entries(was).filter(([k]) => v[k] === values[k])));
    setValues(v);
  };
  return html`<form class="settings" ref=${form} novalidate onSubmit=${save} aria-label=${`Settings of ${pack.name}`}>
    <${SchemaFields} schema=${pack.configSchema} values=${values} onChange=${change} idPrefix=${`cfg-${pack.id}`} showKeys=${true} errors=${errors} />
    <div class="actions"><button type="submit" class="primary">Save settings</button>${message?.ok && html`<span role="status">${message.text}</span>`}</div>
    ${message && !message.ok && html`<p class="problem" role="alert">${message.text}</p>`}
  </form>`;
}
