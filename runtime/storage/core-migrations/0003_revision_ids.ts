/**
 * Revision ids count per entity type, as Drupal's (each entity type has its own revision table
 * and serial): the first asset, the first log and the first quantity each have revision 1.
 *
 * Until now one serial (`entity_revision.id`) numbered the revisions of every type. This keeps
 * that column as the row's key and adds `revision_id`, the public number, unique per entity type.
 * Existing rows are renumbered 1, 2, 3… per type in the order they were saved, and each record's
 * `revision_id` column is moved to the new number of the same revision, so every record keeps
 * pointing at the revision it pointed at. `entity_revision_counter` hands out the next number
 * (see storage/revisions.ts for why a counter row and not MAX()+1).
 */
import type { Knex } from 'knex';

/** Entity types that kept revisions before this migration, and their record tables. */
const REVISIONED_TABLES: Record<string, string> = {
  asset: 'asset',
  log: 'log',
  quantity: 'quantity',
  taxonomy_term: 'taxonomy_term',
};

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('entity_revision', (t) => {
    t.integer('revision_id').nullable();
  });
  // Both SQLite (3.33+) and PostgreSQL take UPDATE … FROM with a window function.
  await knex.raw(
    `UPDATE entity_revision SET revision_id = numbered.n
       FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY entity_type ORDER BY id) AS n FROM entity_revision) AS numbered
      WHERE numbered.id = entity_revision.id`,
  );
  const types = (await knex('entity_revision').distinct('entity_type')).map(
    (r: { entity_type: string }) => r.entity_type,
  );
  for (const type of types) {
    const table = REVISIONED_TABLES[type] ?? type;
    if (!(await knex.schema.hasTable(table)) || !(await knex.schema.hasColumn(table, 'revision_id'))) continue;
    await knex.raw(
      `UPDATE ?? SET revision_id = (SELECT r.revision_id FROM entity_revision r WHERE r.id = ??.revision_id AND r.entity_type = ?) WHERE revision_id IS NOT NULL`,
      [table, table, type],
    );
  }
  await knex.schema.alterTable('entity_revision', (t) => {
    t.unique(['entity_type', 'revision_id'], { indexName: 'entity_revision_number_uniq' });
  });
  await knex.schema.createTable('entity_revision_counter', (t) => {
    t.text('entity_type').primary();
    t.integer('last_id').notNullable();
  });
  await knex.raw(
    `INSERT INTO entity_revision_counter (entity_type, last_id) SELECT entity_type, MAX(revision_id) FROM entity_revision GROUP BY entity_type`,
  );
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
