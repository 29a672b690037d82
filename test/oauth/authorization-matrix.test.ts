// The authorization matrix: every role × scope × method on one resource of each entity type,
// against a table written out here by hand from farmOS's managed roles (farmos-behaviour.md §6.5;
// a worker's "create/update/delete all" covers taxonomy terms, ManagedRolePermissionsManager)
// and simple_oauth's rule that a token may do only what both its scopes and its user's roles
// allow (§6.3). Nothing is derived from the server's own role code.
//
// Allowed cells must answer 200 (GET, PATCH), 201 (POST) or 204 (DELETE); denied ones 403 with a
// JSON:API error, and anonymous requests 401.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { addUser, api, passwordGrant } from './helpers.ts';

type Entity = 'log' | 'asset' | 'quantity' | 'taxonomy_term' | 'user';
const ENTITIES: Entity[] = ['log', 'asset', 'quantity', 'taxonomy_term', 'user'];

/**
 * What each role may do with each scope, per entity type: R read (GET), C create (POST),
 * U update (PATCH), D delete (DELETE); '' nothing.
 *                                                log     asset   quantity term    user
 */
const EXPECTED: Record<string, Record<string, [string, string, string, string, string]>> = {
  farm_viewer: {
    user_access: /*                            */ ['R', 'R', 'R', 'R', 'R'],
    farm_viewer: /*                            */ ['R', 'R', 'R', 'R', 'R'],
    farm_worker: /*                            */ ['R', 'R', 'R', 'R', 'R'],
    farm_manager: /*                           */ ['R', 'R', 'R', 'R', 'R'],
    farm_account_admin: /*                     */ ['', '', '', 'R', 'R'],
  },
  farm_worker: {
    user_access: /*                            */ ['RCUD', 'RCUD', 'RCUD', 'RCUD', 'R'],
    farm_viewer: /*                            */ ['R', 'R', 'R', 'R', 'R'],
    farm_worker: /*                            */ ['RCUD', 'RCUD', 'RCUD', 'RCUD', 'R'],
    farm_manager: /*                           */ ['RCUD', 'RCUD', 'RCUD', 'RCUD', 'R'],
    farm_account_admin: /*                     */ ['', '', '', 'R', 'R'],
  },
  farm_manager: {
    user_access: /*                            */ ['RCUD', 'RCUD', 'RCUD', 'RCUD', 'R'],
    farm_viewer: /*                            */ ['R', 'R', 'R', 'R', 'R'],
    farm_worker: /*                            */ ['RCUD', 'RCUD', 'RCUD', 'RCUD', 'R'],
    farm_manager: /*                           */ ['RCUD', 'RCUD', 'RCUD', 'RCUD', 'R'],
    farm_account_admin: /*                     */ ['', '', '', 'R', 'R'],
  },
  farm_account_admin: {
    user_access: /*                            */ ['', '', '', 'R', 'RCUD'],
    farm_viewer: /*                            */ ['', '', '', 'R', 'R'],
    farm_worker: /*                            */ ['', '', '', 'R', 'R'],
    farm_manager: /*                           */ ['', '', '', 'R', 'R'],
    farm_account_admin: /*                     */ ['', '', '', 'R', 'RCUD'],
  },
  administrator: {
    user_access: /*                            */ ['RCUD', 'RCUD', 'RCUD', 'RCUD', 'RCUD'],
    farm_viewer: /*                            */ ['R', 'R', 'R', 'R', 'R'],
    farm_worker: /*                            */ ['RCUD', 'RCUD', 'RCUD', 'RCUD', 'R'],
    farm_manager: /*                           */ ['RCUD', 'RCUD', 'RCUD', 'RCUD', 'R'],
    farm_account_admin: /*                     */ ['', '', '', 'R', 'RCUD'],
  },
};

/** One bundle of each entity type, and a valid new record of it. */
const RESOURCES: Record<
  Entity,
  { path: string; type: string; attributes: () => Record<string, unknown>; change: () => Record<string, unknown> }
