/**
 * Field Kit from farmOS.app on a farm made before issue 25: its `fieldkit` client was created
 * public, with the default scope `user_access` and no CORS origin, so Field Kit's hosted app
 * cannot sign in to it. ensureFieldKitClient leaves an existing client alone (an administrator
 * may have set it), so this brings the client Tilth made up to what a new farm gets: the origin
 * https://farmos.app and farmOS's scopes farm_manager, farm_worker.
 *
 * Only a client that still has the old default's scope (`user_access` alone) is changed: any other
 * scope list was set by an administrator (or is already the new default), and then its origins are
 * theirs too. Origins the client already lists are kept. A farm without a `fieldkit` client (its
 * administrator deleted it) gets none from here. The values are written out, not imported: an
 * applied migration must not change when the runtime's constants do.
 */
import type { Knex } from 'knex';

const CLIENT_ID = 'fieldkit';
const OLD_SCOPES = JSON.stringify(['user_access']);
const SCOPES = JSON.stringify(['farm_manager', 'farm_worker']);
const ORIGIN = 'https://farmos.app';

export async function up(knex: Knex): Promise<void> {
  const client = (await knex('oauth_clients')
    .where({ client_id: CLIENT_ID, default_scopes: OLD_SCOPES })
    .first('id')) as { id: number } | undefined;
  if (!client) return;
  await knex('oauth_clients').where('id', client.id).update({ default_scopes: SCOPES });
  if (!(await knex('oauth_client_origins').where({ client_id: client.id, origin: ORIGIN }).first('origin'))) {
    await knex('oauth_client_origins').insert({ client_id: client.id, origin: ORIGIN });
  }
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
