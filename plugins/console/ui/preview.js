// Previews as a person reads them: what the tool vouches for, then a diff with changed words
// marked, a table of field changes, what a delete would lose, and last what the caller wrote, quoted.
// The kernel lays each request out (ApprovalView.display, kernel/permissions/preview-format.ts): the
// tool's facts, the body's lines and the quoted text come escaped (a line break in a fact or a quote
// is a ⏎ mark, control characters are escapes), so nothing the model wrote can pass for a fact. The
// body's formats are the packs' (a unified diff, `field: before -> after` lines, a sentence for deletes).
import { html } from 'htm/preact';
import { imageOf } from './result-view.js';

/** Splits text into words and the spaces between them, so a diff can mark whole words. */
function tokens(text) {
  return text.match(/\s+|[^\s]+/g) ?? [];
}

/** Word-level diff of two lines: [{ op: '=', '-', '+', text }]. LCS over tokens, fine for lines of a note. */
export function wordDiff(before, after) {
  const a = tokens(before);
  const b = tokens(after);
  if (a.length * b.length > 250_000)
    return [
      { op: '-', text: before },
      { op: '+', text: after },
    ];
  const dp = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--) dp[i][j] = a[i] === b[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
  const out = [];
  const push = (op, text) => {
    const last = out[out.length - 1];
    if (last && last.op === op) last.text += text;
    else out.push({ op, text });
  };
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      push('=', a[i]);
      i++;
      j++;
    } else if (dp[i + 1][j] >= dp[i][j + 1]) push('-', a[i++]);
    else push('+', b[j++]);
  }
  while (i < a.length) push('-', a[i++]);
  while (j < b.length) push('+', b[j++]);
  return out;
}

/** A unified diff as rows: headers, hunks, context, and changed blocks (removed lines paired with added ones). */
export function parseUnifiedDiff(text) {
  const rows = [];
  const lines = text.replace(/\n$/, '').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.startsWith('--- ') || line.startsWith('+++ ') || line.startsWith('Index: ')) {
      rows.push({ type: 'file', text: line });
      i++;
    } else if (line.startsWith('@@')) {
      rows.push({ type: 'hunk', text: line });
      i++;
    } else if (line.startsWith('-') || line.startsWith('+')) {
      const removed = [];
      const added = [];
      while (i < lines.length && lines[i].startsWith('-') && !lines[i].startsWith('--- ')) removed.push(lines[i++].slice(1));
      while (i < lines.length && lines[i].startsWith('+') && !lines[i].startsWith('+++ ')) added.push(lines[i++].slice(1));
      rows.push({ type: 'change', removed, added });
    } else {
      rows.push({ type: line.startsWith(' ') ? 'context' : 'note', text: line.startsWith(' ') ? line.slice(1) : line });
      i++;
    }
  }
  return rows;
}

function Words({ parts, side }) {
  return parts
    .filter((p) => p.op === '=' || p.op === side)
    .map((p) => (p.op === '=' ? p.text : side === '-' ? html`<del>${p.text}</del>` : html`<ins>${p.text}</ins>`));
}

function ChangeBlock({ removed, added }) {
  // Lines paired one to one get word-level marks; the rest are whole-line removals or additions.
  const pairs = Math.min(removed.length, added.length);
  const rows = [];
  for (let k = 0; k < removed.length; k++) {
    const parts = k < pairs ? wordDiff(removed[k], added[k]) : [{ op: '-', text: removed[k] }];
    rows.push(
      html`<div class="diff-line removed">
        <span class="sign" aria-hidden="true">−</span><span class="sr-only">removed: </span><${Words} parts=${parts} side="-" />
      </div>`,
    );
  }
  for (let k = 0; k < added.length; k++) {
    const parts = k < pairs ? wordDiff(removed[k], added[k]) : [{ op: '+', text: added[k] }];
    rows.push(
      html`<div class="diff-line added">
        <span class="sign" aria-hidden="true">+</span><span class="sr-only">added: </span><${Words} parts=${parts} side="+" />
      </div>`,
    );
  }
  return html`<div class="diff-block" role="group" aria-label="changed block">${rows}</div>`;
}

