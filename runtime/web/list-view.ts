/**
 * What a list shows, for one bundle (its generated UI description) or for every bundle of an
 * entity type in one list ("all logs", "all assets": the columns and filters their bundles share,
 * a type column and a type filter): its columns (each with the API's sort path when it can be
 * sorted by, and the include paths its cells need), its filters, and how each filter of the URL
 * becomes conditions of the API's query. Whether a column may be sorted by or a filter offered is
 * asked of the API's own path resolver, so a list offers nothing the API would refuse this caller.
 */
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { BundleUi, UiFilter } from '../model/ui.ts';
import type { Principal } from '../access/principal.ts';
import { resolvePath } from '../jsonapi/collection/paths.ts';
import { html, join, type Html } from './html.ts';
import { M } from './messages.ts';
import {
  attributeValue,
  labelOf,
  recordPath,
  relationshipValue,
  type Formats,
  type RenderContext,
  type Resource,
} from './format.ts';
import { ApiQuery } from './api-query.ts';

const DAY = 86_400;

/** The URL parameter of an all-records list's type filter. */
export const TYPE_PARAM = 'type';

/**
 * References whose filter also finds what is inside the record named (farmOS's "location, any
 * depth"): a location, and the locations nested in it by their `parent`, down to `depth` levels
 * (the API's paths have at most 8 segments: location.parent.parent.parent.parent.name is 6).
 */
export const NESTED_FILTERS: Readonly<Record<string, { parent: string; depth: number }>> = {
  location: { parent: 'parent', depth: 4 },
};

/** A quantity as a list shows it: its value, units and label (a log's quantity column). */
export const QUANTITY = { entityType: 'quantity', value: 'value', units: 'units', label: 'label' } as const;

export interface ListColumn {
  name: string;
  label: string;
  /** null: the record's type (an all-records list's type column). */
  field: FieldDescriptor | null;
  /** The API's sort path for this column, or null when the API cannot sort by it for this caller. */
  sort: string | null;
  /** Include paths its cells need. */
  include: string[];
}

export interface ListView {
  /** The list's address, without its query. */
  path: string;
  title: string;
  /** The bundles queried (an all-records list's type filter narrows them). */
  types: ResourceType[];
  /** Every bundle the list may show, with its UI description (the type filter's choices). */
  bundles: Array<{ rt: ResourceType; ui: BundleUi }>;
  /** Whether this is an all-records list (a type column and filter). */
  all: boolean;
  columns: ListColumn[];
  filters: UiFilter[];
  /** The default sort, as the API's `sort` parameter. */
  sort: string;
  labelField: string;
}

export class ListViews {
  constructor(
    private readonly ctx: AppContext,
    private readonly formats: Formats,
  ) {}

  /** Whether the API resolves `path` on every one of `types` for this caller (as a filter or a sort). */
  private usable(types: readonly ResourceType[], path: string, principal: Principal, as: 'filter' | 'sort'): boolean {
    try {
      for (const rt of types) resolvePath(this.ctx.registry, rt, path, principal, as);
      return true;
    } catch {
      return false;
    }
  }

  /** The label field of the entity type a reference points at. */
  private targetLabel(field: FieldDescriptor): string | undefined {
    return field.target ? this.ctx.registry.model.entityTypes[field.target.entityType]?.labelField : undefined;
  }

  private column(types: readonly ResourceType[], field: FieldDescriptor, principal: Principal): ListColumn {
    let sort: string | null = null;
    const include: string[] = [];
    if (field.kind === 'relationship') {
      include.push(field.name);
      const label = this.targetLabel(field);
      if (label && this.usable(types, `${field.name}.${label}`, principal, 'sort')) sort = `${field.name}.${label}`;
      if (field.target?.entityType === QUANTITY.entityType) {
        const targets = this.ctx.registry.targetsOf(field);
        if (targets.some((t) => t.fieldsByName.get(QUANTITY.units)?.kind === 'relationship'))
          include.push(`${field.name}.${QUANTITY.units}`);
      }
    } else if (this.usable(types, field.name, principal, 'sort')) sort = field.name;
    return { name: field.name, label: field.label, field, sort, include };
  }

  /** One bundle's list, from its generated UI description. */
  bundle(rt: ResourceType, ui: BundleUi, principal: Principal): ListView {
    const columns = ui.list.columns
      .map((c) => rt.fieldsByName.get(c))
      .filter((f): f is FieldDescriptor => Boolean(f))
      .map((f) => this.column([rt], f, principal));
    return {
      path: `/farm/${rt.entityType.entityType}/${rt.bundle.bundle}`,
      title: ui.label,
      types: [rt],
      bundles: [{ rt, ui }],
      all: false,
      columns,
      filters: this.offered([rt], ui.list.filters, principal),
      sort: ui.list.sort,
      labelField: rt.entityType.labelField,
    };
  }