> = {
  log: {
    path: 'log/activity',
    type: 'log--activity',
    attributes: () => ({ name: unique('log'), status: 'done', timestamp: '2024-05-01T10:00:00+00:00' }),
    change: () => ({ name: unique('log') }),
  },
  asset: {
    path: 'asset/equipment',
    type: 'asset--equipment',
    attributes: () => ({ name: unique('tractor'), status: 'active' }),
    change: () => ({ name: unique('tractor') }),
  },
  quantity: {
    path: 'quantity/standard',
    type: 'quantity--standard',
    attributes: () => ({ label: unique('count'), measure: 'count', value: { numerator: 3, denominator: 1 } }),
    change: () => ({ label: unique('count') }),
  },
  taxonomy_term: {
    path: 'taxonomy_term/log_category',
    type: 'taxonomy_term--log_category',
    attributes: () => ({ name: unique('category') }),
    change: () => ({ name: unique('category') }),
  },
  user: {
    path: 'user/user',
    type: 'user--user',
    attributes: () => ({ name: unique('person'), mail: `${unique('person')}@example.com`, status: true }),
    change: () => ({ name: unique('person') }),
  },
};

function unique(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

const METHOD = { R: 'GET', C: 'POST', U: 'PATCH', D: 'DELETE' } as const;
const ALLOWED_STATUS = { R: 200, C: 201, U: 200, D: 204 } as const;
type Op = keyof typeof METHOD;

const server: TestServer = await startTestServer();
after(() => server.close());
const adminToken = (await passwordGrant(server, ADMIN.name, ADMIN.password)).access_token;

async function createAsAdmin(entity: Entity): Promise<{ status: number; id?: string }> {
  const r = RESOURCES[entity];
  const res = await api(`${server.url}/api/${r.path}`, adminToken, {
    method: 'POST',
    headers: { 'Content-Type': 'application/vnd.api+json' },
    body: JSON.stringify({ data: { type: r.type, attributes: r.attributes() } }),
  });
  return { status: res.status, id: res.body?.data?.id };
}

/** Send one cell's request; returns the status and whether a denial came as a JSON:API error. */
async function attempt(
  token: string | undefined,
  entity: Entity,
  op: Op,
  targetId: string | undefined,
): Promise<{ status: number; jsonApiError: boolean }> {
  const r = RESOURCES[entity];
  const headers = { 'Content-Type': 'application/vnd.api+json' };
  const url =
    op === 'C'
      ? `${server.url}/api/${r.path}`
      : `${server.url}/api/${r.path}/${targetId ?? '00000000-0000-4000-8000-000000000000'}`;
  const body =
    op === 'C'
      ? JSON.stringify({ data: { type: r.type, attributes: r.attributes() } })
      : op === 'U'
        ? JSON.stringify({ data: { type: r.type, id: targetId, attributes: r.change() } })
        : undefined;
  const res = await api(url, token, { method: METHOD[op], headers, body });
  return {
    status: res.status,
    jsonApiError: Array.isArray(res.body?.errors) && res.body.errors[0]?.status === String(res.status),
  };
}

test('role × scope × method × entity type', async () => {
  // One shared record per entity type to read, change and try to delete; allowed deletes get a fresh one each.
  const shared = {} as Record<Entity, string>;
  for (const entity of ENTITIES) {
    const made = await createAsAdmin(entity);
    assert.equal(made.status, 201, `creating a ${entity} as administrator`);
    shared[entity] = made.id!;
  }

  const mismatches: string[] = [];
  const check = async (
    who: string,
    token: string | undefined,
    entity: Entity,
    op: Op,
    allowed: boolean,
    denied: number,
  ) => {
    let target = shared[entity];
    if (op === 'D' && allowed) target = (await createAsAdmin(entity)).id!;
    const got = await attempt(token, entity, op, target);
    const want = allowed ? ALLOWED_STATUS[op] : denied;
    if (got.status !== want)
      mismatches.push(`${who}: ${METHOD[op]} ${entity} answered ${got.status}, expected ${want}`);
    else if (!allowed && !got.jsonApiError)
      mismatches.push(`${who}: ${METHOD[op]} ${entity} was refused without a JSON:API error document`);
  };

  for (const [role, byScope] of Object.entries(EXPECTED)) {
    const user = await addUser(server, [role]);
    for (const [scope, row] of Object.entries(byScope)) {
      const { access_token } = await passwordGrant(server, user.name, user.password, scope);
      for (const [i, entity] of ENTITIES.entries()) {
        for (const op of ['R', 'C', 'U', 'D'] as Op[])
          await check(`${role} with scope ${scope}`, access_token, entity, op, row[i]!.includes(op), 403);
      }
    }
  }
  for (const entity of ENTITIES)
    for (const op of ['R', 'C', 'U', 'D'] as Op[]) await check('anonymous', undefined, entity, op, false, 401);

  assert.deepEqual(mismatches, [], `${mismatches.length} cell(s) differ from the table:\n${mismatches.join('\n')}`);
});
