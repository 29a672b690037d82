/**
 * Long text: `{value, format, processed}`. `processed` is the text made safe for HTML display, as
 * farmOS's text formats filter it:
 *
 * - `default` (farmOS's filter.format.default.yml: filter_html, filter_autop, filter_url): the
 *   tags of an allow-list are kept (`<a> <em> <strong> <del> <cite> <blockquote> <code> <ul> <ol>
 *   <li> <dl> <dt> <dd> <h2>`–`<h6> <p> <br>`), every other tag is escaped so that it shows as
 *   typed, URLs become links and blank lines paragraphs.
 * - `plain_text` (Drupal's filter_html_escape, filter_url, filter_autop): every tag and entity
 *   escaped, URLs linked, paragraphs.
 *
 * Safety rests on rebuilding every kept tag from its name: no attribute is copied but `href` on
 * `<a>`, and only when, entities decoded and the characters browsers ignore removed, it starts
 * with `http://`, `https://` or `mailto:`; it is written back escaped. farmOS's `<img>` (and the
 * attributes its list allows beside `href`) are left out: an image from anywhere loads in the
 * reader's browser. Kept tags are balanced: a close tag without its open one is dropped, and what
 * is still open at the end is closed.
 *
 * Every character is looked at a bounded number of times (a tag's scan stops at the next `<`), so
 * a hostile note costs time in proportion to its length.
 */

export const TEXT_FORMATS = ['default', 'plain_text'] as const;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#039;' };
const escapeChar = (c: string) => ESCAPES[c]!;

