/* global window, document, Notification */
// Reminders the vault delivered: shown on every page until dismissed, each new one as it arrives on
// the event stream, and as a system notification when this tab is in the background (once the person
// turned browser notifications on here).
import { useEffect, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from './api.js';

const canNotify = () => typeof window !== 'undefined' && 'Notification' in window;

function when(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** A system notification for a reminder that arrived while the tab is hidden (the page shows it anyway). */
function notify(r) {
  if (!canNotify() || Notification.permission !== 'granted' || !document.hidden) return;
  try {
    // tag: one notification per reminder, even when two tabs of the console are open.
    new Notification(`Reminder: ${r.title}`, { body: r.note ?? '', tag: `memo-reminder-${r.id}` });
  } catch {
    // A browser that offers the API but refuses it here (some mobile ones): the page still shows it.
  }
}

export function Reminders({ source, announce }) {
  const [list, setList] = useState(/** @type {any[]} */ ([]));
  const [permission, setPermission] = useState(canNotify() ? Notification.permission : 'unsupported');
  // The list as the server has it: at load, and again each time the event stream (re)opens, so a
  // reminder delivered while it was down, or by another instance, is not missed.
  const refetch = () =>
    api('/reminders').then(
      (r) => setList(r.reminders ?? []),
      () => {},
    );
  useEffect(() => {
    void refetch();
  }, []);
  useEffect(() => {
    if (!source) return undefined;
    source.addEventListener('open', refetch);
    const on = (e) => {
      const r = JSON.parse(e.data);
      setList((now) => (now.some((x) => x.id === r.id) ? now : [r, ...now]));
      announce(`Reminder: ${r.title}`);
      notify(r);
    };
    source.addEventListener('reminder', on);
    return () => {
      source.removeEventListener('reminder', on);
      source.removeEventListener('open', refetch);
    };
  }, [source]);
  const dismiss = async (r) => {
    try {
      await api(`/reminders/${encodeURIComponent(r.id)}/dismiss`, { method: 'POST', body: {} });
    } catch (err) {
      if (err.status !== 404) return announce(`The reminder could not be dismissed: ${err.message}`);
    }
    setList((now) => now.filter((x) => x.id !== r.id));
  };
  const askPermission = async () => setPermission(await Notification.requestPermission());
  if (!list.length) return null;
  return html`<section class="reminders" aria-label="Reminders">
    <h2>Reminders</h2>
    <ul>
      ${list.map(
        (r) =>
          html`<li key=${r.id} class="reminder">
            <div>
              <strong>${r.title}</strong>
              ${r.note && html`<p>${r.note}</p>`}
              <small>
                due ${when(r.remind_at)}${r.late_minutes >= 5 ? html` · delivered ${when(r.delivered_at)} (Memo was not running when it fell due)` : ''}
              </small>
            </div>
            <button type="button" onClick=${() => dismiss(r)}>Dismiss</button>
          </li>`,
      )}
    </ul>
    ${permission === 'default' && html`<button type="button" class="secondary" onClick=${askPermission}>Also notify me when this tab is in the background</button>`}
  </section>`;
}
