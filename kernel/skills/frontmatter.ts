/**
 * A quick reader for the front matter most SKILL.md files have: block mappings and sequences of plain,
 * quoted or flow-listed scalars (see skills/git-history). The first parse the `yaml` package does in
 * a process costs tens of milliseconds at start-up; this reads the common shape in well under one.
 *
 * It answers only where it is certain the `yaml` package (YAML 1.2, core schema, its defaults) reads
 * the same value, and gives up (`undefined`) on anything else: comments, anchors, aliases, tags, block
 * or multi-line scalars, escapes, flow mappings, nulls, floats, numbers that are not plain decimal
 * integers, duplicate keys, tabs, unusual keys or indentation. The caller then parses with the full
 * parser, so every file reads, and every error is reported, exactly as the full parser says.
 */

interface Line {
  indent: number;
  text: string;
}

/** Signals "not certain": the caller falls back to the full parser. */
class Unsure extends Error {}

const unsure = (): never => {
  throw new Unsure();
};

/** A key read as itself: a plain word the core schema cannot read as anything but a string. */
const KEY = /^([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*))?$/;
const NOT_STRING_KEYS = /^(?:null|Null|NULL|true|True|TRUE|false|False|FALSE|__proto__)$/;
/** Characters that start something other than a plain scalar (YAML's indicators), and digits, signs and dots (numbers). */
const NOT_PLAIN_START = /^[-?:,[\]{}#&*!|>'"%@`+.0-9~]/;
const FLOW_ITEM = /^[A-Za-z_][A-Za-z0-9_./-]*$/;

/** A plain scalar's value under the core schema, or unsure when it could be anything but a string or `true`/`false`. */
function plain(text: string): unknown {
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (/^[1-9][0-9]{0,14}$/.test(text) || text === '0') return Number(text);
  if (NOT_PLAIN_START.test(text) || /^(?:null|Null|NULL|True|TRUE|False|FALSE)$/.test(text)) return unsure();
  // ": " would start a mapping, " #" a comment, a trailing ":" an empty mapping.
  if (text.includes(': ') || text.includes(' #') || text.endsWith(':')) return unsure();
  return text;
}

/** A value written on the key's (or dash's) own line. */
function scalar(text: string): unknown {
  const first = text[0];
  if (first === '"') {
    const inner = text.slice(1, -1);
    if (text.length < 2 || !text.endsWith('"') || inner.includes('"') || inner.includes('\\')) return unsure();
    return inner;
  }
  if (first === "'") {
    const inner = text.slice(1, -1);
    if (text.length < 2 || !text.endsWith("'") || inner.includes("'")) return unsure();
    return inner;
  }
  if (first === '[') {
    if (!text.endsWith(']')) return unsure();
    const inner = text.slice(1, -1).replace(/^ +| +$/g, '');
    if (inner === '') return [];
    return inner.split(',').map((raw) => {
      const item = raw.replace(/^ +| +$/g, '');
      return FLOW_ITEM.test(item) ? plain(item) : unsure();
    });
  }
  return plain(text);
}

class Reader {
  private i = 0;
  constructor(private readonly lines: Line[]) {}

  read(): Record<string, unknown> {
    if (this.lines.length === 0 || this.lines[0]!.indent !== 0) return unsure();
    const value = this.map(0);
    if (this.i !== this.lines.length) return unsure();
    return value;
  }

  /** The block at `indent`, which the current line opens. */
  private block(indent: number): unknown {
    const line = this.lines[this.i]!;
    return line.text === '-' || line.text.startsWith('- ') ? this.seq(indent) : this.map(indent);
  }

  private map(indent: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    while (this.i < this.lines.length) {
      const line = this.lines[this.i]!;
      if (line.indent < indent) break;
      if (line.indent > indent) return unsure();
      const m = KEY.exec(line.text);
      if (!m) return unsure();
      const key = m[1]!;
      if (NOT_STRING_KEYS.test(key) || Object.hasOwn(out, key)) return unsure();
      this.i++;
      if (m[2] !== undefined && m[2] !== '') {
        out[key] = scalar(m[2]);
        continue;
      }
      // Nothing after the colon: a nested block, more indented (a null or a same-column list: unsure).
      const next = this.lines[this.i];
      if (!next || next.indent <= indent) return unsure();
      out[key] = this.block(next.indent);
    }
    return out;
  }

  private seq(indent: number): unknown[] {
    const out: unknown[] = [];
    while (this.i < this.lines.length) {
      const line = this.lines[this.i]!;
      if (line.indent < indent) break;
      if (line.indent > indent || !line.text.startsWith('- ')) return unsure();
      const rest = line.text.slice(2).replace(/^ +/, '');
      if (rest === '' || rest.startsWith('-')) return unsure();
      if (KEY.test(rest)) {
        // "- key: value" opens a mapping whose keys line up with this first one.
        const at = indent + (line.text.length - rest.length);
        this.lines[this.i] = { indent: at, text: rest };
        out.push(this.map(at));
        continue;
      }
      out.push(scalar(rest));
      this.i++;
    }
    return out;
  }
}

/**
 * The front matter's value when it has the common shape (a mapping at the top) and the full parser
 * would read exactly this; `undefined` when the full parser must decide.
 */
export function readSimpleFrontmatter(yaml: string): Record<string, unknown> | undefined {
  // Tabs, control characters, other line breaks and byte-order marks: the full parser's business.
  for (let i = 0; i < yaml.length; i++) {
    const c = yaml.charCodeAt(i);
    if ((c < 0x20 && c !== 0x0a) || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029 || c === 0xfeff) return undefined;
  }
  const lines: Line[] = [];
  for (const raw of yaml.split('\n')) {
    // YAML's white space is the space (tabs were refused above); no other character is trimmed.
    const text = raw.replace(/ +$/, '');
    if (text === '') continue;
    const body = text.replace(/^ +/, '');
    if (body.startsWith('#')) return undefined;
    lines.push({ indent: text.length - body.length, text: body });
  }
  try {
    return new Reader(lines).read();
  } catch (err) {
    if (err instanceof Unsure) return undefined;
    throw err;
  }
}
