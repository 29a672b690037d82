/**
 * Organizations (farmOS 4.0, definitions/entity-types/organization.yaml) keep revisions, so on
 * PostgreSQL they need the sequence their revision numbers come from, as 0015 made one for each
 * type that kept revisions then (storage/revision-numbers.ts). It starts after any organization
 * revision already stored (none, unless an earlier run made some). SQLite keeps its counter row,
 * which a new type gets on its first save: nothing to do there.
 */
import type { Knex } from 'knex';
import { dialectOf } from '../dialect.ts';

// The name storage/revision-numbers.ts revisionSequence gives, written out: a migration does not
// change after it is applied, whatever the runtime's code does.
const SEQUENCE = 'entity_revision_organization_seq';

export async function up(knex: Knex): Promise<void> {
  if (dialectOf(knex).name !== 'postgres') return;
  await knex.raw(`CREATE SEQUENCE IF NOT EXISTS ${SEQUENCE}`);
  // setval(…, n, true): the next nextval gives n + 1; with nothing stored, (1, false) gives 1.
  await knex.raw(
    `SELECT setval(?::regclass, GREATEST(1, last), last > 0) FROM (SELECT
       COALESCE((SELECT MAX(revision_id) FROM entity_revision WHERE entity_type = 'organization'), 0) AS last) AS numbered`,
    [SEQUENCE],
  );
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
