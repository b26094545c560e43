/* global window, TextEncoder */
// Linked items: the chips and mentions of a reply, its sources list, and the item view each link
// opens (#/item/TYPE/ID): a note or journal entry with its markdown rendered, a task, an inbox item,
// an event, a project, a folder's entries, a canvas as its render. The view reads the item through
// the pack's own read tool (GET /api/items/TYPE/ID), as the tools would show it to an agent.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api, API } from './api.js';
import { itemHref, renderMarkdown, TYPE_ICONS, TYPE_NAMES } from './markdown.js';
import { NoteReview } from './review.js';

/** One item as a link: a chip (the turn cited it) or a mention; the item's own icon, else its type's. */
export function ItemLink({ item, chip = true }) {
  return html`<a
    class=${`item-link ${chip ? 'chip' : 'mention'}`}
    href=${itemHref(item.type, item.id)}
    data-type=${item.type}
    data-id=${item.id}
    title=${`${TYPE_NAMES[item.type]}: ${item.title}`}
    ><span class="item-icon" aria-hidden="true">${item.icon ?? TYPE_ICONS[item.type]}</span><span class="item-title">${item.title}</span></a
  >`;
}

/** "3 sources" with the first few icons, opening into the list: each row opens the item and names its type. */
export function Sources({ items }) {
  if (!items.length) return null;
  return html`<details class="sources">
    <summary>
      <span class="source-icons" aria-hidden="true">${items.slice(0, 3).map((i) => html`<span class="item-icon">${i.icon ?? TYPE_ICONS[i.type]}</span>`)}</span>
      ${items.length} ${items.length === 1 ? 'source' : 'sources'}
    </summary>
    <ul>
      ${items.map(
        (i) =>
          html`<li>
            <${ItemLink} item=${i} chip=${false} />
            <span class="source-type">${TYPE_NAMES[i.type]}</span>
          </li>`,
      )}
    </ul>
  </details>`;
}

function Field({ label, value }) {
  if (value === null || value === undefined || value === '' || (Array.isArray(value) && !value.length)) return null;
  return html`<div class="field-row">
    <dt>${label}</dt>
    <dd>${Array.isArray(value) ? value.join(', ') : String(value)}</dd>
  </div>`;
}

function Markdown({ text, label }) {
  return html`<div class="md note-body" aria-label=${label} dangerouslySetInnerHTML=${{ __html: renderMarkdown(text) }}></div>`;
}

/** `![[name.html]]`: an HTML artifact a note embeds (vault_add_html_artifact's file block). */
const ARTIFACT_EMBED = /!\[\[([^\]\n/]+?\.html)\]\]/gi;

/**
 * An HTML artifact in a sandboxed frame: its scripts run, https: resources load, but it has an
 * opaque origin (sandbox without allow-same-origin, and its own CSP's sandbox): it cannot read the
 * console's cookie, call its API with the session, or reach into this page.
 */
export function ArtifactFrame({ note, name }) {
  return html`<figure class="artifact">
    <iframe
      sandbox="allow-scripts"
      src=${`${API}/artifact?note=${encodeURIComponent(note)}&name=${encodeURIComponent(name)}`}
      title=${`HTML artifact ${name}`}
      referrerpolicy="no-referrer"
      loading="lazy"
    ></iframe>
    <figcaption>${name}: runs in a sandbox, apart from the vault and this console.</figcaption>
  </figure>`;
}

/** A note's text: its markdown rendered, and each HTML artifact it embeds in its frame, in place. */
function NoteText({ note, text, label }) {
  const parts = [];
  let last = 0;
  for (const m of text.matchAll(ARTIFACT_EMBED)) {
    parts.push({ md: text.slice(last, m.index) });
    parts.push({ artifact: m[1] });
    last = m.index + m[0].length;
  }
  parts.push({ md: text.slice(last) });
  return html`<div class="note-body" aria-label=${label}>
    ${parts.map((p) =>
      p.artifact
        ? html`<${ArtifactFrame} note=${note} name=${p.artifact} />`
        : p.md.trim() && html`<div class="md" dangerouslySetInnerHTML=${{ __html: renderMarkdown(p.md) }}></div>`,
    )}
  </div>`;
}

function Body({ view }) {
  const v = view.value ?? {};
  switch (view.type) {
    case 'note':
    case 'journal':
      return html`<p class="note">${v.path}</p>
        <${NoteText} note=${v.id ?? view.id} text=${v.content ?? ''} label="Note text" />`;
    case 'task':
      return html`<dl class="fields">
          <${Field} label="Status" value=${v.completed ? 'done' : (v.status_name ?? 'open')} />
          <${Field} label="Project" value=${v.project_name} />
          <${Field} label="Due" value=${[v.due_date, v.due_time].filter(Boolean).join(' ')} />
          <${Field} label="Priority" value=${v.priority || null} />
          <${Field} label="Tags" value=${v.tags} />
          <${Field} label="Reminder" value=${v.remind_at} />
        </dl>
        ${v.description && html`<${Markdown} text=${v.description} label="Task description" />`}`;
    case 'inbox':
      return html`<dl class="fields">
          <${Field} label="Link" value=${v.url} />
          <${Field} label="Tags" value=${v.tags} />
          <${Field} label="Snoozed until" value=${v.snoozed_until} />
          <${Field} label="Archived" value=${v.archived ? 'yes' : null} />
        </dl>
        <${Markdown} text=${v.content ?? ''} label="Inbox item text" />`;
    case 'event':
      return html`<dl class="fields">
          <${Field} label="Starts" value=${v.start} />
          <${Field} label="Ends" value=${v.end} />
          <${Field} label="Calendar" value=${v.calendar ?? v.source} />
          <${Field} label="Where" value=${v.location} />
        </dl>
        ${v.description && html`<${Markdown} text=${v.description} label="Event description" />`}`;
    case 'project':
      return html`<dl class="fields">
          <${Field} label="Tasks" value=${v.task_count} />
          <${Field} label="Open tasks" value=${v.open_task_count} />
          <${Field} label="Archived" value=${v.archived ? 'yes' : null} />
        </dl>
        ${v.description && html`<${Markdown} text=${v.description} label="Project description" />`}`;
    case 'folder':
      return html`<ul class="folder-entries">
        ${(v.entries ?? []).map(
          (e) =>
            html`<li>
              ${
                e.type === 'folder'
                  ? html`<${ItemLink} item=${{ type: 'folder', id: e.path, title: e.name }} chip=${false} />`
                  : e.id
                    ? html`<${ItemLink} item=${{ type: 'note', id: e.id, title: e.title ?? e.name }} chip=${false} />`
                    : html`<span>${e.name}</span>`
              }
            </li>`,
        )}
      </ul>`;
    case 'canvas':
      // The render is an image: an SVG shown by <img> runs no script.
      return html`<img
        class="canvas-render"
        alt=${`The canvas ${view.id}, rendered`}
        width=${v.width}
        height=${v.height}
        src=${`data:image/svg+xml;base64,${base64(v.data ?? '')}`}
      />`;
    default:
      return null;
  }
}

