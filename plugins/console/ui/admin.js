/* global navigator, window */
// The console's administration pages: packs, stored permissions, the MCP endpoint and providers (the audit page: audit.js).
import { useEffect, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from './api.js';
import { offerUndo, permissionsChanged, RiskyButton } from './risky.js';
import { useSettingsChanged } from './live.js';
import { SchemaFields, schemaValues, SettingsForm } from './forms.js';
import { PanelView } from './panels.js';
import { CardTable } from './components.js';
import { addRule, ALLOW_FOR, allowForText, revokeRule } from './tools.js';

/** Packs whose disabling takes away tools most work needs: asked first, undone in a click. */
const CORE_PACKS = new Set(['fs-tools', 'shell']);

/** Which packs are open, by id: kept while the tab lives, so a pack opened stays open on coming back to the page. */
const openPacks = new Set();

/** "1 tool", "5 tools". */
const count = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A pack's error on its one summary line: the first line of it (the whole of it shows when the pack is open). */
const firstLine = (text) => String(text).split('\n')[0];

/**
 * One pack: a summary line (its name, the button that opens it, version, status, tool count, and
 * Enable/Disable named with the pack), and, open, its description, tools, settings and panels. A
 * load failure, or a newer version that did not load, shows even while it is closed.
 */
function PackCard({ pack, panels, open, onOpen, reload, announce }) {
  const [settingsOpen, setSettingsOpen] = useState(false);
  const set = (enabled) => api(`/packs/${encodeURIComponent(pack.id)}/${enabled ? 'enable' : 'disable'}`, { method: 'POST', body: {} });
  const toggle = async () => {
    const was = pack.enabled;
    try {
      await set(!was);
      announce(`${pack.name} ${was ? 'disabled' : 'enabled'}`);
      if (was && CORE_PACKS.has(pack.id))
        offerUndo(`${pack.name} is disabled`, async () => {
          await set(true);
          reload();
        });
      reload();
    } catch (err) {
      announce(err.message);
    }
  };
  // A panel that shows the settings form itself (panel.settings) replaces the Settings button.
  const panelSettings = pack.enabled && panels.some((p) => p.settings);
  const hasSettings = pack.status === 'loaded' && pack.configSchema && Object.keys(pack.configSchema.properties ?? {}).length > 0 && !panelSettings;
  const body = `pack-body-${pack.id}`;
  const failed = pack.status === 'failed';
  const switchLabel = `${pack.enabled ? 'Disable' : 'Enable'} ${pack.name}`;
  return html`<article class=${`pack ${pack.enabled ? '' : 'disabled'} ${open ? 'open' : ''}`} data-pack=${pack.id} aria-labelledby=${`p-${pack.id}`}>
    <header>
      <div class="pack-summary">
        <h2 id=${`p-${pack.id}`}>
          <button type="button" class="pack-toggle" aria-expanded=${open ? 'true' : 'false'} aria-controls=${body} onClick=${() => onOpen(!open)}>
            <span class="chevron" aria-hidden="true"></span>${pack.name}
          </button>
        </h2>
        ${pack.version && html`<span class="plugin">${pack.version}</span>`}
        <span class=${`badge ${failed ? 'dangerous' : 'effect'}`}>${failed ? 'failed to load' : pack.enabled ? 'enabled' : 'disabled'}</span>
        ${!failed && html`<span class="pack-count">${count(pack.tools.length, 'tool')}</span>`}
      </div>
      ${
        pack.status === 'loaded' &&
        (pack.enabled && CORE_PACKS.has(pack.id)
          ? html`<${RiskyButton}
              label="Disable"
              class="deny"
              ariaLabel=${switchLabel}
              question=${`Disable ${pack.name}? Agents and MCP clients lose its ${count(pack.tools.length, 'tool')} until it is enabled again.`}
              confirmLabel=${`Disable ${pack.name}`}
              onConfirm=${toggle}
            />`
          : html`<button type="button" class=${pack.enabled ? 'deny' : 'primary'} aria-label=${switchLabel} onClick=${toggle}>
              ${pack.enabled ? 'Disable' : 'Enable'}
            </button>`)
      }
    </header>
    ${!open && pack.error && html`<p class="problem pack-error">${firstLine(pack.error)}</p>`}
    ${!open && pack.reloadError && html`<p class="problem pack-error">Newest version did not load (the previous one runs): ${firstLine(pack.reloadError)}</p>`}
    <div id=${body} class="pack-body" hidden=${!open}>
      ${
        open &&
        html`${pack.description && html`<p class="note">${pack.description}</p>`} ${pack.error && html`<pre class="problem">${pack.error}</pre>`}
        ${pack.reloadError && html`<pre class="problem">Newest version did not load (the previous one runs): ${pack.reloadError}</pre>`}
        ${pack.tools.length > 0 && html`<p class="tools">${count(pack.tools.length, 'tool')}: ${pack.tools.map((t) => t.name).join(', ')}</p>`}
        ${
          hasSettings &&
          html`<button
              type="button"
              aria-expanded=${settingsOpen ? 'true' : 'false'}
              aria-label=${`${settingsOpen ? 'Hide settings' : 'Settings'} of ${pack.name}`}
              onClick=${() => setSettingsOpen(!settingsOpen)}
            >
              ${settingsOpen ? 'Hide settings' : 'Settings'}
            </button>
            ${settingsOpen && html`<${SettingsForm} pack=${pack} onSaved=${reload} />`}`
        }
        ${pack.enabled && panels.length > 0 && html`<p><a href=${`#/pack/${pack.id}`}>Open the pack's page: ${pack.name}</a></p>`}
        ${pack.enabled && panels.map((p) => html`<${PanelView} key=${p.id} panel=${p} pack=${pack} reload=${reload} />`)}`
      }
    </div>
  </article>`;
}

function SkillList({ skills }) {
  if (!skills.length) return html`<p>No skills loaded.</p>`;
  return html`<ul class="skills">
    ${skills.map(
      (k) =>
        html`<li class="pack" data-skill=${k.name}>
          <strong>${k.name}</strong>
          <span class=${`badge ${k.status === 'failed' ? 'dangerous' : 'effect'}`}>${k.status === 'failed' ? 'failed to load' : 'loaded'}</span>
          ${k.description && html`<p class="note">${k.description}</p>`}
          ${k.tools.length > 0 && html`<p class="tools">Command tools: ${k.tools.join(', ')}</p>`} ${k.error && html`<pre class="problem">${k.error}</pre>`}
          ${k.reloadError && html`<pre class="problem">Newest version did not load (the previous one is in force): ${k.reloadError}</pre>`}
        </li>`,
    )}
  </ul>`;
}

/** Whether a pack matches the search: its name, id, description or a tool's name holds every word. */
function matches(pack, words) {
  const text = `${pack.name} ${pack.id} ${pack.description ?? ''} ${pack.tools.map((t) => t.name).join(' ')}`.toLowerCase();
  return words.every((w) => text.includes(w));
}

export function PacksPage({ announce, events }) {
  const [packs, setPacks] = useState(/** @type {any} */ (null));
  const [panels, setPanels] = useState(/** @type {any[]} */ ([]));
  const [skills, setSkills] = useState(/** @type {any[]} */ ([]));
  const [query, setQuery] = useState('');
  const [open, setOpen] = useState(() => new Set(openPacks));
  const reload = () =>
    Promise.all([api('/packs'), api('/panels'), api('/skills')]).then(
      ([p, q, k]) => {
        setPacks(p);
        setPanels(q);
        setSkills(k);
      },
      (err) => announce(err.message),
    );
  useEffect(() => {
    void reload();
  }, []);
  useSettingsChanged(events, ['packs'], reload);
  const openOnly = (ids, on) => {
    for (const id of ids) {
      if (on) openPacks.add(id);
      else openPacks.delete(id);
    }
    setOpen(new Set(openPacks));
  };
  const words = query.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const shown = packs === null ? [] : packs.filter((p) => matches(p, words));
  const allOpen = shown.length > 0 && shown.every((p) => open.has(p.id));
  // Panels of packs registered in code (no card of their own), found by their pack or title.
  const loose =
    packs === null ? [] : panels.filter((q) => !packs.some((p) => p.id === q.pack) && words.every((w) => `${q.pack} ${q.title}`.toLowerCase().includes(w)));
  return html`<section aria-labelledby="packs-title">
    <div class="section-head"><h1 id="packs-title">Packs</h1></div>
    ${
      packs === null
        ? html`<p>Loading…</p>`
        : html`<div class="pack-tools">
              <form class="filters" role="search" aria-label="Find packs" onSubmit=${(e) => e.preventDefault()}>
                <div class="field">
                  <label for="packs-q">Search</label>
                  <input
                    id="packs-q"
                    type="search"
                    value=${query}
                    onInput=${(e) => setQuery(e.currentTarget.value)}
                    placeholder="name, what it does or a tool"
                  />
                </div>
              </form>
              <button
                type="button"
                disabled=${shown.length === 0}
                onClick=${() =>
                  openOnly(
                    shown.map((p) => p.id),
                    !allOpen,
                  )}
              >
                ${allOpen ? 'Close all' : 'Open all'}
              </button>
            </div>
            <p role="status" aria-live="polite" class="pack-total">
              ${shown.length === packs.length ? count(packs.length, 'pack') : `${shown.length} of ${count(packs.length, 'pack')}`}${
                words.length > 0 && shown.length === 0 ? ': none matches.' : '.'
              }
            </p>
            ${shown.map(
              (p) =>
                html`<${PackCard}
                  key=${p.id}
                  pack=${p}
                  panels=${panels.filter((q) => q.pack === p.id)}
                  open=${open.has(p.id)}
                  onOpen=${(on) => openOnly([p.id], on)}
                  reload=${reload}
                  announce=${announce}
                />`,
            )}
            ${loose.map(
              (q) =>
                html`<article class="pack" data-pack=${q.pack}>
                  <p class="plugin">Panel of ${q.pack}</p>
                  <${PanelView} panel=${q} pack=${null} reload=${reload} />
                </article>`,
            )}`
    }
    <h2 class="skills-title">Skills</h2>
    <${SkillList} skills=${skills} />
  </section>`;
}

/**
 * A rule added by hand: a tool (suggested from the Tools list), allow ahead (for how long) or deny;
 * the server applies `memo permissions allow|deny`'s limits and its refusal shows on the form.
 */
function AddRule({ announce, onAdded }) {
  const [tools, setTools] = useState(/** @type {any[]} */ ([]));
  const [tool, setTool] = useState('');
  const [decision, setDecision] = useState('allow');
  const [minutes, setMinutes] = useState('');
  const [problem, setProblem] = useState('');
  useEffect(() => {
    api('/tools').then(
      (r) => setTools(r.tools),
      () => {},
    );
  }, []);
  const submit = async (e) => {
    e.preventDefault();
    const name = tool.trim();
    if (!name) return setProblem('Name the tool (the list suggests them as you type).');
    try {
      await addRule(name, decision, decision === 'allow' ? minutes : '');
      setProblem('');
      setTool('');
      announce(decision === 'allow' ? `Allowed ${name} ${allowForText(minutes)}` : `Denied ${name} for every caller`);
      offerUndo(`${decision === 'allow' ? 'Allowed' : 'Denied'} ${name}`, () => revokeRule(name).then(onAdded));
      onAdded();
    } catch (err) {
      setProblem(err.message);
    }
  };
  return html`<form class="add-rule" onSubmit=${submit} aria-label="Add a rule">
    <div class="field">
      <label for="rule-tool">Tool</label>
      <input
        id="rule-tool"
        list="rule-tools"
        autocomplete="off"
        value=${tool}
        onInput=${(e) => setTool(e.currentTarget.value)}
        aria-invalid=${problem ? 'true' : undefined}
        aria-describedby=${problem ? 'rule-problem' : undefined}
      />
      <datalist id="rule-tools">${tools.map((t) => html`<option value=${t.name}>${t.pack}, ${t.danger}</option>`)}</datalist>
    </div>
    <div class="field">
      <label for="rule-decision">Rule</label>
      <select id="rule-decision" value=${decision} onChange=${(e) => setDecision(e.currentTarget.value)}>
        <option value="allow">Allow ahead of time</option>
        <option value="deny">Deny</option>
      </select>
    </div>
    ${
      decision === 'allow' &&
      html`<div class="field">
        <label for="rule-for">For</label>
        <select id="rule-for" value=${minutes} onChange=${(e) => setMinutes(e.currentTarget.value)}>
          ${ALLOW_FOR.map(([m, label]) => html`<option value=${m}>${label}</option>`)}
        </select>
      </div>`
    }
    <div class="actions"><button type="submit" class="primary">Add the rule</button></div>
    ${problem && html`<p id="rule-problem" class="problem" role="alert">${problem}</p>`}
  </form>`;
}

export function PermissionsPage({ announce, events }) {
  const [data, setData] = useState(/** @type {any} */ (null));
  const reload = () => api('/permissions').then(setData, (err) => announce(err.message));
  useEffect(() => {
    void reload();
  }, []);
  useSettingsChanged(events, ['permissions'], reload);
  // Turning on global always-allow or external writes is asked first (inline), then can be undone.
  const [confirming, setConfirming] = useState(/** @type {any} */ (null));
  const postAlways = (on) => api('/permissions/always-allow', { method: 'POST', body: { on } });
  const setAlways = async (on) => {
    setConfirming(null);
    // Shown at once; the reload below shows what the kernel stored (the old value if it refused).
    setData({ ...data, alwaysAllow: on });
    try {
      await postAlways(on);
      announce(`Global always-allow is ${on ? 'on' : 'off'}`);
      if (on)
        offerUndo('Global always-allow is on', async () => {
          await postAlways(false);
          permissionsChanged();
          void reload();
        });
      permissionsChanged();
      void reload();
    } catch (err) {
      announce(err.message);
    }
  };
  const setExternal = async (on, client) => {
    setConfirming(null);
    // Shown at once, as always-allow is; the reload below shows what the kernel stored.
    if (client === undefined) setData({ ...data, externalWrites: { ...data.externalWrites, all: on, clients: on ? data.externalWrites.clients : [] } });
    try {
      await api('/permissions/external-writes', { method: 'POST', body: client === undefined ? { on } : { on, client } });
      announce(`External writes ${on ? 'on' : 'off'} for ${client === undefined ? 'every external client' : `clients named ${client}`}`);
      if (on && client === undefined)
        offerUndo('Every external client may ask to write', async () => {
          await api('/permissions/external-writes', { method: 'POST', body: { on: false } });
          void reload();
        });
      void reload();
    } catch (err) {
      announce(err.message);
    }
  };
  const addClient = (e) => {
    e.preventDefault();
    const input = e.currentTarget.elements.namedItem('client');
    const name = input.value.trim();
    if (!name) return announce('Type the name the client declares (its clientInfo name), as the approvals inbox shows it.');
    input.value = '';
    void setExternal(true, name);
  };
  const revoke = async (tool) => {
    try {
      await api(`/permissions/${encodeURIComponent(tool)}/revoke`, { method: 'POST', body: {} });
      announce(`Revoked the stored decisions for ${tool}`);
      permissionsChanged();
      void reload();
    } catch (err) {
      announce(err.message);
    }
  };
  return html`<section aria-labelledby="perm-title">
    <div class="section-head"><h1 id="perm-title">Stored permissions</h1></div>
    ${
      data === null
        ? html`<p>Loading…</p>`
        : html`<div class="always-allow">
              <input
                type="checkbox"
                id="always-allow"
                aria-describedby="always-allow-help"
                checked=${data.alwaysAllow || confirming === 'always'}
                onChange=${(e) => (e.currentTarget.checked ? setConfirming('always') : setAlways(false))}
              />
              <label for="always-allow">Global always-allow</label>
              <small id="always-allow-help"
                >On: the agent's own turns and routines run medium and dangerous tools without asking. Never deletes, commands the judge cannot vouch for, or
                outside callers (MCP clients); a stored deny still refuses.</small
              >
              ${
                confirming === 'always' &&
                html`<span class="confirm" role="group" aria-label="Confirm: global always-allow">
                  <span class="confirm-question"
                    >Turn on global always-allow? Agent turns and routines will then run medium and dangerous tools without asking.</span
                  >
                  <button type="button" class="deny" onClick=${() => setAlways(true)}>Turn on always-allow</button>
                  <button type="button" onClick=${() => setConfirming(null)}>Cancel</button>
                </span>`
              }
            </div>
            <fieldset class="external-writes" aria-describedby="external-writes-help">
              <legend>External MCP clients</legend>
              <div>
                <input
                  type="checkbox"
                  id="external-writes-all"
                  checked=${data.externalWrites.all || confirming === 'external'}
                  onChange=${(e) => (e.currentTarget.checked ? setConfirming('external') : setExternal(false))}
                />
                <label for="external-writes-all">Every external client may ask to write</label>
                ${
                  confirming === 'external' &&
                  html`<span class="confirm" role="group" aria-label="Confirm: external writes">
                    <span class="confirm-question">Let every external MCP client ask to write? Each write still waits for your answer here.</span>
                    <button type="button" class="deny" onClick=${() => setExternal(true)}>Let them ask</button>
                    <button type="button" onClick=${() => setConfirming(null)}>Cancel</button>
                  </span>`
                }
              </div>
              <small id="external-writes-help"
                >Off by default: MCP clients (Claude Desktop, Cursor, ...) may use read tools only. On: each write they ask for waits here in Approvals, and
                runs only if you allow that one call; stored allows, session grants and always-allow never cover it. A client name is what the client says about
                itself: any client with a token can claim it, so it picks which clients may ask, not who is asking.</small
              >
              ${
                data.externalWrites.clients.length > 0 &&
                html`<ul class="external-clients">
                  ${data.externalWrites.clients.map(
                    (c) =>
                      html`<li data-client=${c}>
                        <code>${c}</code>
                        <button type="button" class="deny" onClick=${() => setExternal(false, c)} aria-label=${`Stop external writes for ${c}`}>Stop</button>
                      </li>`,
                  )}
                </ul>`
              }
              <form class="external-client" onSubmit=${addClient}>
                <label for="external-client-name">Only clients named</label>
                <input id="external-client-name" name="client" maxlength="64" autocomplete="off" placeholder="claude-ai" />
                <button type="submit">Let this name ask</button>
              </form>
            </fieldset>
            ${data.problem && html`<p class="problem" role="alert">${data.problem}</p>`}
            <${AddRule} announce=${announce} onAdded=${reload} />
            ${
              data.decisions.length === 0
                ? html`<p>No stored decisions: every medium or dangerous call is asked.</p>`
                : html`<${CardTable}
                    class="permissions"
                    rows=${data.decisions}
                    rowKey=${(d) => `${d.tool}/${d.scope}/${d.conversationId ?? ''}`}
                    rowAttrs=${(d) => ({ 'data-tool': d.tool })}
                    columns=${[
                      { label: 'Tool', cell: (d) => html`<code>${d.tool}</code>` },
                      { label: 'Decision', cell: (d) => d.decision },
                      {
                        label: 'Lasts',
                        cell: (d) =>
                          d.scope === 'forever'
                            ? 'until revoked'
                            : d.scope === 'until'
                              ? `until ${new Date(d.expiresAt).toLocaleString()}`
                              : `conversation ${d.conversationId?.slice(0, 8)}`,
                      },
                      { label: 'Given', cell: (d) => new Date(d.at).toLocaleString() },
                      {
                        label: '',
                        cell: (d) =>
                          d.decision === 'deny'
                            ? html`<${RiskyButton}
                                label="Revoke"
                                class="deny"
                                ariaLabel=${`Revoke ${d.tool}`}
                                question=${`Revoke the stored deny of ${d.tool}? Its calls are asked again, and may then be allowed.`}
                                confirmLabel="Revoke the deny"
                                onConfirm=${() => revoke(d.tool)}
                              />`
                            : html`<button type="button" class="deny" onClick=${() => revoke(d.tool)} aria-label=${`Revoke ${d.tool}`}>Revoke</button>`,
                      },
                    ]}
                  />`
            }`
    }
  </section>`;
}

function CopyButton({ text, label }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone(true);
    } catch {
      setDone(false);
    }
  };
  return html`<button type="button" onClick=${copy} aria-label=${label}>${done ? 'Copied' : 'Copy'}</button>`;
}

