/**
 * OAuth clients: what each may do (grants, redirect URIs, default scopes, CORS origins, the user
 * client-credentials tokens act as), how they are stored, and the default public client `farm`
 * that scripts and farmOS.js/farmOS.py use (farmos-behaviour.md §6.2).
 */
import type { Knex } from 'knex';
import { isScope, SCOPES, USER_ACCESS_SCOPE } from '../access/roles.ts';
import { hashSecret, newSecret } from './secrets.ts';
import { selectRows } from '../storage/sql.ts';
import { dialectOf } from '../storage/dialect.ts';

import { GRANT_TYPES, isGrantType, type GrantType } from './grants/index.ts';
import { write } from '../storage/transactions.ts';

export { allowsGrant, GRANT_TYPES, type GrantType } from './grants/index.ts';

export const DEFAULT_CLIENT_ID = 'farm';
/** farmOS's Field Kit signs in as this public client (farm_fieldkit), created at start unless TILTH_FIELDKIT_CLIENT=0. */
export const FIELDKIT_CLIENT_ID = 'fieldkit';
/** The first-party clients Tilth creates itself; they may ask for any scope. */
const FIRST_PARTY_CLIENTS: readonly string[] = [DEFAULT_CLIENT_ID, FIELDKIT_CLIENT_ID];

export interface Client {
  /** Row id, referenced by tokens. */
  id: number;
  clientId: string;
  label: string;
  /** Confidential clients authenticate with a secret; public ones only name themselves. */
  confidential: boolean;
  secretHash: string | null;
  grantTypes: GrantType[];
  redirectUris: string[];
  defaultScopes: string[];
  allowedOrigins: string[];
  /** The user client-credentials tokens act as. */
  userId: number | null;
  created: number;
}

/** A client definition that breaks a rule; the message says which. */
export class ClientError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClientError';
  }
}

/**
 * The scopes a client may ask for: those it was registered with (`tilth client create --scope`).
 * The first-party clients `farm` and `fieldkit` may ask for any: farmOS's consumers list none and
 * take any role's scope (farmos-behaviour.md §6.2–6.3), and farmOS.js, farmOS.py and Field Kit
 * ask them for one.
 */
export function registeredScopes(client: Client): readonly string[] {
  return FIRST_PARTY_CLIENTS.includes(client.clientId) ? SCOPES : client.defaultScopes;
}

interface ClientRow {
  id: number;
  client_id: string;
  label: string;
  secret_hash: string | null;
  confidential: unknown;
  grant_types: string;
  redirect_uris: string;
  default_scopes: string;
  user_id: number | null;
  created: number;
}

function toClient(row: ClientRow, origins: string[]): Client {
  return {
    id: row.id,
    clientId: row.client_id,
    label: row.label,
    confidential: Boolean(row.confidential),
    secretHash: row.secret_hash,
    grantTypes: (JSON.parse(row.grant_types) as string[]).filter(isGrantType),
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    defaultScopes: JSON.parse(row.default_scopes) as string[],
    allowedOrigins: origins,
    userId: row.user_id,
    created: Number(row.created),
  };
}

/** The allowed origins of some clients, each list in order: one statement. */
async function originsOf(db: Knex, ids: number[]): Promise<Map<number, string[]>> {
  const out = new Map<number, string[]>();
  if (!ids.length) return out;
  const dialect = dialectOf(db);
  const sql = `SELECT client_id, origin FROM oauth_client_origins WHERE ${dialect.inIdList('client_id', { single: ids.length === 1 })} ORDER BY origin`;
  const rows = await selectRows<{ client_id: number; origin: string }>(db, sql, [dialect.idListParameter(ids)]);
  for (const r of rows) out.set(r.client_id, [...(out.get(r.client_id) ?? []), r.origin]);
  return out;
}

/** The client with this client_id, or null: asked on every token request (statements written once). */
export async function findClient(db: Knex, clientId: string): Promise<Client | null> {
  const [row] = await selectRows<ClientRow>(
    db,
    'SELECT id, client_id, label, secret_hash, confidential, grant_types, redirect_uris, default_scopes, user_id, created FROM oauth_clients WHERE client_id = ? LIMIT 1',
    [clientId],
  );
  if (!row) return null;
  return toClient(row, (await originsOf(db, [row.id])).get(row.id) ?? []);
}

