/**
 * Values as people read them, from the resource objects the JSON:API serializer renders (so a
 * page shows exactly what the API would show this caller): dates in the farm's time zone, numbers
 * with their digits, list values by label, references as links to their records' pages.
 * Formatting is by Intl, made once per server.
 */
import type { FieldDescriptor } from '../model/descriptor.ts';
import { html, join, type Html } from './html.ts';
import { M } from './messages.ts';

export interface ResourceRef {
  type: string;
  id: string;
}

/** A resource object as the serializer renders it. */
export interface Resource {
  type: string;
  id: string;
  attributes?: Record<string, unknown>;
  relationships?: Record<string, { data?: ResourceRef | ResourceRef[] | null } | undefined>;
}

export class Formats {
  readonly dateTime: Intl.DateTimeFormat;
  readonly date: Intl.DateTimeFormat;
  readonly number: Intl.NumberFormat;

  constructor(
    readonly locale: string | undefined,
    readonly timeZone: string,
  ) {
    this.dateTime = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short', timeZone });
    this.date = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeZone });
    this.number = new Intl.NumberFormat(locale, { maximumFractionDigits: 10 });
  }

  /**
   * The value of `YYYY-MM-DDTHH:MM` for a datetime-local input, in the farm's time zone, with
   * `:SS` when the time has seconds: an edit of another field must not round the stored time to
   * the minute (a change the person did not make). widgets.ts gives such an input `step="1"`.
   */
  inputDateTime(iso: string): string {
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat('en-CA', {
        timeZone: this.timeZone,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        hourCycle: 'h23',
      })
        .formatToParts(new Date(iso))
        .map((p) => [p.type, p.value]),
    );
    const seconds = parts.second === '00' ? '' : `:${parts.second}`;
    return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}${seconds}`;
  }

  /** A datetime-local input's value (the farm's wall clock) as an instant, or null when it is not one. */
  parseInputDateTime(text: string): Date | null {
    const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?)?$/.exec(text.trim());
    if (!m) return null;
    const wall = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +(m[4] ?? 0), +(m[5] ?? 0), +(m[6] ?? 0));
    // The zone's offset at that wall time: guess, then correct once (enough outside the hour a clock changes).
    let instant = wall - this.offset(wall);
    instant = wall - this.offset(instant);
    return Number.isFinite(instant) ? new Date(instant) : null;
  }

  private offset(at: number): number {
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat('en-US', {
        timeZone: this.timeZone,
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
        hourCycle: 'h23',
      })
        .formatToParts(new Date(at))
        .map((p) => [p.type, p.value]),
    );
    return (
      Date.UTC(+parts.year!, +parts.month! - 1, +parts.day!, +parts.hour!, +parts.minute!, +parts.second!) -
      Math.floor(at / 1000) * 1000
    );
  }
}

/** The label people know a record by: its label field, or its type and short id. */
export function labelOf(resource: Resource | undefined, labelField: string | undefined): string {
  const label = resource && labelField ? resource.attributes?.[labelField] : undefined;
  return typeof label === 'string' && label.trim()
    ? label
    : resource
      ? `${resource.type.split('--')[1]} ${resource.id.slice(0, 8)}`
      : '';
}

/** The page of a record in the web interface. */
export function recordPath(ref: ResourceRef): string {
  const [entityType, bundle] = ref.type.split('--');
  return `/farm/${entityType}/${bundle}/${ref.id}`;
}

export interface RenderContext {
  formats: Formats;
  /** Included records by `type:id` (labels of references). */
  included: Map<string, Resource>;
  /** The label field of an entity type. */
  labelFieldOf(entityType: string): string | undefined;
}

function oneValue(field: FieldDescriptor, v: unknown, ctx: RenderContext): Html | string {
  if (v === null || v === undefined || v === '') return '';
  switch (field.type) {
    case 'timestamp':
      return typeof v === 'string' || typeof v === 'number'
        ? ctx.formats.dateTime.format(new Date(typeof v === 'number' ? v * 1000 : v))
        : String(v);
    case 'boolean':
      return v ? M.values.yes : M.values.no;
    case 'list_string':
      return field.allowedValues?.find((a) => a.value === v)?.label ?? String(v);
    case 'integer':
      return typeof v === 'number' ? ctx.formats.number.format(v) : String(v);
    case 'decimal':
      return typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? ctx.formats.number.format(Number(v)) : String(v);
    case 'fraction': {
      const f = v as { decimal?: string };
      return f.decimal !== undefined ? ctx.formats.number.format(Number(f.decimal)) : '';
    }
    case 'text_long': {
      // Shown as the text typed, never as markup: `processed` is not trusted to be safe HTML here.
      const t = v as { value?: string };
      return t.value ?? '';
    }
    case 'geofield':
      return html`<code>${(v as { value?: string }).value ?? ''}</code>`;
    case 'id_tag': {
      const t = v as { id?: string; type?: string };
      return [t.type, t.id].filter(Boolean).join(': ');
    }
    case 'file_uri':
      return (v as { url?: string }).url ?? '';
    case 'inventory': {
      const i = v as { measure?: string; value?: string; units?: string };
      return [i.value, i.units, i.measure ? `(${i.measure})` : ''].filter(Boolean).join(' ');
    }
    default:
      return typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
}

/** An attribute's value (one or several) as people read it. */
export function attributeValue(field: FieldDescriptor, value: unknown, ctx: RenderContext): Html {
  const list = Array.isArray(value) ? value : [value];
  const parts = list.map((v) => oneValue(field, v, ctx)).filter((p) => p !== '');
  if (!parts.length) return html`<span class="muted">${M.record.empty}</span>`;
  return join(
    parts.map((p) => html`${p}`),
    field.type === 'id_tag' || field.type === 'inventory' ? '\n' : ', ',
  );
}

/** A relationship's records as links to their pages, labelled from the included records. */
export function relationshipValue(data: ResourceRef | ResourceRef[] | null | undefined, ctx: RenderContext): Html {
  const refs = (Array.isArray(data) ? data : data ? [data] : []).filter(
    (r) => r.id !== 'virtual' && !r.type.startsWith('user_role') && r.type.includes('--'),
  );
  if (!refs.length) return html`<span class="muted">${M.record.empty}</span>`;
  return join(
    refs.map((r) => {
      const included = ctx.included.get(`${r.type}:${r.id}`);
      if (!included) return html`<span class="muted">${M.record.hidden}</span>`;
      const label = labelOf(included, ctx.labelFieldOf(r.type.split('--')[0]!));
      return r.type.startsWith('file--')
        ? html`<a href="${String((included.attributes?.uri as { url?: string } | undefined)?.url ?? '#')}">${label}</a>`
        : html`<a href="${recordPath(r)}">${label}</a>`;
    }),
    ', ',
  );
}
