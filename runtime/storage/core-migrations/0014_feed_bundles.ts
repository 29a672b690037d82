/**
 * The change feed keeps each record's entity type and bundle, not the JSON:API 2.x resource type
 * (`log--activity`): the wire name is the face's (jsonapi/changes.ts maps them to it), so that
 * another face can serve the same feed. The rows already there get their bundle from the name
 * they kept (entity type, two dashes, bundle), and the name goes.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw("ALTER TABLE change_feed ADD COLUMN bundle TEXT NOT NULL DEFAULT ''");
  await knex.raw('UPDATE change_feed SET bundle = substr(type, length(entity_type) + 3)');
  await knex.raw('ALTER TABLE change_feed DROP COLUMN type');
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