/** Escape for text and attribute values. */
function escapeAll(s: string): string {
  return /[&<>"']/.test(s) ? s.replace(/[&<>"']/g, escapeChar) : s;
}

/** Escape text in the `default` format, where well-formed entities typed by the author are kept. */
function escapeKeepingEntities(s: string): string {
  return /[&<>"']/.test(s)
    ? s.replace(/&(?![A-Za-z][A-Za-z0-9]{0,31};|#[0-9]{1,7};|#[xX][0-9A-Fa-f]{1,6};)|[<>"']/g, escapeChar)
    : s;
}

const NAMED: Record<string, string> = {
  amp: '&',
  quot: '"',
  apos: "'",
  lt: '<',
  gt: '>',
  colon: ':',
  sol: '/',
  tab: '\t',
  newline: '\n',
  nbsp: '\u00a0',
};

/** Decode numeric entities and a few named ones; anything else stays as typed. */
function decodeEntities(s: string): string {
  return s.replace(/&(#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z]{2,8});?/g, (whole, body: string) => {
    if (body[0] === '#') {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
        ? String.fromCodePoint(code)
        : '\ufffd';
    }
    return NAMED[body.toLowerCase()] ?? whole;
  });
}

/**
 * A link target as a browser would read it, when it is one of the safe schemes; else null.
 * Browsers drop tabs and line breaks anywhere in a URL and control characters and spaces at its
 * ends, so the check is made (and the value returned) after doing the same.
 */
export function safeHref(raw: string): string | null {
  const decoded = decodeEntities(raw).replace(/[\t\n\r]/g, '');
  const ignorable = (c: number) => c <= 0x20 || (c >= 0x7f && c <= 0x9f);
  let from = 0;
  let to = decoded.length;
  while (from < to && ignorable(decoded.charCodeAt(from))) from++;
  while (to > from && ignorable(decoded.charCodeAt(to - 1))) to--;
  const url = decoded.slice(from, to);
  if (/[\u0000-\u001f\u007f]/.test(url)) return null;
  return /^(https?:\/\/|mailto:)/i.test(url) ? url : null;
}

const INLINE = new Set(['a', 'em', 'strong', 'del', 'cite', 'code']);
const BLOCK = new Set(['p', 'ul', 'ol', 'li', 'dl', 'dt', 'dd', 'blockquote', 'h2', 'h3', 'h4', 'h5', 'h6']);
/** Where text is made into paragraphs (the top and blockquotes); elsewhere it is kept as it is. */
const FLOW = new Set(['blockquote']);

/** Open elements nested deeper than this are shown as text, keeping the work per tag bounded. */
const MAX_DEPTH = 32;

/** The display text of a link longer than farmOS's filter_url_length (72), cut with an ellipsis. */
const URL_LENGTH = 72;

/**
 * A URL in text: `http(s)://` or `www.`, up to white space or a character that cannot be part of
 * it. Trailing punctuation, an unbalanced `)` and an entity-encoded quote or bracket end it.
 */
const URL_START = /\b(?:https?:\/\/|www\.)/gi;
const URL_CHARS = /[^\s<>"'`]*/y;
const ENCODED_STOP = /&(?:quot|apos|lt|gt|#0*3[49]|#0*39|#0*6[02]|#[xX]0*2[27]|#[xX]0*3[cCeE]);/i;

function urlEnd(text: string, start: number): number {
  URL_CHARS.lastIndex = start;
  URL_CHARS.exec(text);
  let end = URL_CHARS.lastIndex;
  const stop = ENCODED_STOP.exec(text.slice(start, end));
  if (stop) end = start + stop.index;
  let opens = 0;
  let closes = 0;
  for (let k = start; k < end; k++) {
    if (text[k] === '(') opens++;
    else if (text[k] === ')') closes++;
  }
  while (end > start) {
    const last = text[end - 1]!;
    if ('.,:;!?'.includes(last)) end--;
    else if (last === ')' && opens < closes) {
      closes--;
      end--;
    } else break;
  }
  return end;
}

type Escape = (s: string) => string;

/** How a text format writes its text: how it escapes, and whether it is `plain_text` (every character shown as typed). */
interface TextFormat {
  escape: Escape;
  plain: boolean;
}

/** Text with its URLs made links (not inside a link), escaped. */
function linkify(text: string, { escape, plain }: TextFormat): string {
  let out = '';
  let at = 0;
  URL_START.lastIndex = 0;
  for (let m = URL_START.exec(text); m; m = URL_START.exec(text)) {
    const start = m.index;
    const end = urlEnd(text, start);
    const shown = text.slice(start, end);
    const target = /^www\./i.test(shown) ? `http://${shown}` : shown;
    const href = safeHref(plain ? escapeAll(target) : target);
    if (end - start <= m[0].length || !href) {
      URL_START.lastIndex = start + m[0].length;
      continue;
    }
    const label = shown.length > URL_LENGTH ? `${shown.slice(0, URL_LENGTH - 1)}…` : shown;
    out += escape(text.slice(at, start)) + `<a href="${escapeAll(href)}">${escape(label)}</a>`;
    at = end;
    URL_START.lastIndex = end;
  }
  return out + escape(text.slice(at));
}

/** A tag found in the text: its name, whether it closes, and its attribute text. */
interface Tag {
  name: string;
  closing: boolean;
  attributes: string;
  end: number;
}

/**
 * The tag starting at `text[i] === '<'`, or null when none does (the `<` is then text). The scan
 * ends at the first `>` outside quotes, and gives up at the next `<` or the end.
 */
function tagAt(text: string, i: number): Tag | null {
  const head = /^<(\/?)([A-Za-z][A-Za-z0-9]*)(?=[\s/>])/.exec(text.slice(i, i + 40));
  if (!head) return null;
  let j = i + head[0].length;
  let quote = '';
  for (; j < text.length; j++) {
    const c = text[j]!;
    if (c === '<') return null;
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '>')
      return {
        name: head[2]!.toLowerCase(),
        closing: head[1] === '/',
        attributes: text.slice(i + head[0].length, j),
        end: j + 1,
      };
  }
  return null;
}

/** The `href` of an `<a>` tag's attribute text, when safe. */
function hrefOf(attributes: string): string | null {
  const re = /([^\s=/]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'>]*))?/g;
  for (let m = re.exec(attributes); m; m = re.exec(attributes)) {
    if (m[1]!.toLowerCase() !== 'href') continue;
    const v = m[2] ?? '';
    return safeHref(v[0] === '"' || v[0] === "'" ? v.slice(1, -1) : v);
  }
  return null;
}

/**
 * Render a long text's value as its format does. Unknown formats (and a missing one) are
 * `default`, as Tilth stores `default` when none is sent.
 */
export function processText(value: string, format: string | null = 'default'): string {
  const plain = format === 'plain_text';
  const written: TextFormat = { escape: plain ? escapeAll : escapeKeepingEntities, plain };
  const text = value.includes('\r') ? value.replace(/\r\n?/g, '\n') : value;
  // No tag to keep (plain text, or no "<" at all): paragraphs of escaped, linked lines, as the
  // general walk below renders them, without its bookkeeping.
  if (plain || !text.includes('<')) {
    let out = '';
    for (const part of text.split(/\n{2,}/)) {
      const trimmed = part.replace(/^\n+|\n+$/g, '');
      if (!trimmed.trim()) continue;
      out += `${out ? '\n' : ''}<p>${trimmed
        .split('\n')
        .map((line) => linkify(line, written))
        .join('<br />\n')}</p>`;
    }
    return out;
  }
  const walk = new Walk(written);
  let textStart = 0;
  let i = text.indexOf('<');
  while (i >= 0) {
    const tag = tagAt(text, i);
    const allowed =
      tag &&
      (INLINE.has(tag.name) || BLOCK.has(tag.name) || tag.name === 'br') &&
      !(tag.name === 'a' && !tag.closing && walk.inside('a')) &&
      (tag.closing || tag.name === 'br' || walk.stack.length < MAX_DEPTH - 1);
    if (!tag || !allowed) {
      i = text.indexOf('<', i + 1);
      continue;
    }
    walk.addText(text.slice(textStart, i));
    textStart = tag.end;
    walk.addTag(tag);
    i = text.indexOf('<', textStart);
  }
  walk.addText(text.slice(textStart));
  return walk.finish();
}

/** The walk over a text with tags to keep: what is written, and the elements still open. */
class Walk {
  out = '';
  readonly stack: string[] = [];

  constructor(private readonly format: TextFormat) {}

  inside(name: string): boolean {
    return this.stack.includes(name);
  }

  /** The innermost block element, or '' at the top. */
  context(): string {
    for (let k = this.stack.length - 1; k >= 0; k--) if (BLOCK.has(this.stack[k]!)) return this.stack[k]!;
    return '';
  }

  /** Close open elements up to and including the innermost `name`. */
  close(name: string): void {
    while (this.stack.length) {
      const top = this.stack.pop()!;
      this.out += `</${top}>`;
      if (top === name) break;
    }
  }

  /** Where text is made into paragraphs (the top, a blockquote) and none is open: open one. */
  openParagraph(): void {
    const where = this.context();
    if (where === '' || FLOW.has(where)) {
      this.out += '<p>';
      this.stack.push('p');
    }
  }

  closeParagraph(): void {
    if (this.inside('p')) {
      this.close('p');
      this.out += '\n';
    }
  }

  render(s: string): string {
    return this.inside('a') ? this.format.escape(s) : linkify(s, this.format);
  }

  addText(chunk: string): void {
    if (!chunk) return;
    const where = this.context();
    if (where !== '' && !FLOW.has(where) && where !== 'p') {
      this.out += this.render(chunk);
      return;
    }
    const parts = chunk.split(/\n{2,}/);
    for (let n = 0; n < parts.length; n++) {
      if (n > 0) this.closeParagraph();
      const inParagraph = this.context() === 'p';
      const part = inParagraph ? parts[n]! : parts[n]!.replace(/^\n+|\n+$/g, '');
      if (!part.trim()) {
        if (inParagraph) this.out += this.render(part);
        continue;
      }
      if (!inParagraph) this.openParagraph();
      const lines = part.split('\n');
      for (let k = 0; k < lines.length; k++) this.out += (k ? '<br />\n' : '') + this.render(lines[k]!);
    }
  }

  addTag(tag: Tag): void {
    if (tag.name === 'br') {
      if (!tag.closing) {
        const where = this.context();
        if (where === '' || FLOW.has(where)) this.openParagraph();
        this.out += '<br />';
      }
    } else if (tag.closing) {
      if (this.inside(tag.name)) {
        this.close(tag.name);
        if (BLOCK.has(tag.name) && this.context() === '') this.out += '\n';
      }
    } else if (BLOCK.has(tag.name)) {
      if (this.inside('p')) this.closeParagraph();
      if (tag.name === 'li' && this.context() === 'li') this.close('li');
      this.out += `<${tag.name}>`;
      this.stack.push(tag.name);
    } else {
      const where = this.context();
      if (where === '' || FLOW.has(where)) this.openParagraph();
      const href = tag.name === 'a' ? hrefOf(tag.attributes) : null;
      this.out += href ? `<a href="${escapeAll(href)}">` : `<${tag.name}>`;
      this.stack.push(tag.name);
    }
  }

  /** Close what is still open; the rendering without leading or trailing line breaks. */
  finish(): string {
    while (this.stack.length) this.close(this.stack[0]!);
    return this.out.replace(/\n+$/, '').replace(/^\n+/, '');
  }
}
