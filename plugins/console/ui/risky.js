/* global window */
// Risky one-click actions ask first, inline, and can be undone for a few seconds after: turning on
// global always-allow, "Always allow" on a request, letting external clients write, revoking a stored
// deny, disabling the file tools or the shell.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';

/** A button that asks before it acts: `question` and two buttons in its place until answered. */
export function RiskyButton({ label, question, confirmLabel, onConfirm, class: cls = '', ariaLabel }) {
  const [asking, setAsking] = useState(false);
  const confirmRef = useRef(/** @type {any} */ (null));
  useEffect(() => {
    if (asking) confirmRef.current?.focus();
  }, [asking]);
  if (!asking) return html`<button type="button" class=${cls} aria-label=${ariaLabel} onClick=${() => setAsking(true)}>${label}</button>`;
  return html`<span class="confirm" role="group" aria-label=${`Confirm: ${label}`}>
    <span class="confirm-question">${question}</span>
    <button
      type="button"
      class=${cls || 'primary'}
      ref=${confirmRef}
      onClick=${() => {
        setAsking(false);
        onConfirm();
      }}
    >
      ${confirmLabel}
    </button>
    <button type="button" onClick=${() => setAsking(false)}>Cancel</button>
  </span>`;
}

const UNDO_EVENT = 'memo-undo';
const UNDO_MS = 10_000;

/** Offers to undo what was just done, for ten seconds, in the bar at the bottom of every page. */
export function offerUndo(text, undo) {
  window.dispatchEvent(new window.CustomEvent(UNDO_EVENT, { detail: { text, undo } }));
}

/** Tells every page that the stored permissions changed (the always-allow banner reads them again). */
export function permissionsChanged() {
  window.dispatchEvent(new window.CustomEvent('memo-permissions'));
}

export function UndoBar({ announce }) {
  const [offer, setOffer] = useState(/** @type {any} */ (null));
  const timer = useRef(0);
  useEffect(() => {
    const on = (e) => {
      setOffer(e.detail);
      clearTimeout(timer.current);
      timer.current = setTimeout(() => setOffer(null), UNDO_MS);
    };
    window.addEventListener(UNDO_EVENT, on);
    return () => window.removeEventListener(UNDO_EVENT, on);
  }, []);
  if (!offer) return null;
  const undo = async () => {
    setOffer(null);
    try {
      await offer.undo();
      announce(`Undone: ${offer.text}`);
    } catch (err) {
      announce(`Could not undo: ${err.message}`);
    }
  };
  return html`<div class="undo-bar" role="group" aria-label="Undo" aria-live="polite">
    <span>${offer.text}</span>
    <button type="button" onClick=${undo}>Undo</button>
  </div>`;
}
