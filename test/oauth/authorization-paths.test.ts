// The authorization matrix along every way to a record (trust issue, part B 5): each role × scope
// × entity type, reached plainly, by a filter, a sort and an include through a relationship, by
// the related endpoint, and inside a subrequest (all four methods), against the table below,
// written out by hand from farmOS's managed roles and simple_oauth's rule that a token may do
// what both its scopes and its user's roles allow. Then the account rules: which actor may change
// which account, and grant which role. Nothing is derived from the server's own role code.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { addUser, api, passwordGrant } from './helpers.ts';
import { configIdentifier } from '../../runtime/model/config-entities.ts';

type Entity = 'log' | 'asset' | 'quantity' | 'taxonomy_term' | 'user';
const ENTITIES: Entity[] = ['log', 'asset', 'quantity', 'taxonomy_term', 'user'];
const ROLES = ['farm_viewer', 'farm_worker', 'farm_manager', 'farm_account_admin', 'administrator'] as const;
const SCOPES = ['user_access', 'farm_viewer', 'farm_worker', 'farm_manager', 'farm_account_admin'] as const;

/** What a role's rights are per entity type (R read, C create, U update, D delete). */
const ROLE_RIGHTS: Record<(typeof ROLES)[number], Record<Entity, string>> = {
  farm_viewer: { log: 'R', asset: 'R', quantity: 'R', taxonomy_term: 'R', user: 'R' },
  // farmOS's ManagedRolePermissionsManager: create/update/delete all covers every vocabulary's terms.
  farm_worker: { log: 'RCUD', asset: 'RCUD', quantity: 'RCUD', taxonomy_term: 'RCUD', user: 'R' },
  farm_manager: { log: 'RCUD', asset: 'RCUD', quantity: 'RCUD', taxonomy_term: 'RCUD', user: 'R' },
  farm_account_admin: { log: '', asset: '', quantity: '', taxonomy_term: 'R', user: 'RCUD' },
  administrator: { log: 'RCUD', asset: 'RCUD', quantity: 'RCUD', taxonomy_term: 'RCUD', user: 'RCUD' },
};

/** A token's rights: those both its user's role and its scope give (user_access: the role's own). */
function rights(role: (typeof ROLES)[number], scope: (typeof SCOPES)[number], entity: Entity): string {
  const mine = ROLE_RIGHTS[role][entity];
  const scoped = scope === 'user_access' ? mine : ROLE_RIGHTS[scope][entity];
  return [...mine].filter((op) => scoped.includes(op)).join('');
}

/** How each entity type is reached from a log through a relationship (logs are the base). */
const FROM_LOG: Partial<Record<Entity, { relationship: string; field: string }>> = {
  asset: { relationship: 'asset', field: 'name' },
  quantity: { relationship: 'quantity', field: 'label' },
  taxonomy_term: { relationship: 'category', field: 'name' },
  user: { relationship: 'owner', field: 'name' },
};

const RESOURCES: Record<Entity, { path: string; type: string; attributes: () => Record<string, unknown> }> = {
  log: { path: 'log/activity', type: 'log--activity', attributes: () => ({ name: unique('log'), status: 'done' }) },
  asset: { path: 'asset/equipment', type: 'asset--equipment', attributes: () => ({ name: unique('tractor') }) },
  quantity: {
    path: 'quantity/standard',
    type: 'quantity--standard',
    attributes: () => ({ label: unique('count'), measure: 'count', value: { decimal: '3' } }),
  },
  taxonomy_term: {
    path: 'taxonomy_term/log_category',
    type: 'taxonomy_term--log_category',
    attributes: () => ({ name: unique('category') }),
  },
  user: { path: 'user/user', type: 'user--user', attributes: () => ({ name: unique('person') }) },
};