  /**
   * Every bundle's records of an entity type in one list: the columns and filters all its bundles'
   * lists share (base fields) and the type, in `order` (farmOS's); the default sort theirs when
   * they agree.
   */
  all(
    bundles: Array<{ rt: ResourceType; ui: BundleUi }>,
    principal: Principal,
    view: URLSearchParams,
    { title, order }: { title: string; order: readonly string[] },
  ): ListView {
    const [first] = bundles;
    const types = bundles.map((b) => b.rt);
    const entityType = first!.rt.entityType;
    const shared = (name: string) =>
      bundles.every((b) => b.ui.list.columns.includes(name)) &&
      bundles.every(
        (b) =>
          JSON.stringify(b.rt.fieldsByName.get(name)?.storage) ===
          JSON.stringify(first!.rt.fieldsByName.get(name)?.storage),
      );
    const fields = first!.ui.list.columns
      .filter(shared)
      .map((c) => first!.rt.fieldsByName.get(c))
      .filter((f): f is FieldDescriptor => Boolean(f));
    const columns = fields.map((f) => this.column(types, f, principal));
    const typeColumn: ListColumn = {
      name: TYPE_PARAM,
      label: M.list.typeColumn,
      field: null,
      sort:
        entityType.bundleKey && this.usable(types, entityType.bundleKey, principal, 'sort')
          ? entityType.bundleKey
          : null,
      include: [],
    };
    columns.push(typeColumn);
    // In `order`, then the others as the first bundle lists them.
    const place = (c: ListColumn) => (order.includes(c.name) ? order.indexOf(c.name) : order.length);
    columns.sort((a, b) => place(a) - place(b));
    const filters = first!.ui.list.filters.filter((f) =>
      bundles.every((b) => b.ui.list.filters.some((g) => g.field === f.field && g.kind === f.kind)),
    );
    const sorts = new Set(bundles.map((b) => b.ui.list.sort));
    const chosen = view.get(TYPE_PARAM);
    const narrowed = chosen ? types.filter((t) => t.bundle.bundle === chosen) : types;
    return {
      path: `/farm/${entityType.entityType}`,
      title,
      // An unknown type shows nothing (as the API's filter on a type no record has), not everything.
      types: narrowed,
      bundles,
      all: true,
      columns,
      filters: this.offered(types, filters, principal),
      sort: sorts.size === 1 ? first!.ui.list.sort : entityType.labelField,
      labelField: entityType.labelField,
    };
  }

  /** The filters this caller may use: those whose paths the API resolves for them. */
  private offered(types: readonly ResourceType[], filters: UiFilter[], principal: Principal): UiFilter[] {
    return filters.filter((f) => {
      const field = types[0]!.fieldsByName.get(f.field);
      if (!field) return false;
      const label = field.kind === 'relationship' ? this.targetLabel(field) : undefined;
      return this.usable(types, label ? `${f.field}.${label}` : f.field, principal, 'filter');
    });
  }

  /** One filter of the view as conditions of the API's query; an empty input adds none. */
  applyFilter(q: ApiQuery, types: readonly ResourceType[], f: UiFilter, view: URLSearchParams): void {
    const value = view.get(f.field)?.trim();
    switch (f.kind) {
      case 'contains':
        if (value) q.condition(f.field, 'CONTAINS', value);
        return;
      case 'equals':
        if (value) q.condition(f.field, '=', value);
        return;
      case 'boolean':
        if (value === '1' || value === '0') q.condition(f.field, '=', value);
        return;
      case 'reference': {
        const field = types[0]!.fieldsByName.get(f.field);
        const label = field ? this.targetLabel(field) : undefined;
        if (!value || !label || !field) return;
        const nested = NESTED_FILTERS[f.field];
        const nests =
          nested &&
          this.ctx.registry
            .targetsOf(field)
            .some((t) => t.fieldsByName.get(nested.parent)?.target?.entityType === t.entityType.entityType);
        if (!nested || !nests) {
          q.condition(`${f.field}.${label}`, 'CONTAINS', value);
          return;
        }
        // The record named, or one inside it at any depth: each level one condition of an OR group.
        const group = q.group('OR');
        for (let depth = 0; depth <= nested.depth; depth++)
          q.condition([f.field, ...Array(depth).fill(nested.parent), label].join('.'), 'CONTAINS', value, group);
        return;
      }
      case 'range': {
        const from = view.get(`${f.field}_from`) ? this.formats.parseInputDateTime(view.get(`${f.field}_from`)!) : null;
        const to = view.get(`${f.field}_to`) ? this.formats.parseInputDateTime(view.get(`${f.field}_to`)!) : null;
        if (from) q.condition(f.field, '>=', String(Math.floor(from.getTime() / 1000)));
        if (to) q.condition(f.field, '<', String(Math.floor(to.getTime() / 1000) + DAY));
        return;
      }
    }
  }