/** The MCP endpoint: its URL, client snippets (the token is a placeholder: it never comes to the page), and token rotation. */
export function McpPage({ announce }) {
  const [data, setData] = useState(/** @type {any} */ (null));
  const [rotated, setRotated] = useState('');
  useEffect(() => {
    api('/mcp').then(setData, (err) => announce(err.message));
  }, []);
  const rotate = async () => {
    if (!window.confirm('Rotate the MCP token? Every client using the current one stops working until it gets the new one.')) return;
    try {
      const r = await api('/mcp/rotate-token', { method: 'POST', body: {} });
      setRotated(r.message);
    } catch (err) {
      setRotated(err.message);
    }
  };
  return html`<section aria-labelledby="mcp-title">
    <div class="section-head"><h1 id="mcp-title">MCP endpoint</h1></div>
    ${
      data === null
        ? html`<p>Loading…</p>`
        : data.url === null
          ? html`<p>No MCP endpoint is attached.</p>`
          : html`<p class="endpoint"><code>${data.url}</code> <${CopyButton} text=${data.url} label="Copy the endpoint URL" /></p>
              <p class="note">The bearer token is printed where <code>memo serve</code> runs and changes every start; it is never shown here.</p>
              ${data.snippets.map(
                (s) =>
                  html`<div class="snippet">
                    <h2>${s.title}</h2>
                    <pre>${s.text}</pre>
                    <${CopyButton} text=${s.text} label=${`Copy: ${s.title}`} />
                  </div>`,
              )}
              <div class="actions"><button type="button" class="deny" onClick=${rotate}>Rotate the token</button></div>
              ${rotated && html`<p role="status">${rotated}</p>`}`
    }
  </section>`;
}

