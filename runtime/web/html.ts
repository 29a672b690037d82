/**
 * HTML built by tagged templates that escape every value: `html\`<p>${text}</p>\`` escapes `text`
 * unless it is already Html (a fragment built the same way). Nothing reaches a page unescaped
 * except fragments made here, so a value typed into a record can never become markup.
 */
import { escape } from '../oauth/pages.ts';

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escape(value);
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Fragments joined by `separator` (itself text, escaped). */
export function join(parts: readonly Html[], separator: string): Html {
  return new Html(parts.map((p) => p.text).join(escape(separator)));
}

export { escape };
