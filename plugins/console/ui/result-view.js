/* global btoa, TextEncoder */
// A tool's result as a person reads it: images a pack returns (a QR, a rendered canvas) shown as
// images, lists of records as tables, the rest as JSON. Only data is rendered: an image is an
// <img> of a data: URL (an SVG there runs no script), never markup put into the page.
import { html } from 'htm/preact';

const IMAGE_URL = /^data:image\/(png|svg\+xml);base64,[A-Za-z0-9+/]+={0,2}$/;

function svgUrl(svg) {
  const bytes = new TextEncoder().encode(svg);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return `data:image/svg+xml;base64,${btoa(bin)}`;
}

/** The image a value stands for (a PNG or SVG data: URL, or an SVG document), or null. */
export function imageOf(value) {
  if (typeof value !== 'string') return null;
  if (IMAGE_URL.test(value)) return value;
  const text = value.trim();
  if (text.startsWith('<svg') && text.endsWith('</svg>')) return svgUrl(text);
  return null;
}

/** The images in a result's top-level fields: [{ key, url }]. */
function imagesIn(value) {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return [];
  return Object.entries(value)
    .map(([key, v]) => ({ key, url: imageOf(v) }))
    .filter((x) => x.url);
}

function cell(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'object') {
    const text = JSON.stringify(v);
    return text.length > 80 ? `${text.slice(0, 77)}…` : text;
  }
  return String(v);
}

function Table({ rows, label }) {
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))].slice(0, 7);
  // Focusable: a region that scrolls sideways must be reachable by keyboard.
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label=${`${label} (table)`}>
    <table class="permissions result-table" aria-label=${label}>
      <thead>
        <tr>
          ${keys.map((k) => html`<th scope="col">${k}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (r) =>
            html`<tr>
              ${keys.map((k) => html`<td>${cell(r[k])}</td>`)}
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

/** A tool result's value: images, then the first list of records as a table, then the whole value as JSON (folded when there was more to show). */
export function ResultView({ value, label }) {
  const images = imagesIn(value);
  const records = (v) => Array.isArray(v) && v.length > 0 && v.every((x) => x && typeof x === 'object' && !Array.isArray(x));
  const lists = records(value)
    ? [['rows', value]]
    : value && typeof value === 'object' && !Array.isArray(value)
      ? Object.entries(value).filter(([, v]) => records(v))
      : [];
  const shown = images.length > 0 || lists.length > 0;
  const rest =
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, imageOf(v) ? '(image shown above)' : v]))
      : value;
  // Beside a picture or a table, the short facts of the result (its status, what to do) stay in view.
  const facts =
    shown && value && typeof value === 'object' && !Array.isArray(value)
      ? Object.entries(value).filter(([, v]) => ['string', 'number', 'boolean'].includes(typeof v) && !imageOf(v) && String(v).length <= 300)
      : [];
  return html`<div class="result-view">
    ${
      facts.length > 0 &&
      html`<dl class="facts">
        ${facts.map(
          ([k, v]) =>
            html`<dt>${k}</dt>
              <dd>${String(v)}</dd>`,
        )}
      </dl>`
    }
    ${images.map((i) => html`<img class="result-image" src=${i.url} alt=${`${label}: ${i.key}`} />`)}
    ${lists.map(([k, rows]) => html`<${Table} rows=${rows} label=${`${label}: ${k}`} />`)}
    ${
      shown
        ? html`<details class="args">
            <summary>Whole result (JSON)</summary>
            <pre>${JSON.stringify(rest, null, 2)}</pre>
          </details>`
        : // Scrolls when long: focusable, so a keyboard can scroll it too (axe: scrollable-region-focusable).
          html`<pre class="result-json" tabindex="0" aria-label=${`${label}: the whole result (JSON)`}>${JSON.stringify(rest, null, 2)}</pre>`
    }
  </div>`;
}
