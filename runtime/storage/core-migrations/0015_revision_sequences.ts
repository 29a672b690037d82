/**
 * On PostgreSQL, revision numbers come from a sequence per entity type instead of the counter row
 * in `entity_revision_counter`, which every save of a type locked until its commit, so that the
 * saves of one type took turns (storage/revision-numbers.ts, with the figures). Each sequence
 * starts after the larger of the counter and the largest number stored, so no number is given
 * twice; the counter table goes. SQLite keeps its counter (it writes one transaction at a time),
 * and nothing changes there.
 *
 * The types: those that keep revisions in Tilth's definitions, and any the counter or the
 * revisions name. A type that keeps revisions added later needs a migration of its own like this.
 */
import type { Knex } from 'knex';
import { dialectOf } from '../dialect.ts';

const REVISIONED_TYPES = ['asset', 'log', 'quantity', 'taxonomy_term'];

export async function up(knex: Knex): Promise<void> {
  if (dialectOf(knex).name !== 'postgres') return;
  const named = await knex.raw(
    'SELECT entity_type FROM entity_revision_counter UNION SELECT DISTINCT entity_type FROM entity_revision',
  );
  const types = new Set([...REVISIONED_TYPES, ...named.rows.map((r: { entity_type: string }) => r.entity_type)]);
  for (const type of [...types].sort()) {
    // The name storage/revision-numbers.ts revisionSequence gives (written out: a migration does
    // not change after it is applied, whatever the runtime's code does).
    if (!/^[a-z][a-z0-9_]*$/.test(type)) throw new Error(`Not an entity type's name: ${type}`);
    const sequence = `entity_revision_${type}_seq`;
    await knex.raw(`CREATE SEQUENCE ${sequence}`);
    // setval(…, n, true): the next nextval gives n + 1; with nothing stored, (1, false) gives 1.
    await knex.raw(
      `SELECT setval(?::regclass, GREATEST(1, last), last > 0) FROM (SELECT GREATEST(
         COALESCE((SELECT last_id FROM entity_revision_counter WHERE entity_type = ?), 0),
         COALESCE((SELECT MAX(revision_id) FROM entity_revision WHERE entity_type = ?), 0)) AS last) AS numbered`,
      [sequence, type, type],
    );
  }
  await knex.raw('DROP TABLE entity_revision_counter');
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
