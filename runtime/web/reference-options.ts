/**
 * The records a reference field may point at, offered as its input's `<datalist>` (issue 38
 * screen 5: "an entity reference as a search limited to its target bundles"): the first
 * OPTION_LIMIT by name, or those whose name contains what was typed when the person asks to find.
 * A page never loads a whole table: one statement per target entity type (not per bundle) of at
 * most OPTION_LIMIT + 1 rows, through the API's filter compiler and the access policy's list
 * condition, so only records the person may see are offered. A field's target filter (a location
 * is an asset with is_location) is a condition of the same query.
 */
import type { Principal } from '../access/principal.ts';
import { listCondition, mayOnType } from '../access/policy.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ResourceType } from '../model/registry.ts';
import type { AppContext } from '../context.ts';
import { slotName } from '../jsonapi/collection/compile.ts';
import { selectRows } from '../storage/sql.ts';
import type { WebReads } from './reads.ts';

/** How many records a reference's list offers; more than this and the form offers "find". */
export const OPTION_LIMIT = 50;

export interface ReferenceOption {
  /** What the input holds once chosen: the name and, in brackets, the UUID (records.ts resolveReference). */
  value: string;
  label: string;
}

export interface ReferenceOptions {
  options: ReferenceOption[];
  /** More records match than are offered: the form offers "find". */
  more: boolean;
}

export class ReferenceOptionReader {
  /** One form's answers, by target and search: fields with the same targets (every quantity row's units) share one statement. */
  private readonly memo = new Map<string, Promise<ReferenceOptions>>();

  constructor(
    private readonly ctx: AppContext,
    private readonly reads: WebReads,
    private readonly principal: Principal,
  ) {}

  /** The records `field` may point at whose name contains `search` (all, when null), at most OPTION_LIMIT. */
  options(field: FieldDescriptor, search: string | null): Promise<ReferenceOptions> {
    const targets = this.ctx.registry.targetsOf(field);
    const key = JSON.stringify([targets.map((t) => t.type), field.target?.filter ?? null, search]);
    let found = this.memo.get(key);
    if (!found) this.memo.set(key, (found = this.read(targets, field.target?.filter, search)));
    return found;
  }

  private async read(
    targets: ResourceType[],
    targetFilter: Record<string, string | number | boolean> | undefined,
    search: string | null,
  ): Promise<ReferenceOptions> {
    const byType = new Map<string, ResourceType[]>();
    for (const t of targets) byType.set(t.entityType.entityType, [...(byType.get(t.entityType.entityType) ?? []), t]);
    const options: ReferenceOption[] = [];
    let more = false;
    for (const group of byType.values()) {
      const first = group[0]!;
      const et = first.entityType;
      if (!mayOnType(this.principal, et, 'view')) continue;
      const label = first.fieldsByName.get(et.labelField);
      const column = label?.storage.kind === 'columns' ? label.storage.columns.value : undefined;
      if (!column) continue;
      const params = new URLSearchParams();
      for (const [name, value] of Object.entries(targetFilter ?? {})) params.set(`filter[${name}]`, String(value));
      if (search) {
        params.set('filter[search][condition][path]', et.labelField);
        params.set('filter[search][condition][operator]', 'CONTAINS');
        params.set('filter[search][condition][value]', search);
      }
      const query = this.reads.query(first, params.toString());
      const knex = this.reads.services.knex;
      const qb = knex(`${et.table} as e`).whereIn(
        'e.bundle',
        group.map((t) => t.bundle.bundle),
      );
      const guard = listCondition(this.principal, et, 'e');
      if (guard) guard(qb);
      const paths = this.reads.compiler.applyFilter(qb, first, query.filter, this.principal);
      qb.select('e.uuid', `e.${column} as label`)
        .orderBy(`e.${column}`)
        .limit(OPTION_LIMIT + 1 - options.length);
      const values = new Map<string, string | number | boolean>([['at', Math.floor(Date.now() / 1000)]]);
      this.reads.compiler.filterValues(paths, query.filter, values);
      const { sql, bindings } = qb.toSQL();
      const rows = (await selectRows(
        knex,
        sql,
        bindings.map((b) => {
          const name = slotName(b);
          return name === null ? b : values.get(name)!;
        }),
      )) as Array<{ uuid: string; label: string | null }>;
      for (const row of rows) {
        if (options.length === OPTION_LIMIT) {
          more = true;
          break;
        }
        const name = row.label ?? '';
        options.push({ value: name ? `${name} [${row.uuid}]` : row.uuid, label: name || row.uuid });
      }
      if (more) break;
    }
    return { options, more };
  }
}
