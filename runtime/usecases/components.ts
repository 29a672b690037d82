/**
 * A record saved with its components in one transaction (issue 38 screen 5): the records it owns
 * through an entity_reference_revisions field, as a log owns its quantities. The API's clients do
 * this in steps (POST each quantity, then the log naming them, farmOS.js's way); a form sends it
 * all at once, so this command takes the same steps as those requests do, each through the same
 * entity service and checks (RecordCommands: create's permission, update's lock and access), but
 * in one write: the host locked first (the global lock order, storage/locks.ts: logs before
 * quantities), then each component created or updated, then the host saved naming them at their
 * new revisions, then the components the host no longer names deleted (unless another record
 * names them too, as a log's deletion spares a shared quantity, farm/hooks.ts). A failure of any
 * step undoes them all; a component's failure says which row it was (ComponentError).
 */
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import type { Db, EntityRecord, ItemValue, Reference } from '../storage/records.ts';
import type { EntityService } from '../entities/service.ts';
import type { EntityInput } from '../entities/input.ts';
import type { RecordLoader } from '../farm/loader.ts';
import { ApiError, ValidationError } from '../errors.ts';
import type { IfMatch } from './if-match.ts';
import type { Present, RecordCommands, Saved } from './records.ts';
import { write } from '../storage/transactions.ts';

/** One row of a component field as the face sent it. */
export interface ComponentRow {
  /** The component's type (its bundle). */
  rt: ResourceType;
  /** An existing component's UUID (one the host names now), or null for a new one. */
  uuid: string | null;
  /** An existing component the face saw no change to: named again as it is, not saved (no new revision). */
  unchanged?: boolean;
  /** The face's input for it, read inside the transaction (references resolved there). */
  read: (trx: Db, record: EntityRecord | null) => Promise<EntityInput>;
}

/** A component's save failed: which field and row, and why (the error as the commands threw it). */
export class ComponentError extends Error {
  constructor(
    readonly field: string,
    readonly index: number,
    readonly error: ApiError,
  ) {
    super(error.message);
    this.name = 'ComponentError';
  }
}

/** The resource identifiers of each component field's rows, in order, as the host's relationships name them. */
export type ComponentRefs = ReadonlyMap<string, Array<{ type: string; id: string }>>;

export class ComponentCommands {
  constructor(
    private readonly records: RecordCommands,
    private readonly entities: EntityService,
    private readonly loader: RecordLoader,
  ) {}

  /**
   * Create (`uuid` null) or update the host with its component fields' rows. Every component field
   * of the host's type named in `components` ends up naming exactly the rows given, in order.
   */
  async save<T>(
    principal: Principal,
    rt: ResourceType,
    uuid: string | null,
    input: {
      ifMatch?: IfMatch;
      components: ReadonlyMap<string, ComponentRow[]>;
      read: (trx: Db, record: EntityRecord | null, refs: ComponentRefs) => Promise<EntityInput>;
      present: Present<T>;
    },
  ): Promise<Saved<T>> {
    if (uuid === null) this.records.assertMayCreate(principal, rt);
    return write(this.records.knex, async (trx) => {
      const host =
        uuid === null ? null : await this.records.lockedForWrite(trx, principal, rt, uuid, 'update', input.ifMatch);
      const refs = new Map<string, Array<{ type: string; id: string }>>();
      const dropped: EntityRecord[] = [];
      for (const [fieldName, rows] of input.components) {
        const field = rt.fieldsByName.get(fieldName);
        if (!field?.target || field.type !== 'entity_reference_revisions')
          throw new ApiError(400, `${fieldName} is not a field of ${rt.type} whose records are edited with it.`);
        const current = host ? await this.named(trx, host, fieldName, field.target.entityType) : [];
        const kept = new Set<string>();
        const ids: Array<{ type: string; id: string }> = [];
        for (const [index, row] of rows.entries()) {
          try {
            ids.push(await this.saveRow(trx, principal, row, current));
          } catch (error) {
            throw error instanceof ApiError ? new ComponentError(fieldName, index, error) : error;
          }
          if (row.uuid) kept.add(row.uuid.toLowerCase());
        }
        refs.set(fieldName, ids);
        dropped.push(...current.filter((c) => !kept.has(c.uuid)));
      }
      const hostInput = await input.read(trx, host, refs);
      const id = host
        ? (await this.entities.update(trx, host, hostInput, principal), host.id)
        : (await this.entities.create(trx, rt, hostInput, principal)).id;
      for (const component of dropped) await this.dropUnlessShared(trx, principal, component);
      return this.records.reloadedIn(trx, rt, id, input.present);
    });
  }

  /** The components `fieldName` of `host` names now. */
  private async named(trx: Db, host: EntityRecord, fieldName: string, entityType: string): Promise<EntityRecord[]> {
    const value = host.values.get(fieldName) as ItemValue | ItemValue[] | undefined;
    const list = (Array.isArray(value) ? value : value ? [value] : []) as Reference[];
    const ids = list.map((r) => r.targetId);
    return ids.length ? this.loader.load(trx, entityType, ids, null) : [];
  }

  /** One row: an existing component (one the host names) updated, or a new one created. */
  private async saveRow(
    trx: Db,
    principal: Principal,
    row: ComponentRow,
    current: EntityRecord[],
  ): Promise<{ type: string; id: string }> {
    if (row.uuid === null) {
      const { uuid } = await this.records.createIn(trx, principal, row.rt, await row.read(trx, null));
      return { type: row.rt.type, id: uuid };
    }
    const own = current.find((c) => c.uuid === row.uuid!.toLowerCase());
    if (!own || own.bundle !== row.rt.bundle.bundle)
      throw new ValidationError([
        { field: null, detail: `${row.uuid} is not one of the ${row.rt.entityType.labelPlural} of this record.` },
      ]);
    if (row.unchanged) return { type: row.rt.type, id: own.uuid };
    // The host is locked already; the component after it (logs before quantities).
    const record = await this.records.lockedForWrite(trx, principal, row.rt, row.uuid, 'update', undefined);
    await this.entities.update(trx, record, await row.read(trx, record), principal);
    return { type: row.rt.type, id: record.uuid };
  }

  /** A component the host no longer names: deleted, unless another record still names it (it stays theirs). */
  private async dropUnlessShared(trx: Db, principal: Principal, component: EntityRecord): Promise<void> {
    const holders = await this.entities.store.holdersOf(trx, component.rt.entityType.entityType, [component.id]);
    if ([...holders.values()].some((ids) => ids.size > 0)) return;
    const locked = await this.records.lockedForWrite(trx, principal, component.rt, component.uuid, 'delete', undefined);
    await this.entities.delete(trx, locked, principal);
  }
}