/** UTF-8 text as base64 (btoa takes bytes as Latin-1 characters). */
function base64(text) {
  let bin = '';
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return window.btoa(bin);
}

function titleOf(view) {
  const v = view.value ?? {};
  if (view.type === 'project') return v.name ?? view.id;
  if (view.type === 'canvas') return String(v.canvas ?? view.id).replace(/\.excalidraw$/, '');
  if (view.type === 'folder') return v.folder || view.id;
  return v.title ?? view.id;
}

function iconOf(view) {
  const v = view.value ?? {};
  return v.icon ?? v.front_matter?.icon ?? TYPE_ICONS[view.type];
}

/** A waiting request to change this note's or journal entry's body, if there is one. */
function pendingEdit(view, approvals) {
  if (!view || (view.type !== 'note' && view.type !== 'journal')) return null;
  const id = view.type === 'note' ? view.value?.id : view.id;
  return approvals.find((a) => a.answerable !== false && a.preview?.document?.type === view.type && a.preview.document.id === id) ?? null;
}

/** The item view: what #/item/TYPE/ID opens. A note or journal entry with an edit waiting shows the review in place of its text. */
export function ItemPage({ type, id, announce, events, back = { href: '#/chat', label: 'the chat' } }) {
  const [view, setView] = useState(/** @type {any} */ (null));
  const [problem, setProblem] = useState('');
  const [approvals, setApprovals] = useState(/** @type {any[]} */ ([]));
  /** Requests answered in this view: never shown again, whatever a list read a moment before says. */
  const gone = useRef(new Set());
  const waiting = (list) => list.filter((a) => !gone.current.has(a.id));
  const load = () => {
    api(`/items/${encodeURIComponent(type)}/${encodeURIComponent(id)}`).then(setView, (err) => setProblem(err.message));
    if (type === 'note' || type === 'journal')
      api('/approvals').then(
        (l) => setApprovals(waiting(l)),
        () => setApprovals([]),
      );
  };
  useEffect(() => {
    setView(null);
    setProblem('');
    load();
  }, [type, id]);
  // A request asked or answered elsewhere while the note is open: the view follows.
  useEffect(() => {
    if (!events || (type !== 'note' && type !== 'journal')) return undefined;
    const again = () =>
      api('/approvals').then(
        (l) => setApprovals(waiting(l)),
        () => undefined,
      );
    // A write of a note or journal entry finished (an accepted review's among them): its text is read again.
    const written = (e) => {
      const entries = JSON.parse(e.data);
      if (entries.some((a) => /^vault_(update_note|update_journal_entry|add_html_artifact)$/.test(a.tool))) load();
    };
    events.addEventListener('asked', again);
    events.addEventListener('settled', again);
    events.addEventListener('audit', written);
    return () => {
      events.removeEventListener('asked', again);
      events.removeEventListener('settled', again);
      events.removeEventListener('audit', written);
    };
  }, [events, type, id]);
  const edit = pendingEdit(view, approvals);
  return html`<section class="item-view" aria-labelledby="item-title" data-type=${type}>
    <p><a href=${back.href}>← Back to ${back.label}</a></p>
    ${
      problem &&
      html`<h1 id="item-title">${TYPE_NAMES[type] ?? 'Item'} not shown</h1>
        <p class="problem" role="alert">${problem}</p>`
    }
    ${!problem && !view && html`<p id="item-title">Loading…</p>`}
    ${
      view &&
      html`<div class="section-head">
          <h1 id="item-title"><span class="item-icon" aria-hidden="true">${iconOf(view)}</span> ${titleOf(view)}</h1>
          <span class="source-type">${TYPE_NAMES[view.type]}</span>
        </div>
        ${
          edit
            ? html`<${NoteReview}
                key=${`${edit.id}:${edit.revision}`}
                approval=${edit}
                announce=${announce ?? (() => {})}
                onAnswered=${(answered) => {
                  // The answered request leaves the view at once (the broker's list may still have it for a moment).
                  setApprovals((list) => list.filter((a) => a.id !== answered));
                  gone.current.add(answered);
                  load();
                }}
              />`
            : html`<${Body} view=${view} />`
        }
        <p class="note">Read with ${view.tool}, as the agent's tools read it.</p>`
    }
  </section>`;
}
