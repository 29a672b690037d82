/**
 * A quick form's submission (issue 42 §2): several records made in ONE write, every one or none.
 * The caller's right to create each record's type is checked before the transaction opens (a form
 * the person may not use changes nothing and reads nothing); then, in the transaction, the face's
 * `prepare` (references resolved, a photo placed) and each record in order through the create
 * command's `createIn` (the entity service's defaults, farm behaviour, revisions and feed rows), a
 * record's input read with the records made before it, so that a log names the quantity or the
 * animals made just above. A record's failure says which one it was (QuickRecordError).
 */
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import type { Db } from '../storage/records.ts';
import type { EntityInput } from '../entities/input.ts';
import { ApiError } from '../errors.ts';
import type { RecordCommands } from './records.ts';
import { write } from '../storage/transactions.ts';

/** The records made so far, by the form's name for them: resource identifiers, in order. */
export type MadeRecords = ReadonlyMap<string, ReadonlyArray<{ type: string; id: string }>>;

export interface PlannedRecord {
  /** The form's name for it (several rows of a repeating group share one). */
  key: string;
  /** Made per row of a repeating group: its own name too (`<key>#<row>`), for the records of that row. */
  rowKey?: string;
  rt: ResourceType;
  /** Its input, read inside the transaction with the records made before it. */
  read: (trx: Db, made: MadeRecords) => Promise<EntityInput>;
}

/** One record of the form could not be made: which (its place in the plan) and why. */
export class QuickRecordError extends Error {
  constructor(
    readonly index: number,
    readonly error: ApiError,
  ) {
    super(error.message);
    this.name = 'QuickRecordError';
  }
}

export class QuickFormCommands {
  constructor(private readonly records: RecordCommands) {}

  /** Whether `principal` may create every type of `types` (the form is offered only then). */
  mayCreateAll(principal: Principal, types: readonly ResourceType[]): boolean {
    try {
      for (const rt of types) this.records.assertMayCreate(principal, rt);
      return true;
    } catch (error) {
      if (error instanceof ApiError) return false;
      throw error;
    }
  }

  /** Make every planned record in one transaction; the records made, by key. */
  async submit(
    principal: Principal,
    planned: readonly PlannedRecord[],
    prepare: (trx: Db) => Promise<void> = async () => {},
  ): Promise<MadeRecords> {
    for (const p of planned) this.records.assertMayCreate(principal, p.rt);
    return write(this.records.knex, async (trx) => {
      await prepare(trx);
      const made = new Map<string, Array<{ type: string; id: string }>>();
      for (const [index, p] of planned.entries()) {
        try {
          const { uuid } = await this.records.createIn(trx, principal, p.rt, await p.read(trx, made));
          made.set(p.key, [...(made.get(p.key) ?? []), { type: p.rt.type, id: uuid }]);
          if (p.rowKey) made.set(p.rowKey, [{ type: p.rt.type, id: uuid }]);
        } catch (error) {
          throw error instanceof ApiError ? new QuickRecordError(index, error) : error;
        }
      }
      return made;
    });
  }
}
