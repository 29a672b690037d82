/**
 * Runs an import: every record through the same reading and saving as a JSON:API POST (the
 * JSON:API InputReader, then the create command, usecases/records.ts: the caller's right to
 * create the type, validation, farm behaviour, revisions), all in one transaction, as the given
 * user. The first bad record stops it; its message names the row, and nothing is kept.
 */
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import { InputReader } from '../jsonapi/input.ts';
import { farmCommands } from '../usecases/commands.ts';
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
  ctx: AppContext,
  items: ImportItem[],
  principal: Principal,
): Promise<Map<string, number>> {
  const created = new Map<string, number>();
  const input = new InputReader(ctx.registry);
  const commands = farmCommands(ctx).records;
  await write(ctx.db.knex, async (trx) => {
    for (const item of items) {
      try {
        // The caller's right to create the type first, as the API checks it before reading a body.
        commands.assertMayCreate(principal, item.rt);
        await commands.createIn(trx, principal, item.rt, await input.read(trx, item.rt, item.document));
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
