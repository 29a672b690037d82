/**
 * Where assets are, as time intervals (farm/placements.ts): one row per asset, location and
 * interval, from the movement log that put it there. An asset that was nowhere has no row; a
 * movement with no location gives one row with a NULL `target_id` (its geometry still counts).
 * The columns are named as a relationship side table's (`entity_id` → `target_id`), so filters and
 * sorts go through it as through any multi-valued relationship, with a time condition added.
 *
 * Indexes: by asset (an asset's location at a time), by location (the assets in a location at a
 * time) and by log (the rows a log's change replaces).
 *
 * Existing farms get their intervals computed at the next start: this migration leaves a note in
 * `tilth_pending_work`, which the server clears once it has rebuilt every asset's intervals.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('asset_location', (t) => {
    t.integer('entity_id').notNullable();
    t.integer('target_id').nullable();
    t.integer('delta').notNullable();
    t.integer('log_id').notNullable();
    // Unix seconds: the interval is [start_ts, end_ts), open-ended when end_ts is NULL.
    t.bigInteger('start_ts').notNullable();
    t.bigInteger('end_ts').nullable();
    t.index(['entity_id', 'start_ts'], 'asset_location_entity_idx');
    t.index(['target_id', 'start_ts'], 'asset_location_target_idx');
    t.index(['log_id'], 'asset_location_log_idx');
  });
  await knex.schema.createTable('tilth_pending_work', (t) => {
    t.text('name').primary();
  });
  await knex('tilth_pending_work').insert({ name: 'asset_location' });
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
