/**
 * What offline clients and Field Kit need (issue 25): the change feed, and the field modules.
 *
 * The change feed (storage/change-feed.ts): one row per record ever saved, with its latest state
 * (its position in commit order, which serves as its version, and whether it is deleted).
 *
 * `position` numbers the rows: on SQLite an AUTOINCREMENT rowid (never reused, so a row written
 * again by INSERT OR REPLACE always gets a higher one); on PostgreSQL a bigserial, and `txid` the
 * writing transaction's id (xid8), by which the feed is read in commit order.
 *
 * Existing farms get a row for every record at the next start: this migration leaves a note in
 * `tilth_pending_work` (made by 0005), which the server clears once it has filled the feed.
 *
 * `field_module`: Field Kit's screens, installed with `tilth fieldkit add-module` and served as
 * farmOS's farm_fieldkit serves them (storage/field-modules.ts): the script itself is kept here,
 * so every server of a farm serves the same one and a backup holds it.
 */
import type { Knex } from 'knex';
import { dialectOf } from '../dialect.ts';

export async function up(knex: Knex): Promise<void> {
  const postgres = dialectOf(knex).name === 'postgres';
  await knex.schema.createTable('change_feed', (t) => {
    if (postgres) t.bigIncrements('position');
    else t.increments('position');
    t.text('entity_type').notNullable();
    t.integer('entity_id').notNullable();
    // The JSON:API resource type, `log--activity`: what clients filter by.
    t.text('type').notNullable();
    t.text('uuid').notNullable();
    t.boolean('deleted').notNullable();
    // Unix seconds of the change.
    t.bigInteger('changed').notNullable();
    if (postgres) t.specificType('txid', 'xid8').notNullable();
    t.unique(['entity_type', 'entity_id'], { indexName: 'change_feed_record_uniq' });
    if (postgres) t.index(['txid', 'position'], 'change_feed_commit_order_idx');
  });
  // Only tombstones are ever pruned; only they are indexed by time.
  await knex.raw('CREATE INDEX change_feed_tombstones_idx ON change_feed (changed) WHERE deleted');
  await knex('tilth_pending_work').insert({ name: 'change_feed' });

  await knex.schema.createTable('field_module', (t) => {
    t.text('name').primary();
    t.text('label').notNullable();
    t.text('description').notNullable();
    t.text('script').notNullable();
    // The script's SHA-256 (base64url): its ETag.
    t.text('hash').notNullable();
    t.bigInteger('changed').notNullable();
  });
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
