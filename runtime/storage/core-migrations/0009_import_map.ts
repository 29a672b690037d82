/**
 * What `tilth import farmos` brought in (runtime/farmos-import/): one row per record copied from a
 * source farm, by source URL, entity type and UUID, with the source's `changed` and a digest of its
 * document as read. A second run skips a record whose digest is unchanged (idempotence), a run that
 * was stopped resumes by skipping what its committed pages recorded, and `--prune` deletes the
 * records the source no longer has. Readings of a data stream have a row of their own
 * (entity_type `data_stream_readings`).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tilth_import_map', (t) => {
    t.string('source', 1024).notNullable();
    t.string('entity_type', 64).notNullable();
    t.string('uuid', 36).notNullable();
    t.string('bundle', 128).notNullable();
    t.bigInteger('source_changed').nullable();
    t.string('digest', 64).notNullable();
    t.bigInteger('imported_at').notNullable();
    t.primary(['source', 'entity_type', 'uuid']);
  });
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
