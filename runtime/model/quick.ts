/**
 * Quick forms (issue 42 §2): a form written in YAML (definitions/quick/<name>.yaml, a module's
 * quick/ folder, or the site folder's) that asks a few fields and creates several records at once.
 * The generator checks each against the model and emits this shape into generated/quick/<name>.json
 * (a site's into <site>/generated/quick/); runtime/web/quick.ts renders and submits it.
 *
 * Templates are a small language of Tilth's own, never evaluated as code: `{{path}}` is a value
 * (an asked field, `group.field`, a reference's `name` or one of its record's fields),
 * `{{#path}}…{{/path}}` is kept when the path has a value, `{{^path}}…{{/path}}` when it has none,
 * and `{{#path=value}}…{{/path}}` when it equals `value`. Its output is plain text: it is stored as
 * a record's value, and the pages escape it wherever it is shown, as every value.
 */
import type { FieldDescriptor } from './descriptor.ts';
import type { Widget } from './ui.ts';

/** A field the form asks, with the descriptor it borrows (`like: <type>.<field>`): type, allowed values, targets. */
export interface QuickField {
  name: string;
  label: string;
  description?: string;
  required: boolean;
  /** A value the form opens with: a literal, or `now` / `today` for a date. */
  default?: string | number | boolean;
  widget: Widget;
  /** The borrowed field, with `multiple` and the reference's target bundles as the form narrows them. Absent on a group. */
  field?: FieldDescriptor;
  /** The resource type it is borrowed from (a photo is stored as that type's files are). */
  from?: string;
  /** A group's fields (`quantity.value`); with `repeat`, rows of them (`children.0.name`). */
  group?: QuickField[];
  repeat?: { min: number; max: number };
  /**
   * On a group that does not repeat: it is recorded only when the person ticks its box (`label`,
   * ticked at first when `default`). Unticked, its fields read as empty, its required fields are
   * not asked, and `when: <group>` does not hold (Planting's transplanting and harvest).
   */
  optional?: { label: string; default: boolean };
  /** A path of this form: this field may be filled only when that one has a value (Movement's geometry needs a location). */
  needs?: string;
}

/**
 * A value in a record's `values`: a literal or template, the records of an earlier entry, a choice
 * by whether a path has a value (`{ if, then, else }`), or several.
 */
export type QuickValue =
  string | number | boolean | { record: string } | { if: string; then?: QuickValue; else?: QuickValue } | QuickValue[];

export interface QuickRecord {
  /** Its name in the form, for `{ record: <id> }`. */
  id: string;
  /** The JSON:API resource type it creates. */
  type: string;
  /** One record per row of this repeating group, whose fields the values name as `<group>.<field>`. */
  forEach?: string;
  /** Created only when this path has a value. */
  when?: string;
  values: Record<string, QuickValue>;
}

export interface QuickFormDescriptor {
  /** Its machine name, from the file's name: the page is /farm/quick/<name>. */
  name: string;
  title: string;
  description?: string;
  /** The optional module it belongs to (shown only when TILTH_MODULES names it), or null. */
  module: string | null;
  /** Who may use it, besides the right to create every record it makes: any of these roles, or this permission. */
  access: { roles?: string[]; permission?: string };
  fields: QuickField[];
  records: QuickRecord[];
}

// ---------------------------------------------------------------- templates

export type TemplateNode =
  | { kind: 'text'; text: string }
  | { kind: 'value'; path: string }
  | { kind: 'section'; path: string; inverted: boolean; equals?: string; body: TemplateNode[] };

export class TemplateSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateSyntaxError';
  }
}

const PATH = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/;
const TAG = /\{\{\s*([#^/]?)\s*([^}]*?)\s*\}\}/g;

/** A template parsed, or a TemplateSyntaxError saying what is wrong (the generator reports it at its line). */
export function parseTemplate(source: string): TemplateNode[] {
  const root: TemplateNode[] = [];
  const stack: Array<{ path: string; body: TemplateNode[] }> = [{ path: '', body: root }];
  let at = 0;
  for (const match of source.matchAll(TAG)) {
    const top = stack[stack.length - 1]!;
    if (match.index > at) top.body.push({ kind: 'text', text: source.slice(at, match.index) });
    at = match.index + match[0].length;
    const [, sigil, inner] = match as unknown as [string, string, string];
    if (sigil === '/') {
      if (stack.length === 1 || top.path !== inner)
        throw new TemplateSyntaxError(`{{/${inner}}} closes no open {{#${inner}}}.`);
      stack.pop();
      continue;
    }
    const [path, equals] = sigil === '#' && inner.includes('=') ? inner.split('=', 2) : [inner, undefined];
    if (!PATH.test(path!.trim()))
      throw new TemplateSyntaxError(
        `"{{${sigil}${inner}}}" does not name a field: a path is names of lower case letters, digits and _ joined by dots.`,
      );
    if (sigil === '') {
      top.body.push({ kind: 'value', path: path!.trim() });
      continue;
    }
    const body: TemplateNode[] = [];
    top.body.push({
      kind: 'section',
      path: path!.trim(),
      inverted: sigil === '^',
      ...(equals !== undefined ? { equals: equals.trim() } : {}),
      body,
    });
    stack.push({ path: path!.trim(), body });
  }
  if (stack.length > 1) throw new TemplateSyntaxError(`{{#${stack[stack.length - 1]!.path}}} is never closed.`);
  const rest = source.slice(at);
  if (rest.includes('{{') || rest.includes('}}'))
    throw new TemplateSyntaxError('a "{{" or "}}" is not part of a tag: write {{path}}.');
  if (rest) root.push({ kind: 'text', text: rest });
  return root;
}

/** Every path a template names, for the generator's checks. */
export function templatePaths(nodes: TemplateNode[]): string[] {
  return nodes.flatMap((n) =>
    n.kind === 'value' ? [n.path] : n.kind === 'section' ? [n.path, ...templatePaths(n.body)] : [],
  );
}

/** The template's text, each path given by `text` (a value's words, '' when it has none). */
export function renderTemplate(nodes: TemplateNode[], text: (path: string) => string): string {
  let out = '';
  for (const n of nodes) {
    if (n.kind === 'text') out += n.text;
    else if (n.kind === 'value') out += text(n.path);
    else {
      const value = text(n.path);
      const shown = n.equals !== undefined ? value === n.equals : value !== '';
      if (shown !== n.inverted) out += renderTemplate(n.body, text);
    }
  }
  return out;
}

/** A string that is one placeholder and nothing else (`"{{asset}}"`): the value itself, not its words. */
export function wholePath(source: string): string | null {
  const m = /^\{\{\s*([a-z][a-z0-9_.]*)\s*\}\}$/.exec(source);
  return m && PATH.test(m[1]!) ? m[1]! : null;
}
