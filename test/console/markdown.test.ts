/**
 * The console's markdown rendering (plugins/console/ui/markdown.js: marked, then DOMPurify), run on
 * jsdom's DOM: what a model or a note may write, and what reaches the page. The browser tests render
 * the same module in Chromium; this one tries the hostile inputs one by one.
 */
import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!doctype html><body></body>');
(globalThis as any).window = dom.window;
(globalThis as any).document = dom.window.document;
// The module reads `window` when it loads (DOMPurify binds to it). A browser module: no types.
const UI_MARKDOWN = '../../plugins/console/ui/markdown.js';
const { renderMarkdown } = (await import(UI_MARKDOWN)) as {
  renderMarkdown: (text: string, items?: Map<string, unknown>) => string;
};

/** The rendered HTML as a DOM fragment. */
function rendered(text: string, items?: Map<string, unknown>): DocumentFragment {
  return dom.window.document.createRange().createContextualFragment(renderMarkdown(text, items));
}

describe('markdown in the console: rendered, and sanitised before the DOM', () => {
  afterAll(() => dom.window.close());

  it.each([
    ['an img with onerror', '<img src=x onerror="alert(1)">'],
    ['a script element', '<script>alert(1)</script>'],
    ['an iframe', '<iframe src="https://evil.example"></iframe>'],
    ['an svg with onload', '<svg onload="alert(1)"><circle r="1"/></svg>'],
    ['a style element', '<style>body{display:none}</style>'],
    ['a raw anchor to javascript:', '<a href="javascript:alert(1)">x</a>'],
    ['a form', '<form action="/ui/api/logout" method="post"><button>go</button></form>'],
  ])('shows %s as text, never as markup', (_name, hostile) => {
    const frag = rendered(`before ${hostile} after`);
    expect(frag.querySelectorAll('img, script, iframe, svg, style, form, button').length).toBe(0);
    expect([...frag.querySelectorAll('*')].some((el) => [...el.attributes].some((a) => /^on/i.test(a.name)))).toBe(false);
    expect(frag.textContent).toContain(hostile);
  });

  it.each([
    ['javascript:', '[click](javascript:alert(1))'],
    ['data:', '[click](data:text/html,<script>alert(1)</script>)'],
    ['vbscript:', '[click](vbscript:msgbox(1))'],
    ['file:', '[click](file:///etc/passwd)'],
    ['a relative API path', '[click](/ui/api/permissions/x/revoke)'],
  ])('keeps the words of a %s link and drops its address', (_name, md) => {
    const frag = rendered(md);
    expect(frag.querySelectorAll('a').length).toBe(0);
    expect(frag.textContent).toContain('click');
  });

  it('keeps http(s) and mailto links, opening in a new tab without a referrer; images become their alt text', () => {
    const frag = rendered('[site](https://example.com/a?b=1) [mail](mailto:a@example.com) ![a chart](https://example.com/c.png)');
    expect([...frag.querySelectorAll('a')].map((a) => [a.getAttribute('href'), a.getAttribute('target'), a.getAttribute('rel')])).toEqual([
      ['https://example.com/a?b=1', '_blank', 'noopener noreferrer'],
      ['mailto:a@example.com', '_blank', 'noopener noreferrer'],
    ]);
    expect(frag.querySelectorAll('img').length).toBe(0);
    expect(frag.textContent).toContain('[a chart: https://example.com/c.png]');
  });

  it('renders GFM: headings, emphasis, code, tables, task lists (checkboxes shown, not editable)', () => {
    const frag = rendered('# Title\n\n**bold** _it_ `code`\n\n| a | b |\n|-|-|\n| 1 | 2 |\n\n- [x] done\n- [ ] open\n\n```\nconst x = 1;\n```');
    expect(frag.querySelector('h1')?.textContent).toBe('Title');
    expect(frag.querySelector('strong')?.textContent).toBe('bold');
    expect(frag.querySelector('em')?.textContent).toBe('it');
    expect(frag.querySelectorAll('td').length).toBe(2);
    const boxes = [...frag.querySelectorAll('input')];
    expect(boxes.map((b) => [b.getAttribute('type'), b.hasAttribute('checked'), b.hasAttribute('disabled')])).toEqual([
      ['checkbox', true, true],
      ['checkbox', false, true],
    ]);
    expect(frag.querySelector('pre code')?.textContent).toBe('const x = 1;\n');
  });

  it('makes an item link the turn cited a chip with the item icon, carrying its title, moves an emoji the model wrote into the icon slot, and leaves others as mentions', () => {
    const items = new Map([
      ['note:n1', { type: 'note', id: 'n1', title: 'Launch plan', icon: '🚀' }],
      ['journal:2026-12-01', { type: 'journal', id: '2026-12-01', title: '2026-12-01' }],
    ]);
    const frag = rendered('[the plan](memo:note/n1), [🌧️ that day](memo:journal/2026-12-01) and [elsewhere](memo:task/t9) and [x](memo:spaceship/1)', items);
    const links = [...frag.querySelectorAll('a')].map((a) => [
      a.className,
      a.getAttribute('href'),
      a.querySelector('.item-icon')?.textContent,
      a.querySelector('.item-title')?.textContent,
    ]);
    expect(links).toEqual([
      ['item-link chip', '#/item/note/n1', '🚀', 'Launch plan'],
      ['item-link chip', '#/item/journal/2026-12-01', '🌧️', '2026-12-01'],
      ['item-link mention', '#/item/task/t9', '☑️', 'elsewhere'],
    ]);
    // An unknown kind of item is no link at all.
    expect(frag.textContent).toContain(' x');
  });

  it('escapes what an item title or id carries', () => {
    const items = new Map([['note:"><img src=x onerror=1>', { type: 'note', id: '"><img src=x onerror=1>', title: '<b>t</b>' }]]);
    const frag = rendered(`[<b>t</b>](memo:note/${encodeURIComponent('"><img src=x onerror=1>')})`, items);
    expect(frag.querySelectorAll('img, b').length).toBe(0);
    expect(frag.querySelector('a')?.getAttribute('data-id')).toBe('"><img src=x onerror=1>');
  });
});
