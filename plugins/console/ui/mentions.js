/* global window */
// The composer's @mention picker (seed 003): typing @ opens a list of notes, tasks, journal entries,
// inbox items and calendar events matching what follows it, with their item icons. The search waits
// for a pause in typing (one search for a long mention, not one per character), and only the answer
// to the last thing typed is shown: a slower answer to an earlier query is dropped. Choosing a result
// replaces the active @query with @Title, and the item goes with the message as a reference.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from './api.js';
import { TYPE_ICONS, TYPE_NAMES } from './markdown.js';

/** How long the picker waits after the last keystroke before it searches. */
export const MENTION_DEBOUNCE_MS = 250;

/** The @query the caret is in: `@` at the start or after a space, then up to 60 characters on one line. */
function activeQuery(text, caret) {
  const before = text.slice(0, caret);
  const m = /(?:^|\s)@([^\n@]{0,60})$/.exec(before);
  return m ? { query: m[1], start: caret - m[1].length - 1 } : null;
}

/**
 * The picker's state for a textarea holding `text`: `onInput`/`onKeyDown`/`onCaret` to wire to it,
 * the list to show, and the items picked so far.
 */
export function useMentionPicker(text, setText, announce) {
  const [active, setActive] = useState(/** @type {any} */ (null));
  const [results, setResults] = useState(/** @type {any[]} */ ([]));
  const [index, setIndex] = useState(0);
  const [picked, setPicked] = useState(/** @type {any[]} */ ([]));
  const seq = useRef(0);
  const timer = useRef(/** @type {number | undefined} */ (undefined));
  /** Where the caret goes once the text with a chosen mention is in the textarea. */
  const caretAfter = useRef(/** @type {any} */ (null));
  useLayoutEffect(() => {
    const c = caretAfter.current;
    if (!c) return;
    caretAfter.current = null;
    c.el.setSelectionRange(c.at, c.at);
  }, [text]);

  const search = (query) => {
    window.clearTimeout(timer.current);
    const mine = ++seq.current;
    timer.current = window.setTimeout(() => {
      api(`/mentions?q=${encodeURIComponent(query)}`).then(
        (r) => {
          // The answer to an earlier query that arrives late is not shown.
          if (mine !== seq.current) return;
          setResults(r.results);
          setIndex(0);
        },
        (err) => mine === seq.current && announce(err.message),
      );
    }, MENTION_DEBOUNCE_MS);
  };
  useEffect(() => () => window.clearTimeout(timer.current), []);

  const close = () => {
    seq.current++;
    window.clearTimeout(timer.current);
    setActive(null);
    setResults([]);
  };
  const onCaret = (el) => {
    const found = activeQuery(el.value, el.selectionStart ?? el.value.length);
    if (!found) return active && close();
    if (found.query === active?.query && found.start === active?.start) return undefined;
    setActive(found);
    search(found.query);
    return undefined;
  };
  const choose = (item, el) => {
    if (!active) return;
    const caret = el?.selectionStart ?? text.length;
    const next = `${text.slice(0, active.start)}@${item.title} ${text.slice(caret)}`;
    setText(next);
    setPicked((p) => (p.some((x) => x.type === item.type && x.id === item.id) ? p : [...p, item]));
    close();
    announce(`${TYPE_NAMES[item.type]} ${item.title} mentioned.`);
    if (el) caretAfter.current = { el, at: active.start + item.title.length + 2 };
  };
  /** True when the key was the picker's (the composer must not also act on it). */
  const onKeyDown = (e) => {
    if (!active || results.length === 0) {
      if (active && e.key === 'Escape') {
        close();
        return true;
      }
      return false;
    }
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      setIndex((i) => (i + (e.key === 'ArrowDown' ? 1 : results.length - 1)) % results.length);
    } else if (e.key === 'Enter' || e.key === 'Tab') choose(results[index], e.currentTarget);
    else if (e.key === 'Escape') close();
    else return false;
    e.preventDefault();
    return true;
  };
  /** The picked items still mentioned in `message` (one removed from the text is not sent). */
  const mentionsIn = (message) => picked.filter((p) => message.includes(`@${p.title}`)).map(({ type, id, title }) => ({ type, id, title }));
  return {
    open: Boolean(active),
    results,
    index,
    picked,
    onCaret,
    onKeyDown,
    choose,
    close,
    mentionsIn,
    unpick: (item) => setPicked((p) => p.filter((x) => !(x.type === item.type && x.id === item.id))),
    clear: () => setPicked([]),
  };
}

/** The list under the composer while an @query is active. */
export function MentionList({ picker, inputRef }) {
  if (!picker.open) return null;
  return html`<div class="mention-picker">
    ${
      picker.results.length === 0
        ? html`<p class="note" id="mention-list" role="status">Type a name to mention a note, task, journal entry, inbox item or event.</p>`
        : html`<ul id="mention-list" role="listbox" aria-label="Items to mention">
            ${picker.results.map(
              (r, i) =>
                html`<li
                  id=${`mention-${i}`}
                  role="option"
                  aria-selected=${i === picker.index ? 'true' : 'false'}
                  data-type=${r.type}
                  onMouseDown=${(e) => {
                    // Chosen before the textarea loses its focus.
                    e.preventDefault();
                    picker.choose(r, inputRef.current);
                  }}
                >
                  <span class="item-icon" aria-hidden="true">${r.icon ?? TYPE_ICONS[r.type]}</span>
                  <span class="item-title">${r.title}</span>
                  <span class="source-type">${TYPE_NAMES[r.type]}</span>
                </li>`,
            )}
          </ul>`
    }
  </div>`;
}

/** The items that go with the message, each removable. */
export function PickedMentions({ picker }) {
  if (!picker.picked.length) return null;
  return html`<ul class="picked-mentions" aria-label="Mentioned items">
    ${picker.picked.map(
      (p) =>
        html`<li class="item-link chip" data-type=${p.type}>
          <span class="item-icon" aria-hidden="true">${p.icon ?? TYPE_ICONS[p.type]}</span><span class="item-title">${p.title}</span>
          <button type="button" class="unpick" aria-label=${`Do not mention ${p.title}`} onClick=${() => picker.unpick(p)}>×</button>
        </li>`,
    )}
  </ul>`;
}