  /** A filter's label and input, holding the view's value. */
  filterControl(types: readonly ResourceType[], f: UiFilter, view: URLSearchParams): Html {
    const id = `filter-${f.field}`;
    const value = view.get(f.field) ?? '';
    switch (f.kind) {
      case 'equals': {
        const allowed = types[0]!.fieldsByName.get(f.field)?.allowedValues;
        if (allowed) {
          return html`<div><label for="${id}">${f.label}</label><select id="${id}" name="${f.field}"><option value="">${M.list.any}</option>${allowed.map((a) => html`<option value="${a.value}" ${a.value === value ? 'selected' : ''}>${a.label}</option>`)}</select></div>`;
        }
        return html`<div><label for="${id}">${f.label}</label><input type="text" id="${id}" name="${f.field}" value="${value}"></div>`;
      }
      case 'boolean':
        return html`<div><label for="${id}">${f.label}</label><select id="${id}" name="${f.field}"><option value="">${M.list.any}</option><option value="1" ${value === '1' ? 'selected' : ''}>${M.list.yes}</option><option value="0" ${value === '0' ? 'selected' : ''}>${M.list.no}</option></select></div>`;
      case 'range':
        return html`<div><label for="${id}-from">${f.label} ${M.list.from}</label><input type="date" id="${id}-from" name="${f.field}_from" value="${view.get(`${f.field}_from`) ?? ''}">
<label for="${id}-to">${f.label} ${M.list.to}</label><input type="date" id="${id}-to" name="${f.field}_to" value="${view.get(`${f.field}_to`) ?? ''}"></div>`;
      case 'reference':
        return html`<div><label for="${id}">${NESTED_FILTERS[f.field] ? M.lists.inside(f.label) : `${f.label} ${M.list.contains}`}</label><input type="search" id="${id}" name="${f.field}" value="${value}"></div>`;
      default:
        return html`<div><label for="${id}">${f.label} ${M.list.contains}</label><input type="search" id="${id}" name="${f.field}" value="${value}"></div>`;
    }
  }

  /** The type filter of an all-records list: one of its bundles, or any. */
  typeControl(listView: ListView, view: URLSearchParams): Html {
    const value = view.get(TYPE_PARAM) ?? '';
    return html`<div><label for="filter-type">${M.list.typeColumn}</label><select id="filter-type" name="${TYPE_PARAM}"><option value="">${M.list.any}</option>${listView.bundles.map(({ rt, ui }) => html`<option value="${rt.bundle.bundle}" ${rt.bundle.bundle === value ? 'selected' : ''}>${ui.label}</option>`)}</select></div>`;
  }

  /** One cell of a row. */
  cell(listView: ListView, column: ListColumn, r: Resource, ctx: RenderContext): Html {
    const f = column.field;
    if (!f) {
      const bundle = listView.bundles.find((b) => b.rt.type === r.type);
      return html`<td>${bundle?.ui.label ?? r.type}</td>`;
    }
    if (f.name === listView.labelField)
      return html`<td><a href="${recordPath(r)}">${labelOf(r, listView.labelField)}</a></td>`;
    if (f.kind === 'relationship' && f.target?.entityType === QUANTITY.entityType)
      return html`<td>${this.quantities(r.relationships?.[f.name]?.data, ctx)}</td>`;
    const value =
      f.kind === 'relationship'
        ? relationshipValue(r.relationships?.[f.name]?.data, ctx)
        : attributeValue(f, r.attributes?.[f.name], ctx);
    return html`<td>${value}</td>`;
  }

  /** A log's quantities as people read them (value, units, label), each a link to its page. */
  private quantities(data: unknown, ctx: RenderContext): Html {
    const refs = (Array.isArray(data) ? data : data ? [data] : []) as Array<{ type: string; id: string }>;
    if (!refs.length) return html`<span class="muted">${M.record.empty}</span>`;
    return join(
      refs.map((ref) => {
        const q = ctx.included.get(`${ref.type}:${ref.id}`);
        if (!q) return html`<span class="muted">${M.record.hidden}</span>`;
        const decimal = (q.attributes?.[QUANTITY.value] as { decimal?: string } | null | undefined)?.decimal;
        const value = decimal !== undefined && decimal !== null ? this.formats.number.format(Number(decimal)) : '';
        const unitsName = this.ctx.registry.get(q.type)?.fieldsByName.get(QUANTITY.units)?.name;
        const unitRef = unitsName ? q.relationships?.[unitsName]?.data : undefined;
        const unit =
          unitRef && !Array.isArray(unitRef)
            ? labelOf(ctx.included.get(`${unitRef.type}:${unitRef.id}`), ctx.labelFieldOf(unitRef.type.split('--')[0]!))
            : '';
        const label = String(q.attributes?.[QUANTITY.label] ?? '');
        return html`<a href="${recordPath(q)}">${M.lists.quantity(value, unit, label)}</a>`;
      }),
      ', ',
    );
  }
}
