/**
 * The farm's commands, built once per farm over its services graph (context.ts `FarmServices`):
 * every face (the JSON:API handlers, the web pages through them, the data endpoints) and every
 * command that writes as they do (`tilth import geo|csv`) takes them from here.
 *
 * They are kept by the farm's context (`AppContext`, which host/farm.ts builds once per farm):
 * the context, at a rank below this layer, cannot name them itself.
 */
import type { AppContext } from '../context.ts';
import { RecordCommands } from './records.ts';
import { FileCommands } from './files.ts';
import { ReadingCommands } from './readings.ts';
import { BulkCommands } from './bulk.ts';

export interface FarmCommands {
  /** View, create, update and delete records (usecases/records.ts). */
  records: RecordCommands;
  /** Upload files and attach them to records' fields (usecases/files.ts). */
  files: FileCommands;
  /** Store readings of data streams and sensors (usecases/readings.ts). */
  readings: ReadingCommands;
  /** One change to many records of a type, all or nothing (usecases/bulk.ts). */
  bulk: BulkCommands;
}

const byFarm = new WeakMap<AppContext, FarmCommands>();

/** The farm's commands, built on first use. */
export function farmCommands(ctx: AppContext): FarmCommands {
  let commands = byFarm.get(ctx);
  if (!commands) {
    const { loader, entities, files } = ctx.services;
    const records = new RecordCommands(ctx.db.knex, loader, entities);
    commands = {
      records,
      files: new FileCommands(ctx.registry, records, entities, files),
      readings: new ReadingCommands(ctx.db.knex, loader, entities),
      bulk: new BulkCommands(ctx.db.knex, loader, entities),
    };
    byFarm.set(ctx, commands);
  }
  return commands;
}