/**
 * Add or update a provider: the providers pack's own configure_provider schema as a form, checked
 * by the pack exactly as `memo provider add` is. The key field is write-only: a stored key is
 * never sent to the page, and an empty field keeps it.
 */
function ProviderForm({ form, editing, onSaved, onCancel }) {
  const start = () => {
    if (!editing) return { kind: 'openai-compatible' };
    const { apiKey: _key, active: _active, headers: _headers, local: _local, ...rest } = editing;
    return rest;
  };
  // Keyed by the provider edited (ProvidersPage): a new one starts the form afresh, filled at its first render.
  const [values, setValues] = useState(start);
  const [message, setMessage] = useState(/** @type {any} */ (null));
  const keySet = editing && editing.apiKey !== 'none';
  const save = async (e) => {
    e.preventDefault();
    try {
      const r = await api('/providers', { method: 'POST', body: schemaValues(form, values) });
      setMessage({ ok: true, text: `Saved ${r.provider.name}.${r.warnings.length ? ` ${r.warnings.join(' ')}` : ''}` });
      setValues({ kind: values.kind });
      onSaved(r.provider.name);
    } catch (err) {
      setMessage({ ok: false, text: err.message });
    }
  };
  return html`<form class="settings provider-form" onSubmit=${save} aria-labelledby="provider-form-title">
    <h2 id="provider-form-title">${editing ? `Update ${editing.name}` : 'Add a provider'}</h2>
    <${SchemaFields}
      schema=${form}
      values=${values}
      onChange=${(v) => (setMessage(null), setValues(v))}
      idPrefix="prov"
      secrets=${['apiKey']}
      placeholders=${keySet ? { apiKey: 'set (leave empty to keep it)' } : {}}
    />
    <div class="actions">
      <button type="submit" class="primary">${editing ? 'Save changes' : 'Add provider'}</button>
      ${editing && html`<button type="button" onClick=${onCancel}>Cancel</button>`}
    </div>
    ${message && html`<p class=${message.ok ? 'verify ok' : 'problem'} role=${message.ok ? 'status' : 'alert'}>${message.text}</p>`}
  </form>`;
}

