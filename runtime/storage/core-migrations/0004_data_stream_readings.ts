/**
 * Readings of basic data streams (farmOS's {data_stream_basic} table): one row per value, kept out
 * of the entity tables because a farm gathers millions of them. Reads always ask for one stream
 * (or a sensor's few) over a time range, newest first: the (stream_id, timestamp) index answers
 * that with a range scan, whatever the table's size. Values are doubles: what a device posts as a
 * JSON number reads back the same. Deleting a data stream deletes its readings (farmOS's
 * data_stream_data_stream_delete), through the foreign key.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('data_stream_basic', (t) => {
    t.integer('stream_id').notNullable().references('id').inTable('data_stream').onDelete('CASCADE');
    // Unix seconds, like every other timestamp in Tilth.
    t.bigInteger('timestamp').notNullable();
    t.double('value').notNullable();
    t.index(['stream_id', 'timestamp'], 'data_stream_basic_stream_timestamp_idx');
  });
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