/** The client with this row id, or null. */
export async function findClientByRowId(db: Knex, id: number): Promise<Client | null> {
  const row: ClientRow | undefined = await db('oauth_clients').where('id', id).first();
  if (!row) return null;
  return toClient(row, (await originsOf(db, [row.id])).get(row.id) ?? []);
}

export async function listClients(db: Knex): Promise<Client[]> {
  const rows: ClientRow[] = await db('oauth_clients').orderBy('client_id');
  const origins = await originsOf(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => toClient(r, origins.get(r.id) ?? []));
}

/** Whether any client lists this exact origin (farmOS's rule: CORS follows every client's list, §8.1). */
export async function isAllowedOrigin(db: Knex, origin: string): Promise<boolean> {
  // Raw SQL of one shape (storage/sql.ts): a browser app sends an Origin on every request.
  return (
    (await selectRows(db, 'SELECT 1 AS listed FROM oauth_client_origins WHERE origin = ? LIMIT 1', [origin])).length > 0
  );
}

const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?(\/[^#]*)?$/;

/**
 * Whether a redirect_uri of a request matches a registered one: exact string equality (RFC 6749
 * §3.1.2.3 and the OAuth security BCP), except that a registered loopback IP URI matches on any
 * port (RFC 8252 §7.3: native apps listen on a port the OS picks).
 */
export function redirectUriMatches(registered: string, candidate: string): boolean {
  if (registered === candidate) return true;
  const r = LOOPBACK.exec(registered);
  const c = LOOPBACK.exec(candidate);
  if (!r || !c) return false;
  if (c[2] !== undefined && (Number(c[2]) < 1 || Number(c[2]) > 65535)) return false;
  return r[1] === c[1] && (r[3] ?? '') === (c[3] ?? '');
}

/** The registered redirect URI a request names, or null when none matches. */
export function matchRedirectUri(client: Client, candidate: string): string | null {
  return client.redirectUris.some((r) => redirectUriMatches(r, candidate)) ? candidate : null;
}

const CLIENT_ID = /^[A-Za-z0-9._~-]{1,100}$/;

/** Checks a redirect URI for registration; returns a warning for plain http to a non-loopback host. */
function checkRedirectUri(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new ClientError(`The redirect URI "${uri}" is not an absolute URI.`);
  }
  if (url.hash || uri.includes('#'))
    throw new ClientError(`The redirect URI "${uri}" may not have a fragment (RFC 6749 §3.1.2).`);
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:') {
    if (['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname)) return null;
    return `The redirect URI "${uri}" uses plain http: codes and tokens sent to it can be read on the network.`;
  }
  if (url.protocol === 'javascript:' || url.protocol === 'data:' || url.protocol === 'file:')
    throw new ClientError(`The redirect URI "${uri}" uses a scheme that cannot be a redirect target.`);
  // RFC 8252 §7.1: private-use schemes of native apps are reverse domain names.
  if (!url.protocol.slice(0, -1).includes('.'))
    throw new ClientError(
      `The redirect URI "${uri}" uses the private-use scheme "${url.protocol}", which must be a reverse domain name such as com.example.app: (RFC 8252 §7.1).`,
    );
  return null;
}

function checkOrigin(origin: string): void {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw new ClientError(`"${origin}" is not an origin such as https://app.example.com.`);
  }
  if (url.origin !== origin || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new ClientError(
      `"${origin}" is not an origin: write scheme, host and port only, e.g. ${url.origin !== 'null' ? url.origin : 'https://app.example.com'}.`,
    );
  }
}

export interface NewClient {
  clientId: string;
  label?: string;
  confidential: boolean;
  grantTypes: string[];
  redirectUris?: string[];
  defaultScopes?: string[];
  allowedOrigins?: string[];
  /** Name of the user client-credentials tokens act as. */
  userName?: string | null;
}

/**
 * Register a client. Returns it with its secret (confidential clients only), which is shown once:
 * only its hash is stored. Throws ClientError for a definition that breaks a rule.
 */
export async function createClient(
  db: Knex,
  input: NewClient,
): Promise<{ client: Client; secret: string | null; warnings: string[] }> {
  if (!CLIENT_ID.test(input.clientId))
    throw new ClientError('A client id is 1 to 100 letters, digits or . _ ~ - characters.');
  const grants = [...new Set(input.grantTypes)];
  if (!grants.length) throw new ClientError(`A client needs at least one grant type: ${GRANT_TYPES.join(', ')}.`);
  for (const g of grants)
    if (!isGrantType(g))
      throw new ClientError(`Unknown grant type "${g}". Grant types are: ${GRANT_TYPES.join(', ')}.`);
  const redirectUris = [...new Set(input.redirectUris ?? [])];
  const warnings = redirectUris.map(checkRedirectUri).filter((w): w is string => w !== null);
  if ((grants.includes('authorization_code') || grants.includes('implicit')) && !redirectUris.length) {
    throw new ClientError('The authorization_code and implicit grants need at least one redirect URI.');
  }
  const defaultScopes = [...new Set(input.defaultScopes?.length ? input.defaultScopes : [USER_ACCESS_SCOPE])];
  for (const s of defaultScopes)
    if (!isScope(s)) throw new ClientError(`Unknown scope "${s}". Scopes are: ${SCOPES.join(', ')}.`);
  const origins = [...new Set((input.allowedOrigins ?? []).map((o) => o.trim()).filter(Boolean))];
  origins.forEach(checkOrigin);
  if (grants.includes('client_credentials')) {
    if (!input.confidential)
      throw new ClientError('The client_credentials grant is only for confidential clients (RFC 6749 §4.4).');
    if (!input.userName)
      throw new ClientError('A client with the client_credentials grant needs the user its tokens act as (--user).');
  }
  if (grants.includes('refresh_token') && grants.length === 1)
    throw new ClientError('refresh_token alone issues nothing: add the grant that issues the first token.');

  return write(db, async (trx) => {
    if (await trx('oauth_clients').where('client_id', input.clientId).first('id'))
      throw new ClientError(`A client "${input.clientId}" already exists.`);
    let userId: number | null = null;
    if (input.userName) {
      const user = await trx('users').where('bundle', 'user').where('name', input.userName).first('id');
      if (!user) throw new ClientError(`There is no user named "${input.userName}".`);
      userId = user.id;
    }
    const secret = input.confidential ? newSecret() : null;
    const created = Math.floor(Date.now() / 1000);
    const [row] = await trx('oauth_clients')
      .insert({
        client_id: input.clientId,
        label: input.label || input.clientId,
        secret_hash: secret ? hashSecret(secret) : null,
        confidential: input.confidential,
        grant_types: JSON.stringify(grants),
        redirect_uris: JSON.stringify(redirectUris),
        default_scopes: JSON.stringify(defaultScopes),
        user_id: userId,
        created,
      })
      .returning('id');
    const id = typeof row === 'object' ? (row as { id: number }).id : (row as number);
    if (origins.length) await trx('oauth_client_origins').insert(origins.map((origin) => ({ client_id: id, origin })));
    const client = await findClientByRowId(trx, id);
    return { client: client!, secret, warnings };
  });
}

/** What `tilth client update` changes: each list given replaces the client's. */
export interface ClientChanges {
  label?: string;
  redirectUris?: string[];
  defaultScopes?: string[];
  allowedOrigins?: string[];
}

/**
 * Change a client in place, checked by createClient's rules; its tokens stay valid. Returns it
 * with the warnings its redirect URIs deserve. Throws ClientError naming what is wrong.
 */
export async function updateClient(
  db: Knex,
  clientId: string,
  changes: ClientChanges,
): Promise<{ client: Client; warnings: string[] }> {
  const redirectUris = changes.redirectUris && [...new Set(changes.redirectUris)];
  const warnings = (redirectUris ?? []).map(checkRedirectUri).filter((w): w is string => w !== null);
  const defaultScopes = changes.defaultScopes && [...new Set(changes.defaultScopes)];
  for (const s of defaultScopes ?? [])
    if (!isScope(s)) throw new ClientError(`Unknown scope "${s}". Scopes are: ${SCOPES.join(', ')}.`);
  if (defaultScopes && !defaultScopes.length) throw new ClientError('A client needs at least one scope.');
  const origins = changes.allowedOrigins && [...new Set(changes.allowedOrigins.map((o) => o.trim()).filter(Boolean))];
  origins?.forEach(checkOrigin);
  return write(db, async (trx) => {
    const existing = await findClient(trx, clientId);
    if (!existing) throw new ClientError(`There is no client "${clientId}".`);
    const uris = redirectUris ?? existing.redirectUris;
    if (
      (existing.grantTypes.includes('authorization_code') || existing.grantTypes.includes('implicit')) &&
      !uris.length
    ) {
      throw new ClientError('The authorization_code and implicit grants need at least one redirect URI.');
    }
    const row: Record<string, unknown> = {};
    if (changes.label) row.label = changes.label;
    if (redirectUris) row.redirect_uris = JSON.stringify(redirectUris);
    if (defaultScopes) row.default_scopes = JSON.stringify(defaultScopes);
    if (Object.keys(row).length) await trx('oauth_clients').where('id', existing.id).update(row);
    if (origins) {
      await trx('oauth_client_origins').where('client_id', existing.id).delete();
      if (origins.length)
        await trx('oauth_client_origins').insert(origins.map((origin) => ({ client_id: existing.id, origin })));
    }
    return { client: (await findClientByRowId(trx, existing.id))!, warnings };
  });
}

/** Field Kit's hosted app, which farmOS's `fieldkit` consumer allows (farm_fieldkit's hook_install). */
export const FIELDKIT_ORIGIN = 'https://farmos.app';
/** The scopes farmOS 3's `fieldkit` consumer has: a token acts with the user's manager or worker role. */
export const FIELDKIT_SCOPES = ['farm_manager', 'farm_worker'];

/**
 * Field Kit's client (farm_fieldkit's consumer): public, signing in with a password and keeping
 * the session with refresh tokens, from Field Kit's hosted app at https://farmos.app (CORS) with
 * the scopes farmOS gives it. Created when `enabled` and missing (an existing one is left as its
 * administrator set it: `tilth client update`); removed (with its tokens)
 * when not, so that TILTH_FIELDKIT_CLIENT=0 really turns it off.
 */
export async function ensureFieldKitClient(db: Knex, enabled: boolean): Promise<void> {
  const existing = await findClient(db, FIELDKIT_CLIENT_ID);
  if (!enabled) {
    if (existing) await db('oauth_clients').where('id', existing.id).delete();
    return;
  }
  if (existing) return;
  try {
    await createClient(db, {
      clientId: FIELDKIT_CLIENT_ID,
      label: 'Field Kit',
      confidential: false,
      grantTypes: ['password', 'refresh_token'],
      defaultScopes: FIELDKIT_SCOPES,
      allowedOrigins: [FIELDKIT_ORIGIN],
    });
  } catch (error) {
    if (await findClient(db, FIELDKIT_CLIENT_ID)) return;
    throw error;
  }
}

/** Delete a client; its tokens and codes go with it. The default client cannot be deleted: it is recreated at every start. */
export async function deleteClient(db: Knex, clientId: string): Promise<void> {
  if (clientId === DEFAULT_CLIENT_ID)
    throw new ClientError(
      `The default client "${DEFAULT_CLIENT_ID}" is recreated at every start, so it cannot be deleted.`,
    );
  const deleted = await db('oauth_clients').where('client_id', clientId).delete();
  if (!deleted) throw new ClientError(`There is no client "${clientId}".`);
}

/** The redirect URIs of the default client: the server's base URL and loopback callbacks on any port. */
export function defaultClientRedirectUris(baseUrl: string): string[] {
  return [baseUrl, 'http://127.0.0.1/callback', 'http://[::1]/callback'];
}

/**
 * Create the default public client `farm` when it is missing (farmos-behaviour.md §6.2), and keep
 * its redirect URIs those documented for it, so that they follow a change of TILTH_BASE_URL.
 */
export async function ensureDefaultClient(db: Knex, baseUrl: string): Promise<void> {
  const redirectUris = defaultClientRedirectUris(baseUrl);
  const existing = await findClient(db, DEFAULT_CLIENT_ID);
  if (existing) {
    if (JSON.stringify(existing.redirectUris) !== JSON.stringify(redirectUris)) {
      await db('oauth_clients')
        .where('id', existing.id)
        .update({ redirect_uris: JSON.stringify(redirectUris) });
    }
    return;
  }
  try {
    await createClient(db, {
      clientId: DEFAULT_CLIENT_ID,
      label: 'Farm default',
      confidential: false,
      grantTypes: ['password', 'refresh_token', 'authorization_code'],
      redirectUris,
      defaultScopes: [USER_ACCESS_SCOPE],
    });
  } catch (error) {
    // Another server process starting on the same database created it first.
    if (await findClient(db, DEFAULT_CLIENT_ID)) return;
    throw error;
  }
}
