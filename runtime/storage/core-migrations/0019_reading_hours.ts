/**
 * A stream's readings summed up by the hour (issue 42 §6: "a stream of a million readings draws in
 * under a second"). A chart asks for one bucket per pixel: over a year and more each bucket spans
 * hours, and reading every reading for it (a million rows scanned and grouped) cost seconds. Each
 * hour's row holds what the buckets need (first and last time, minimum, maximum, count), kept in
 * step by every write of readings (farm/data-streams.ts), so a long range reads an hour's row for
 * sixty readings a minute apart and only its partial first and last hours reading by reading.
 * Filled here from the readings already stored; deleting a stream deletes its hours.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('data_stream_hours', (t) => {
    t.integer('stream_id').notNullable().references('id').inTable('data_stream').onDelete('CASCADE');
    // The hour's start, Unix seconds (a multiple of 3600).
    t.bigInteger('hour').notNullable();
    t.bigInteger('first').notNullable();
    t.bigInteger('last').notNullable();
    t.double('min').notNullable();
    t.double('max').notNullable();
    t.bigInteger('n').notNullable();
    t.primary(['stream_id', 'hour']);
  });
  // Nothing to sum on a new farm (and SQLite checks the foreign key's table even for no rows: the
  // core migrations also run on a database the model's have not made, test/generator/migrations).
  if (!(await knex('data_stream_basic').first('stream_id'))) return;
  // The hour of a time before 1970 too: % keeps the dividend's sign on both databases.
  await knex.raw(`INSERT INTO data_stream_hours (stream_id, hour, first, last, min, max, n)
    SELECT stream_id, "timestamp" - ((("timestamp" % 3600) + 3600) % 3600) AS hour,
      MIN("timestamp"), MAX("timestamp"), MIN(value), MAX(value), COUNT(*)
    FROM data_stream_basic GROUP BY stream_id, "timestamp" - ((("timestamp" % 3600) + 3600) % 3600)`);
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
