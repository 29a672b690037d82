/**
 * Changes that come with time (storage/due-changes.ts): a record whose computed fields will show
 * something else at a known moment (an asset a done, future-dated movement log will move; an
 * inventory a future-dated adjustment will change) gets a row here, and a new version in the
 * change feed when the moment comes.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tilth_due_changes', (t) => {
    t.string('entity_type', 64).notNullable();
    t.integer('entity_id').notNullable();
    t.bigInteger('due_ts').notNullable();
    t.primary(['entity_type', 'entity_id', 'due_ts']);
    t.index(['due_ts'], 'tilth_due_changes_due_idx');
  });
  // The moves and group assignments already stored that take effect later. (Inventory adjustments
  // of logs dated ahead are recorded when such a log is next saved.)
  const now = Math.floor(Date.now() / 1000);
  for (const table of ['asset_location', 'asset_group']) {
    for (const column of ['start_ts', 'end_ts']) {
      await knex.raw(
        `INSERT INTO tilth_due_changes (entity_type, entity_id, due_ts) SELECT DISTINCT 'asset', entity_id, ${column} FROM ${table} WHERE ${column} > ? ON CONFLICT DO NOTHING`,
        [now],
      );
    }
  }
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
