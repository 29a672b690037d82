/** Long text: `{value, format, processed}`. `processed` is the text made safe for HTML display. */

export const TEXT_FORMATS = ['default', 'plain_text'] as const;

function escape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#039;');
}

/**
 * Render text the way farmOS's `default` format does in spirit: no raw HTML gets through,
 * paragraphs and line breaks are kept, and URLs become links.
 */
export function processText(value: string): string {
  const paragraphs = value
    .replace(/\r\n?/g, '\n')
    .split(/\n{2,}/)
    .map((p) => p.trim())
    .filter(Boolean);
  return paragraphs
    .map((p) => {
      const html = escape(p)
        .replace(/\bhttps?:\/\/[^\s<]+[^\s<.,;:!?)'"]/g, (url) => `<a href="${url}">${url}</a>`)
        .replace(/\n/g, '<br />\n');
      return `<p>${html}</p>`;
    })
    .join('\n');
}