function unique(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

const server: TestServer = await startTestServer();
after(() => server.close());
const adminToken = (await passwordGrant(server, ADMIN.name, ADMIN.password)).access_token;
const JSON_API = { 'Content-Type': 'application/vnd.api+json' };

async function create(
  entity: Entity,
  relationships?: Record<string, unknown>,
): Promise<{ id: string; attributes: Record<string, any> }> {
  const r = RESOURCES[entity];
  const res = await api(`${server.url}/api/${r.path}`, adminToken, {
    method: 'POST',
    headers: JSON_API,
    body: JSON.stringify({
      data: { type: r.type, attributes: r.attributes(), ...(relationships ? { relationships } : {}) },
    }),
  });
  assert.equal(res.status, 201, res.text);
  return res.body.data;
}

const subStatus = (entry: { headers: { status: number | number[] } }) =>
  Array.isArray(entry.headers.status) ? entry.headers.status[0]! : entry.headers.status;

test('role × scope × entity type × way in (filter, sort, include, related, subrequest)', async () => {
  // One log that points at one record of every other entity type.
  const targets = {} as Record<Entity, { id: string; attributes: Record<string, any> }>;
  for (const entity of ['asset', 'quantity', 'taxonomy_term', 'user'] as const) targets[entity] = await create(entity);
  const rel = (entity: Entity) => ({ data: [{ type: RESOURCES[entity].type, id: targets[entity].id }] });
  targets.log = await create('log', {
    asset: rel('asset'),
    quantity: rel('quantity'),
    category: rel('taxonomy_term'),
    owner: rel('user'),
  });
  const logUrl = `${server.url}/api/${RESOURCES.log.path}`;

  const mismatches: string[] = [];
  const expect = (who: string, what: string, ok: boolean, allowed: boolean, detail: string) => {
    if (ok !== allowed)
      mismatches.push(
        `${who}: ${what} was ${ok ? 'allowed' : 'refused'}, expected ${allowed ? 'allowed' : 'refused'} (${detail})`,
      );
  };
  let cells = 0;

  for (const role of ROLES) {
    const user = await addUser(server, [role]);
    for (const scope of SCOPES) {
      const { access_token: token } = await passwordGrant(server, user.name, user.password, scope);
      const who = `${role} with scope ${scope}`;
      const canRead = (e: Entity) => rights(role, scope, e).includes('R');

      for (const [entity, via] of Object.entries(FROM_LOG) as Array<
        [Entity, { relationship: string; field: string }]
      >) {
        const allowed = canRead('log') && canRead(entity);
        const value = encodeURIComponent(String(targets[entity].attributes[via.field]));
        // A filter through the relationship finds the log only when both may be read; a refusal
        // is a 403, or an answer that reveals nothing.
        const filtered = await api(`${logUrl}?filter[${via.relationship}.${via.field}]=${value}`, token);
        const found =
          filtered.status === 200 && filtered.body.data.some((l: { id: string }) => l.id === targets.log.id);
        expect(who, `filter[${via.relationship}.${via.field}]`, found, allowed, String(filtered.status));
        if (!allowed)
          expect(
            who,
            `filter[${via.relationship}.${via.field}] refusal`,
            filtered.status === 403 || (filtered.status === 200 && filtered.body.data.length === 0),
            true,
            filtered.text.slice(0, 120),
          );

        const sorted = await api(`${logUrl}?sort=${via.relationship}.${via.field}`, token);
        expect(
          who,
          `sort=${via.relationship}.${via.field}`,
          sorted.status === 200 && sorted.body.data.length > 0,
          allowed,
          String(sorted.status),
        );

        const included = await api(`${logUrl}/${targets.log.id}?include=${via.relationship}`, token);
        const hasIncluded =
          included.status === 200 &&
          (included.body.included ?? []).some((r: { id: string }) => r.id === targets[entity].id);
        expect(who, `include=${via.relationship}`, hasIncluded, allowed, String(included.status));

        const related = await api(`${logUrl}/${targets.log.id}/${via.relationship}`, token);
        const relatedFound =
          related.status === 200 &&
          [related.body.data].flat().some((r: { id: string } | null) => r?.id === targets[entity].id);
        expect(who, `GET …/${via.relationship}`, relatedFound, allowed, String(related.status));
        cells += 4;
      }

      // Each method on each entity type inside a subrequest answers as it does alone.
      for (const entity of ENTITIES) {
        const r = RESOURCES[entity];
        const can = rights(role, scope, entity);
        const victim = can.includes('D') ? await create(entity) : targets[entity];
        const blueprint = [
          {
            requestId: 'view',
            action: 'view',
            uri: `/api/${r.path}/${targets[entity].id}`,
            headers: { Accept: 'application/vnd.api+json' },
          },
          {
            requestId: 'create',
            action: 'create',
            uri: `/api/${r.path}`,
            headers: JSON_API,
            body: JSON.stringify({ data: { type: r.type, attributes: r.attributes() } }),
          },
          {
            requestId: 'update',
            action: 'update',
            uri: `/api/${r.path}/${targets[entity].id}`,
            headers: JSON_API,
            body: JSON.stringify({ data: { type: r.type, id: targets[entity].id, attributes: {} } }),
          },
          { requestId: 'delete', action: 'delete', uri: `/api/${r.path}/${victim.id}`, headers: {} },
        ];
        const res = await api(`${server.url}/subrequests?_format=json`, token, {
          method: 'POST',
          headers: JSON_API,
          body: JSON.stringify(blueprint),
        });
        if (res.status !== 207 && res.status !== 200) {
          mismatches.push(`${who}: subrequests for ${entity} answered ${res.status}: ${res.text.slice(0, 200)}`);
          continue;
        }
        for (const [id, op, want] of [
          ['view', 'R', 200],
          ['create', 'C', 201],
          ['update', 'U', 200],
          ['delete', 'D', 204],
        ] as const) {
          const entry = res.body[id];
          const status = entry ? subStatus(entry) : -1;
          const allowed = can.includes(op);
          expect(who, `subrequest ${id} ${entity}`, status === want, allowed, String(status));
          if (!allowed) expect(who, `subrequest ${id} ${entity} refusal`, status === 403, true, String(status));
          cells++;
        }
      }
    }
  }
  assert.deepEqual(
    mismatches,
    [],
    `${mismatches.length} of ${cells} cells differ from the table:\n${mismatches.join('\n')}`,
  );
});

/**
 * The account rules (access/accounts.ts, written here as a table): may the actor PATCH the
 * target's e-mail? Targets by the role they hold; `self` is the actor's own account.
 */
const ACCOUNT_RULES: Record<string, Record<string, boolean>> = {
  //                       user1  admin  manager worker viewer acct   none   self
  user1: /*            */ {
    user1: true,
    administrator: true,
    farm_manager: true,
    farm_worker: true,
    farm_viewer: true,
    farm_account_admin: true,
    none: true,
    self: true,
  },
  administrator: /*    */ {
    user1: false,
    administrator: true,
    farm_manager: true,
    farm_worker: true,
    farm_viewer: true,
    farm_account_admin: true,
    none: true,
    self: true,
  },
  farm_account_admin: /**/ {
    user1: false,
    administrator: false,
    farm_manager: false,
    farm_worker: false,
    farm_viewer: false,
    farm_account_admin: true,
    none: true,
    self: true,
  },
  farm_manager: /*     */ {
    user1: false,
    administrator: false,
    farm_manager: false,
    farm_worker: false,
    farm_viewer: false,
    farm_account_admin: false,
    none: false,
    self: true,
  },
  farm_viewer: /*      */ {
    user1: false,
    administrator: false,
    farm_manager: false,
    farm_worker: false,
    farm_viewer: false,
    farm_account_admin: false,
    none: false,
    self: true,
  },
};

/** May the actor grant each role to an account with no roles? */
const GRANTS: Record<string, readonly string[]> = {
  user1: ROLES,
  administrator: ROLES,
  farm_account_admin: ['farm_account_admin'],
  farm_manager: [],
  farm_viewer: [],
};

test('account rules: who may change whose account, and grant which role', async () => {
  const actors: Record<string, { token: string; uuid: string }> = {
    user1: { token: adminToken, uuid: (await server.ctx.db.knex('users').where('id', 1).first('uuid')).uuid },
  };
  for (const role of ['administrator', 'farm_account_admin', 'farm_manager', 'farm_viewer']) {
    const u = await addUser(server, [role]);
    actors[role] = { token: (await passwordGrant(server, u.name, u.password)).access_token, uuid: u.uuid };
  }
  const patch = (token: string, uuid: string, data: Record<string, unknown>) =>
    api(`${server.url}/api/user/user/${uuid}`, token, {
      method: 'PATCH',
      headers: JSON_API,
      body: JSON.stringify({ data: { type: 'user--user', id: uuid, ...data } }),
    });
  const mismatches: string[] = [];
  for (const [actor, row] of Object.entries(ACCOUNT_RULES)) {
    for (const [target, allowed] of Object.entries(row)) {
      let uuid: string;
      if (target === 'self') uuid = actors[actor]!.uuid;
      else if (target === 'user1') uuid = actors.user1!.uuid;
      else uuid = (await addUser(server, target === 'none' ? [] : [target])).uuid;
      const res = await patch(actors[actor]!.token, uuid, { attributes: { mail: `${unique('m')}@example.org` } });
      const want = allowed ? 200 : 403;
      if (res.status !== want) mismatches.push(`${actor} changing ${target}: ${res.status}, expected ${want}`);
    }
    for (const role of ROLES) {
      const fresh = await addUser(server, []);
      const res = await patch(actors[actor]!.token, fresh.uuid, {
        relationships: { roles: { data: [configIdentifier('user_role', role)] } },
      });
      const want = GRANTS[actor]!.includes(role) ? 200 : 403;
      if (res.status !== want) mismatches.push(`${actor} granting ${role}: ${res.status}, expected ${want}`);
    }
  }
  assert.deepEqual(mismatches, [], mismatches.join('\n'));
});
