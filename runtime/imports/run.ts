/**
 * Runs an import: every record through the same reading and saving as a JSON:API POST
 * (InputReader, EntityService: validation, farm behaviour, revisions), all in one transaction,
 * as the given user. The first bad record stops it; its message names the row, and nothing is
 * kept.
 */
import type { Knex } from 'knex';
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import type { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { ApiError, ValidationError } from '../errors.ts';
import { write } from '../storage/transactions.ts';

export class ImportError extends Error {}

export interface ImportItem {
  /** How a message names it: "row 7", "feature 3". */
  where: string;
  rt: ResourceType;
  document: unknown;
}

/** Import the items; returns how many of each resource type were created. */
export async function runImport(
  s: JsonApiServices,
  db: Knex,
  items: ImportItem[],
  principal: Principal,
): Promise<Map<string, number>> {
  const created = new Map<string, number>();
  await write(db, async (trx) => {
    for (const item of items) {
      try {
        const input = await s.input.read(trx, item.rt, item.document);
        await s.entities.create(trx, item.rt, input, principal);
      } catch (error) {
        if (error instanceof ValidationError)
          throw new ImportError(`${item.where}: ${error.violations.map((v) => v.detail).join(' ')}`);
        if (error instanceof ApiError) throw new ImportError(`${item.where}: ${error.detail}`);
        throw error;
      }
      created.set(item.rt.type, (created.get(item.rt.type) ?? 0) + 1);
    }
  });
  return created;
}
