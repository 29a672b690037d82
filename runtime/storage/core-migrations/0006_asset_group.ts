/**
 * Which groups assets are in, as time intervals (farm/placements.ts), beside `asset_location`: one
 * row per asset, group and interval, from the group-assignment log that put it there. An asset in
 * no group has no row. Columns are named as a relationship side table's (`entity_id` → `target_id`),
 * so `filter[group.id]` goes through it as through any multi-valued relationship, with a time
 * condition added; an asset's computed `group` is one indexed lookup instead of a walk over its logs.
 *
 * Existing farms get their intervals computed at the next start: the note in `tilth_pending_work`
 * asks for every asset's placements to be rebuilt, which now fills both tables.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('asset_group', (t) => {
    t.integer('entity_id').notNullable();
    t.integer('target_id').notNullable();
    t.integer('delta').notNullable();
    t.integer('log_id').notNullable();
    // Unix seconds: the interval is [start_ts, end_ts), open-ended when end_ts is NULL.
    t.bigInteger('start_ts').notNullable();
    t.bigInteger('end_ts').nullable();
    t.index(['entity_id', 'start_ts'], 'asset_group_entity_idx');
    t.index(['target_id', 'start_ts'], 'asset_group_target_idx');
    t.index(['log_id'], 'asset_group_log_idx');
  });
  if (!(await knex('tilth_pending_work').where('name', 'asset_location').first()))
    await knex('tilth_pending_work').insert({ name: 'asset_location' });
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
