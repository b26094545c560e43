/* global window */
// Reviewing an edit in the note (seed 003): when the agent asks to change the body of a note or a
// journal entry, the note's view shows the change in place: added words highlighted, removed words
// struck through, a bar at the start of each changed block, long unchanged runs collapsed. The bar
// at the bottom answers the request: Accept (as shown), Edit (an editable copy of the suggestion;
// Show changes compares it with the note as it is; Accept edits sends it through the same
// edit-before-approve flow as the inbox's Edit: the tool re-checks and previews it, then it is
// allowed), or Reject. The copy stays in this page until accepted.
import { useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { diffLines, diffWordsWithSpace } from 'diff';
import { api } from './api.js';
import { callerText } from './approval-card.js';

/** Unchanged runs longer than this many lines are collapsed to their first and last lines. */
const KEEP = 2;

/** The lines of `text` (a trailing newline makes no empty last line). */
function lines(text) {
  const out = text.split('\n');
  if (out.at(-1) === '') out.pop();
  return out;
}

/** The change as blocks: unchanged runs (collapsible), and changed blocks with word-level segments. */
export function reviewBlocks(before, after) {
  const parts = diffLines(before, after);
  const blocks = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (!p.added && !p.removed) {
      blocks.push({ kind: 'same', lines: lines(p.value) });
      continue;
    }
    // A removal followed by an addition is one changed block, diffed word by word.
    let removed = '';
    let added = '';
    while (i < parts.length && (parts[i].added || parts[i].removed)) {
      if (parts[i].removed) removed += parts[i].value;
      else added += parts[i].value;
      i++;
    }
    i--;
    blocks.push({ kind: 'changed', words: diffWordsWithSpace(removed, added) });
  }
  return blocks;
}

function Same({ block, index }) {
  const [open, setOpen] = useState(false);
  const n = block.lines.length;
  if (open || n <= KEEP * 2 + 1) return html`<pre class="same">${block.lines.join('\n')}</pre>`;
  return html`<pre class="same">${block.lines.slice(0, KEEP).join('\n')}</pre>
    <button type="button" class="quiet collapsed" aria-label=${`Show ${n - KEEP * 2} unchanged lines (run ${index + 1})`} onClick=${() => setOpen(true)}>
      ⋯ ${n - KEEP * 2} unchanged lines
    </button>
    <pre class="same">${block.lines.slice(-KEEP).join('\n')}</pre>`;
}

/** The note's text with the change drawn in place. */
export function ChangeView({ before, after, label }) {
  const blocks = reviewBlocks(before, after);
  const changed = blocks.filter((b) => b.kind === 'changed').length;
  return html`<div class="review-text" aria-label=${label}>
    ${changed === 0 && html`<p class="note">No change to the text.</p>`}
    ${blocks.map((b, i) =>
      b.kind === 'same'
        ? html`<${Same} key=${i} block=${b} index=${i} />`
        : html`<pre key=${i} class="changed">
${(b.words ?? []).map((w) => (w.added ? html`<ins>${w.value}</ins>` : w.removed ? html`<del>${w.value}</del>` : w.value))}</pre>`,
    )}
  </div>`;
}

/**
 * Waits until the request shows a revision after `revision` (an edit is checked and previewed again,
 * and the request is briefly out of the list meanwhile), then returns it; at most 30 s.
 */
async function nextRevision(id, revision) {
  const until = Date.now() + 30_000;
  let missingSince = null;
  while (Date.now() < until) {
    const list = await api('/approvals');
    const mine = list.find((a) => a.id === id);
    if (mine && mine.revision > revision) return mine;
    if (mine) missingSince = null;
    else if (missingSince === null) missingSince = Date.now();
    else if (Date.now() - missingSince > 5_000) throw new Error('The request is no longer waiting (answered elsewhere, or it expired).');
    await new Promise((r) => window.setTimeout(r, 100));
  }
  throw new Error('The edited request did not come back for approval within 30 s.');
}

/**
 * The review of one waiting note or journal edit: the change in place and the bar that answers it.
 * `onAnswered` is told when the request is answered here (the view then reads the note again).
 */
export function NoteReview({ approval, announce, onAnswered }) {
  const doc = approval.preview.document;
  const [editing, setEditing] = useState(false);
  const [copy, setCopy] = useState(doc.after);
  const [showChanges, setShowChanges] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState('');
  const kind = doc.type === 'journal' ? 'journal entry' : 'note';
  const run = async (what, work) => {
    setBusy(true);
    setProblem('');
    try {
      await work();
      announce(what);
      onAnswered(approval.id);
    } catch (err) {
      setProblem(err.message);
    } finally {
      setBusy(false);
    }
  };
  const reply = (answer, revision = approval.revision) => api(`/approvals/${encodeURIComponent(approval.id)}`, { method: 'POST', body: { answer, revision } });
  const accept = () => run(`Change to the ${kind} accepted.`, () => reply('allow-once'));
  const reject = () => run(`Change to the ${kind} rejected; the ${kind} is as it was.`, () => reply('deny-once'));
  const acceptEdits = () =>
    run(`Your edit of the ${kind} was applied.`, async () => {
      // The whole body as it stands in the copy: an append edited here is applied as the finished text.
      const args = doc.type === 'journal' ? { date: doc.id, content: copy } : { note: doc.id, content: copy };
      await api(`/approvals/${encodeURIComponent(approval.id)}`, { method: 'POST', body: { edit: args, revision: approval.revision } });
      const again = await nextRevision(approval.id, approval.revision);
      if (again.preview?.document?.after !== copy) throw new Error('The edited request came back with other text: look at it in the inbox.');
      await reply('allow-once', again.revision);
    });
  return html`<section class="note-review" aria-label=${`Review of the agent's change to this ${kind}`}>
    <p class="review-head" role="status">
      ${callerText(approval.caller)} asks to change this ${kind}. ${editing ? 'Your copy of the suggestion:' : 'The change, in place:'}
    </p>
    ${
      editing
        ? showChanges
          ? html`<${ChangeView} before=${doc.before} after=${copy} label="Your copy against the note as it is" />`
          : html`<label for="review-copy" class="sr-only">Your copy of the suggested text</label>
              <textarea id="review-copy" class="review-copy" rows="16" value=${copy} onInput=${(e) => setCopy(e.currentTarget.value)}></textarea>`
        : html`<${ChangeView} before=${doc.before} after=${doc.after} label="The suggested change" />`
    }
    ${problem && html`<p class="problem" role="alert">${problem}</p>`}
    <div class="review-bar">
      ${
        editing
          ? html`<button type="button" class="primary" disabled=${busy} onClick=${acceptEdits}>Accept edits</button>
              <button type="button" class="quiet" disabled=${busy} onClick=${() => setShowChanges((v) => !v)}>
                ${showChanges ? 'Edit the copy' : 'Show changes'}
              </button>
              <button type="button" class="quiet" disabled=${busy} onClick=${() => (setEditing(false), setShowChanges(false))}>Back to the suggestion</button>`
          : html`<button type="button" class="primary" disabled=${busy} onClick=${accept}>Accept</button>
              <button type="button" class="quiet" disabled=${busy} onClick=${() => setEditing(true)}>Edit</button>`
      }
      <button type="button" class="deny" disabled=${busy} onClick=${reject}>Reject</button>
    </div>
  </section>`;
}
