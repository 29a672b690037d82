/**
 * What lets a second `tilth import farmos` run skip what has not changed (issue 24): per source and
 * resource type, the source's time a completed run started reading it from (`tilth_import_marks`;
 * the next run asks the source only for records changed at or after it), and each imported file's
 * SHA-256 in the import map (verification compares the bytes here with it instead of downloading
 * the source's again, while the source's file record is unchanged).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tilth_import_marks', (t) => {
    t.string('source', 1024).notNullable();
    t.string('resource_type', 160).notNullable();
    t.bigInteger('changed_since').notNullable();
    t.primary(['source', 'resource_type']);
  });
  await knex.schema.alterTable('tilth_import_map', (t) => {
    t.string('sha256', 64).nullable();
  });
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
