/**
 * Saved views of the web interface's lists (issue 42 §5, runtime/web/saved-views.ts): a person's
 * named list address (its path, and its query of filters, columns and sort), private to its owner
 * unless a manager shared it with everyone. Names are unique per owner; the dashboard reads a
 * person's own views and the shared ones by the two indexes. Deleting a user deletes their views.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tilth_saved_view', (t) => {
    t.increments('id').primary();
    t.integer('owner_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('name', 128).notNullable();
    // The list's path (/farm/<entity type>[/<bundle>]) and its query string, both checked when saved.
    t.string('path', 255).notNullable();
    t.string('query', 4096).notNullable();
    t.boolean('shared').notNullable().defaultTo(false);
    t.bigInteger('created').notNullable();
    t.unique(['owner_id', 'name'], { indexName: 'tilth_saved_view_owner_name' });
    t.index(['shared'], 'tilth_saved_view_shared_idx');
  });
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
