/* global document, navigator */
// Markdown of chat replies and notes, rendered safely: marked turns the text into HTML in which raw
// HTML from the model or the note is shown as text (never markup), links keep only http(s) and
// mailto addresses and Memo's own item links, images become their alt text (the console loads
// nothing from elsewhere), and DOMPurify then sanitises the result against a short list of tags
// and attributes before anything reaches the DOM. The console's CSP (no inline script) is the wall
// behind both.
//
// An item link, [title](memo:TYPE/ID), opens the item in the console (#/item/TYPE/ID). When the
// turn's tools returned that item, it is a citation chip: a pill with the item's icon and its title;
// otherwise an ordinary item mention (dotted underline, the type's icon).
import { Marked } from 'marked';
import DOMPurify from 'dompurify';

export const TYPE_ICONS = {
  note: '📄',
  task: '☑️',
  inbox: '📥',
  journal: '📓',
  event: '📅',
  project: '📁',
  folder: '🗂️',
  canvas: '🎨',
};

export const TYPE_NAMES = {
  note: 'Note',
  task: 'Task',
  inbox: 'Inbox item',
  journal: 'Journal entry',
  event: 'Event',
  project: 'Project',
  folder: 'Folder',
  canvas: 'Canvas',
};

const ITEM_LINK = /^memo:(note|task|inbox|journal|event|project|folder|canvas)\/(.+)$/;
/** An emoji a backend wrote at the start of a link's text: moved into the icon slot. */
const LEADING_EMOJI = /^((?:\p{Extended_Pictographic}|\p{Emoji_Component})+)\s*/u;

const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

/** The address of an item's view in the console. */
export function itemHref(type, id) {
  return `#/item/${type}/${encodeURIComponent(id)}`;
}

/** The plain text of inline tokens (a link's words). */
function plain(tokens) {
  return (tokens ?? []).map((t) => (t.tokens ? plain(t.tokens) : (t.text ?? t.raw ?? ''))).join('');
}

function decodeId(raw) {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The HTML of one item link: a chip when the turn's tools returned the item (`cited`), else a mention. */
export function itemLinkHtml(ref, cited, text) {
  const emoji = LEADING_EMOJI.exec(text ?? '');
  const words = (emoji ? text.slice(emoji[0].length) : text) || ref.title || ref.id;
  const icon = ref.icon ?? (emoji ? emoji[1] : undefined) ?? TYPE_ICONS[ref.type];
  // A chip carries the item's own title; a mention keeps the words the reply linked.
  const title = (cited ? ref.title || words : words).trim();
  return `<a class="item-link ${cited ? 'chip' : 'mention'}" href="${escapeHtml(itemHref(ref.type, ref.id))}" data-type="${ref.type}" data-id="${escapeHtml(ref.id)}" title="${escapeHtml(`${TYPE_NAMES[ref.type]}: ${title}`)}"><span class="item-icon" aria-hidden="true">${escapeHtml(icon)}</span><span class="item-title">${escapeHtml(title)}</span></a>`;
}

const ALLOWED_TAGS = [
  'a',
  'p',
  'br',
  'hr',
  'strong',
  'em',
  'del',
  'code',
  'pre',
  'blockquote',
  'ul',
  'ol',
  'li',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
  'span',
  'input',
];
const ALLOWED_ATTR = ['href', 'title', 'class', 'data-type', 'data-id', 'aria-hidden', 'rel', 'target', 'start', 'align', 'type', 'checked', 'disabled'];

const LINK_ALLOWED = /^(?:https?:|mailto:|#\/item\/)/i;

let hooked = false;
function sanitise(html) {
  if (!hooked) {
    hooked = true;
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      // Links leave the console in a new tab, without a referrer; a task-list checkbox is only shown.
      // A link goes to http(s), mailto or an item of the console's, nowhere else.
      if (node.tagName === 'A' && !LINK_ALLOWED.test(node.getAttribute('href') ?? '')) node.removeAttribute('href');
      if (node.tagName === 'A' && /^(https?:|mailto:)/i.test(node.getAttribute('href') ?? '')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
      if (node.tagName === 'INPUT' && node.getAttribute('type') !== 'checkbox') node.remove();
      if (node.tagName === 'INPUT') {
        node.setAttribute('disabled', '');
        node.setAttribute('aria-label', node.hasAttribute('checked') ? 'done' : 'not done');
      }
    });
  }
  return DOMPurify.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    // Only the renderer's own markup carries attributes (raw HTML is escaped before): data-type and data-id of item links.
    ALLOW_DATA_ATTR: true,
  });
}

/**
 * Renders `text` (markdown) to sanitised HTML. `items` are the turn's item references (a Map keyed
 * `type:id`): an item link to one of them is a chip carrying its icon.
 */
export function renderMarkdown(text, items = new Map()) {
  const md = new Marked({ gfm: true, breaks: false, async: false });
  md.use({
    renderer: {
      // Raw HTML in the text is shown as what it is, text.
      html({ text: raw }) {
        return escapeHtml(raw);
      },
      link({ href, tokens }) {
        const words = plain(tokens);
        const item = ITEM_LINK.exec(href ?? '');
        if (item) {
          const type = item[1];
          const id = decodeId(item[2]);
          const known = items.get(`${type}:${id}`);
          return itemLinkHtml(known ?? { type, id, title: words }, Boolean(known), words);
        }
        const inner = this.parser.parseInline(tokens);
        if (/^(https?:|mailto:)/i.test(href ?? '')) return `<a href="${escapeHtml(href)}">${inner}</a>`;
        // Any other address (javascript:, data:, file:...) keeps its words and loses the link.
        return inner;
      },
      image({ text: alt, href }) {
        return `<span class="image-alt">[${escapeHtml(alt || 'image')}${href ? `: ${escapeHtml(href)}` : ''}]</span>`;
      },
    },
  });
  return sanitise(md.parse(String(text ?? '')));
}

/** The items of a turn's steps, keyed `type:id`, first seen first. */
export function itemsOfSteps(steps) {
  const out = new Map();
  for (const s of steps ?? []) for (const i of s.items ?? []) if (!out.has(`${i.type}:${i.id}`)) out.set(`${i.type}:${i.id}`, i);
  return out;
}

/** Copies `text` to the clipboard; false when the browser refused. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // An older way, for a page the clipboard API is not given to.
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.append(area);
    area.select();
    const ok = document.execCommand('copy');
    area.remove();
    return ok;
  }
}
