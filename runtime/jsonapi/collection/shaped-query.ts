/**
 * A query string written in an API shape's names and values, read into the stored fields' (so the
 * filter compiler, the pager, the loader and the include walker see one model whatever the
 * shape): `filter[archived]=1` in the farmOS 4.x shape is `status = archived`, `last_archived` is
 * the stored `archived`; in the 2.x shape `filter[status]=done` also finds abandoned logs, which
 * read as done there. Lookups only, in the maps each bundle's shapes were compiled into at start
 * (model/shapes.ts); a shape that differs in nothing for the types named passes the query through.
 */
import type { ModelRegistry, ResourceType } from '../../model/registry.ts';
import type { ShapedField, ShapeName } from '../../model/shapes.ts';
import type { FilterCondition, FilterGroup, JsonApiQuery, SortField } from '../query/index.ts';
import { badParameter } from '../../errors.ts';

interface Translated {
  path: string;
  /** The field the path ends on, as the shape has it; null when it ends elsewhere (an id, a property, a relationship). */
  terminal: ShapedField | null;
}

const TRUE = new Set(['1', 'true']);
const FALSE = new Set(['0', 'false']);

export class ShapedQuery {
  constructor(
    private readonly registry: ModelRegistry,
    private readonly shape: ShapeName,
  ) {}

  /**
   * `query` with every path and value in stored terms (the same object when nothing differs).
   * Without `rt` (a related endpoint, whose paths start elsewhere) only the sparse fieldsets, which
   * name their types.
   */
  read(rt: ResourceType | undefined, query: JsonApiQuery): JsonApiQuery {
    // Most requests name no field at all: nothing to read.
    if (!query.filter.members.length && !query.sort.length && !query.include.length && !query.fields.size) return query;
    const fields = this.fieldsets(query.fields);
    if (!rt) return { ...query, fields };
    const filter = this.group(rt, query.filter);
    const sort = query.sort.map((s): SortField => ({ ...s, path: this.path([rt], s.path).path }));
    const include = query.include.map((segments) => this.path([rt], segments.join('.')).path.split('.'));
    return { ...query, fields, filter, sort, include };
  }

  private fieldsets(fields: Map<string, Set<string>>): Map<string, Set<string>> {
    if (!fields.size) return fields;
    const out = new Map<string, Set<string>>();
    for (const [type, names] of fields) {
      const shaped = this.registry.get(type)?.shapes[this.shape];
      if (!shaped?.differs) out.set(type, names);
      else out.set(type, new Set([...names].map((n) => shaped.byName.get(n)?.name ?? n)));
    }
    return out;
  }

  private group(rt: ResourceType, group: FilterGroup): FilterGroup {
    return {
      ...group,
      members: group.members.map((m) => (m.kind === 'group' ? this.group(rt, m) : this.condition(rt, m))),
    };
  }

  private condition(rt: ResourceType, c: FilterCondition): FilterCondition {
    const { path, terminal } = this.path([rt], c.path);
    if (!terminal?.fromShown || c.value === null) return path === c.path ? c : { ...c, path };
    const stored = (v: string): string[] => {
      if (terminal.shownAsBoolean) {
        const lower = v.toLowerCase();
        const shown = TRUE.has(lower) ? true : FALSE.has(lower) ? false : null;
        if (shown === null)
          throw badParameter(
            `filter[${c.key}]`,
            `"${c.path}" is true or false: filter by 1, 0, true or false, not ${JSON.stringify(v)}.`,
          );
        return [...(terminal.fromShown!.get(shown) ?? [])];
      }
      return [...(terminal.fromShown!.get(v) ?? [v])];
    };
    if (c.operator === '=' || c.operator === '<>') {
      const values = stored(c.value as string);
      if (values.length === 1) return { ...c, path, value: values[0]! };
      return { ...c, path, operator: c.operator === '=' ? 'IN' : 'NOT IN', value: values };
    }
    if (c.operator === 'IN' || c.operator === 'NOT IN')
      return { ...c, path, value: [...new Set((c.value as string[]).flatMap(stored))] };
    return { ...c, path };
  }

  /**
   * A dotted path in stored names: each segment looked up in the shape's names of the types it
   * may be on, through relationships; the first segment that is not a field (an id, a property,
   * `meta`) and everything after it are kept as written, for the compiler to judge.
   */
  private path(types: ResourceType[], path: string): Translated {
    const segments = path.split('.');
    let terminal: ShapedField | null = null;
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i]!;
      let hit: ShapedField | undefined;
      for (const t of types) {
        const shaped = t.shapes[this.shape];
        const field = shaped.byName.get(segment);
        if (field) {
          hit = shaped.byField.get(field);
          break;
        }
      }
      if (!hit) return { path: segments.join('.'), terminal: null };
      segments[i] = hit.field.name;
      if (hit.field.kind !== 'relationship') {
        terminal = i === segments.length - 1 ? hit : null;
        break;
      }
      types = this.registry.targetsOf(hit.field);
      if (!types.length) break;
    }
    return { path: segments.join('.'), terminal };
  }
}