function DiffPreview({ text }) {
  const rows = parseUnifiedDiff(text);
  return html`<div class="preview diff">
    ${rows.map((r) =>
      r.type === 'change'
        ? html`<${ChangeBlock} removed=${r.removed} added=${r.added} />`
        : html`<div class=${`diff-line ${r.type}`}>${r.type === 'context' ? html`<span class="sign" aria-hidden="true"> </span>` : null}${r.text}</div>`,
    )}
  </div>`;
}

/** `field: before -> after` lines (the packs write `(not set)` for a field without a value). */
export function parseFields(text) {
  const rows = [];
  const notes = [];
  for (const line of text.split('\n')) {
    const m = /^([^:]+): (.*) -> (.*)$/.exec(line);
    if (m) rows.push({ field: m[1], before: m[2], after: m[3] });
    else if (line.trim()) notes.push(line);
  }
  return { rows, notes };
}

function FieldValue({ value }) {
  if (value === '(not set)') return html`<span class="not-set">not set</span>`;
  if (value === '' || value === '""') return html`<span class="empty">empty</span>`;
  return html`<span>${value}</span>`;
}

function FieldsPreview({ text }) {
  const { rows, notes } = parseFields(text);
  if (!rows.length) return html`<pre class="preview text">${text}</pre>`;
  return html`<div class="preview fields">
    <table>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Now</th>
          <th scope="col">After</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (r) =>
            html`<tr>
              <th scope="row">${r.field}</th>
              <td class="before"><${FieldValue} value=${r.before} /></td>
              <td class="after"><${FieldValue} value=${r.after} /></td>
            </tr>`,
        )}
      </tbody>
    </table>
    ${notes.map((n) => html`<p class="note">${n}</p>`)}
  </div>`;
}

/** The picture a preview carries (a canvas drawing as it would look), beside its text. */
function PreviewImage({ preview }) {
  const url = imageOf(preview.image);
  if (!url) return null;
  return html`<figure class="preview image">
    <img class="result-image" src=${url} alt="How the canvas would look after this change" />
    <figcaption>After this change</figcaption>
  </figure>`;
}

/** Caller-written text: one quoted block, its label saying who wrote it; the ⏎ marks of line breaks set apart. */
function Quoted({ quote }) {
  const parts = quote.text.split('⏎');
  return html`<figure class="quoted">
    <figcaption>${quote.label}, written by ${quote.from} (quoted as written)</figcaption>
    <blockquote>
      ${parts.map((p, i) => (i === 0 ? p : html`<span class="mark" title="line break">⏎</span>${p}`))}${
        quote.more ? html` <span class="more">… (+${quote.more} chars)</span>` : null
      }
    </blockquote>
  </figure>`;
}

/** The tool's facts, the body, the quoted text, in that order (the kernel's facts are the card's). */
export function Preview({ preview, display }) {
  const facts = display.facts.filter((f) => f.by === 'tool');
  const body = display.body && { kind: display.body.kind, text: display.body.lines.join('\n') };
  if (!facts.length && !body && !display.quoted.length && !preview?.image) return html`<p class="preview none">No preview for this call.</p>`;
  return html`<div class="preview-parts">
    ${
      facts.length > 0 &&
      html`<dl class="facts tool-facts" aria-label="What the tool says this call does">
        ${facts.map(
          (f) =>
            html`<dt>${f.label}</dt>
              <dd>${f.value}</dd>`,
        )}
      </dl>`
    }
    ${preview?.image && html`<${PreviewImage} preview=${preview} />`} ${body && html`<${PreviewBody} preview=${body} />`}
    ${display.quoted.map((q) => html`<${Quoted} quote=${q} />`)}
  </div>`;
}

function PreviewBody({ preview }) {
  switch (preview.kind) {
    case 'diff':
      return html`<${DiffPreview} text=${preview.text} />`;
    case 'fields':
      return html`<${FieldsPreview} text=${preview.text} />`;
    case 'delete':
      return html`<div class="preview delete">
        <strong>What would be lost</strong>
        <pre>${preview.text}</pre>
      </div>`;
    case 'command':
      return html`<pre class="preview command">${preview.text}</pre>`;
    default:
      return html`<pre class="preview text">${preview.text}</pre>`;
  }
}
