// Shared components of the console's pages: the table every list uses (a card per row on a phone).
import { html } from 'htm/preact';

/**
 * @typedef {object} Column
 * @property {string} label - the column's heading ('' for a column of buttons: read as "Actions")
 * @property {(row: any) => any} cell - what the row shows in it
 * @property {string} [class] - a class for its cells
 */

/**
 * A table of rows: its first column is each row's header (what a screen reader names the row by),
 * every cell carries its column's name, and on a phone each row becomes a card with the names
 * beside the values (style.css, `table.cards`).
 *
 * @param {object} props
 * @param {string} props.class - the table's own class (its look)
 * @param {Column[]} props.columns
 * @param {any[]} props.rows
 * @param {(row: any, index: number) => string | number} props.rowKey
 * @param {(row: any) => Record<string, string>} [props.rowAttrs] - data attributes of a row (`data-tool`)
 * @param {string} [props.label] - the table's accessible name
 */
export function CardTable({ class: cls, columns, rows, rowKey, rowAttrs, label }) {
  return html`<table class=${`${cls} cards`} aria-label=${label}>
    <thead>
      <tr>
        ${columns.map((c) => html`<th scope="col">${c.label || html`<span class="sr-only">Actions</span>`}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (row, i) =>
          html`<tr key=${rowKey(row, i)} ...${rowAttrs ? rowAttrs(row) : {}}>
            ${columns.map((c, j) =>
              j === 0
                ? html`<th scope="row" class=${c.class} data-label=${c.label || undefined}>${c.cell(row)}</th>`
                : html`<td class=${c.class} data-label=${c.label || undefined}>${c.cell(row)}</td>`,
            )}
          </tr>`,
      )}
    </tbody>
  </table>`;
}
