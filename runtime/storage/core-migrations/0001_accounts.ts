/**
 * The runtime's own tables that are not records of the data model: role grants, revisions and
 * server state. Hand-written because they are part of the runtime, not of any definition.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('user_role', (t) => {
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('role').notNullable();
    t.primary(['user_id', 'role']);
  });
  // One row per save of a revisioned record: who, when, why, and the stored values.
  await knex.schema.createTable('entity_revision', (t) => {
    t.increments('id');
    t.text('entity_type').notNullable();
    t.integer('entity_id').notNullable();
    t.integer('user_id').nullable();
    t.bigInteger('created').notNullable();
    t.text('message').nullable();
    t.text('data').notNullable();
    t.index(['entity_type', 'entity_id', 'id'], 'entity_revision_entity_idx');
  });
  await knex.schema.createTable('tilth_state', (t) => {
    t.text('name').primary();
    t.text('value').notNullable();
  });
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