/** Model providers: add, probe, switch and remove; keys masked (written, never read back). */
export function ProvidersPage({ announce, events }) {
  const [data, setData] = useState(/** @type {any} */ (null));
  const [editing, setEditing] = useState(/** @type {any} */ (null));
  const [probes, setProbes] = useState({});
  const reload = () => api('/providers').then(setData, (err) => announce(err.message));
  useEffect(() => {
    void reload();
  }, []);
  useSettingsChanged(events, ['providers'], reload);
  const use = async (name) => {
    try {
      await api(`/providers/${encodeURIComponent(name)}/use`, { method: 'POST', body: {} });
      announce(`The agent now uses ${name}`);
      void reload();
    } catch (err) {
      announce(err.message);
    }
  };
  const probe = async (name) => {
    setProbes({ ...probes, [name]: { busy: true } });
    try {
      const r = await api(`/providers/${encodeURIComponent(name)}/probe`, { method: 'POST', body: {} });
      setProbes((p) => ({ ...p, [name]: r }));
      announce(`${name}/${r.model}: ${r.toolCalling ? 'can call tools' : 'cannot call tools'}`);
    } catch (err) {
      setProbes((p) => ({ ...p, [name]: { toolCalling: false, reason: err.message } }));
    }
  };
  const remove = async (name) => {
    if (!window.confirm(`Remove the provider ${name}? A stored key is deleted with it.`)) return;
    try {
      await api(`/providers/${encodeURIComponent(name)}/remove`, { method: 'POST', body: {} });
      announce(`Removed ${name}`);
      if (editing?.name === name) setEditing(null);
      void reload();
    } catch (err) {
      announce(err.message);
    }
  };
  return html`<section aria-labelledby="prov-title">
    <div class="section-head"><h1 id="prov-title">Providers</h1></div>
    ${
      data === null
        ? html`<p>Loading…</p>`
        : data.providers.length === 0
          ? html`<p>No provider is configured yet.</p>`
          : html`<div class="table-wrap">
              <table class="permissions providers">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Model</th>
                    <th scope="col">Key</th>
                    <th scope="col"><span class="sr-only">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  ${data.providers.map((p) => {
                    const verdict = probes[p.name];
                    return html`<tr data-provider=${p.name}>
                      <th scope="row">${p.name}${p.active ? html` <span class="badge effect">active</span>` : ''}</th>
                      <td data-label="Kind">
                        ${p.kind}${p.preset ? ` (${p.preset})` : ''}${p.baseUrl ? html`<br /><code class="url">${p.baseUrl}</code>` : ''}
                      </td>
                      <td data-label="Model">${p.model ?? '—'}</td>
                      <td data-label="Key">${p.apiKey === '[stored, masked]' ? 'set' : p.apiKey}</td>
                      <td class="row-actions">
                        ${!p.active && html`<button type="button" onClick=${() => use(p.name)} aria-label=${`Use ${p.name}`}>Use</button>`}
                        <button type="button" onClick=${() => probe(p.name)} aria-label=${`Probe ${p.name}`} disabled=${verdict?.busy}>Probe</button>
                        ${data.form && html`<button type="button" onClick=${() => setEditing(p)} aria-label=${`Edit ${p.name}`}>Edit</button>`}
                        <button type="button" class="deny" onClick=${() => remove(p.name)} aria-label=${`Remove ${p.name}`}>Remove</button>
                        ${
                          verdict &&
                          !verdict.busy &&
                          html`<p class=${verdict.toolCalling ? 'verify ok' : 'verify bad'} role="status">
                            ${verdict.toolCalling ? 'Can call tools' : 'Cannot call tools'}: ${verdict.reason}
                          </p>`
                        }
                        ${verdict?.busy && html`<p role="status">Probing…</p>`}
                      </td>
                    </tr>`;
                  })}
                </tbody>
              </table>
            </div>`
    }
    ${
      data !== null &&
      (data.form
        ? html`<${ProviderForm}
            key=${editing?.name ?? ''}
            form=${data.form}
            editing=${editing}
            onSaved=${(name) => (setEditing(null), announce(`Saved ${name}`), reload())}
            onCancel=${() => setEditing(null)}
          />`
        : html`<p class="note">The providers pack is not loaded, so providers cannot be added here.</p>`)
    }
  </section>`;
}
