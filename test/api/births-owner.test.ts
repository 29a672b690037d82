// Birth logs and log owners as farmOS keeps them (issue 8 items 3, 6 and the birth rule of 2):
// a birth log gives each child its birthdate and, when it has none, its mother as parent; a child
// is born once; a log saved without an owner gets the current user, on every save.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
let token: string;
let breed: { type: string; id: string };

before(async () => {
  ({ server, token } = await startTestServerAsAdmin());
  const term = await request(`${server.url}/api/taxonomy_term/animal_type`, {
    method: 'POST',
    token,
    json: { data: { type: 'taxonomy_term--animal_type', attributes: { name: 'Jersey' } } },
  });
  breed = { type: 'taxonomy_term--animal_type', id: term.body.data.id };
});
after(() => server.close());

async function animal(name: string, parent?: string) {
  const res = await request(`${server.url}/api/asset/animal`, {
    method: 'POST',
    token,
    json: {
      data: {
        type: 'asset--animal',
        attributes: { name },
        relationships: {
          animal_type: { data: breed },
          ...(parent ? { parent: { data: [{ type: 'asset--animal', id: parent }] } } : {}),
        },
      },
    },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

const get = async (id: string) => (await request(`${server.url}/api/asset/animal/${id}`, { token })).body.data;
const birth = (children: string[], mother: string, timestamp: string) =>
  request(`${server.url}/api/log/birth`, {
    method: 'POST',
    token,
    json: {
      data: {
        type: 'log--birth',
        attributes: { timestamp, status: 'done' },
        relationships: {
          asset: { data: children.map((id) => ({ type: 'asset--animal', id })) },
          mother: { data: { type: 'asset--animal', id: mother } },
        },
      },
    },
  });

test('a birth log gives each child its birthdate and its mother as parent', async () => {
  const mother = await animal('Daisy');
  const calf = await animal('Calf 1');
  const adopted = await animal('Calf 2', await animal('Foster'));
  const res = await birth([calf, adopted], mother, '2024-03-01T06:00:00+00:00');
  assert.equal(res.status, 201, res.text);
  const child = await get(calf);
  assert.equal(child.attributes.birthdate, '2024-03-01T06:00:00+00:00');
  assert.deepEqual(
    child.relationships.parent.data.map((p: any) => p.id),
    [mother],
  );
  const other = await get(adopted);
  assert.equal(other.attributes.birthdate, '2024-03-01T06:00:00+00:00');
  assert.notDeepEqual(
    other.relationships.parent.data.map((p: any) => p.id),
    [mother],
    'a child with a parent keeps it',
  );

  // Moving the birth moves the birthdate.
  const logId = res.body.data.id;
  const moved = await request(`${server.url}/api/log/birth/${logId}`, {
    method: 'PATCH',
    token,
    json: { data: { type: 'log--birth', id: logId, attributes: { timestamp: '2024-03-02T06:00:00+00:00' } } },
  });
  assert.equal(moved.status, 200, moved.text);
  assert.equal((await get(calf)).attributes.birthdate, '2024-03-02T06:00:00+00:00');

  // Born once.
  const before = (await request(`${server.url}/api/log/birth`, { token })).body.data.length;
  const second = await birth([calf], mother, '2024-04-01T06:00:00+00:00');
  assert.equal(second.status, 422, second.text);
  assert.match(second.body.errors[0].detail, /Calf 1 already has a birth log/);
  assert.equal(second.body.errors[0].source.pointer, '/data/relationships/asset');
  assert.equal((await request(`${server.url}/api/log/birth`, { token })).body.data.length, before, 'nothing was saved');
  assert.equal((await get(calf)).attributes.birthdate, '2024-03-02T06:00:00+00:00');
});

test("as farmOS's UniqueBirthLogConstraintValidator: only a new birth log is checked; an existing one may be changed to name a child born elsewhere", async () => {
  const mother = await animal('Bess');
  const kid = await animal('Kid 1');
  const twin = await animal('Kid 2');
  const first = await birth([kid], mother, '2024-05-01T06:00:00+00:00');
  assert.equal(first.status, 201, first.text);
  const second = await birth([twin], mother, '2024-05-02T06:00:00+00:00');
  assert.equal(second.status, 201, second.text);
  const id = second.body.data.id;
  const patched = await request(`${server.url}/api/log/birth/${id}`, {
    method: 'PATCH',
    token,
    json: {
      data: {
        type: 'log--birth',
        id,
        relationships: {
          asset: {
            data: [
              { type: 'asset--animal', id: twin },
              { type: 'asset--animal', id: kid },
            ],
          },
        },
      },
    },
  });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(
    (await get(kid)).attributes.birthdate,
    '2024-05-02T06:00:00+00:00',
    'the saved birth log syncs every child it names',
  );
  // A new log naming either child is still refused.
  assert.equal((await birth([kid], mother, '2024-06-01T06:00:00+00:00')).status, 422);
});

test("each child saved by a birth log gets farmOS's revision message saying what changed", async () => {
  const mother = await animal('Clover');
  const calf = await animal('Bramble');
  const fostered = await animal('Thistle', await animal('Foster mum'));
  const res = await birth([calf, fostered], mother, '2024-07-01T06:00:00+00:00');
  assert.equal(res.status, 201, res.text);
  const log = res.body.data.attributes.name;
  assert.equal(
    (await get(calf)).attributes.revision_log_message,
    `Bramble date of birth was updated to match their birth log. Clover added as a parent of Bramble. Birth log saved: ${log}`,
  );
  assert.equal(
    (await get(fostered)).attributes.revision_log_message,
    `Thistle date of birth was updated to match their birth log. Birth log saved: ${log}`,
  );
  // Nothing to change, nothing saved: the message stays.
  const id = res.body.data.id;
  await request(`${server.url}/api/log/birth/${id}`, {
    method: 'PATCH',
    token,
    json: { data: { type: 'log--birth', id, attributes: { name: 'Renamed birth' } } },
  });
  assert.match((await get(calf)).attributes.revision_log_message, /Birth log saved: /);
  const moved = await request(`${server.url}/api/log/birth/${id}`, {
    method: 'PATCH',
    token,
    json: { data: { type: 'log--birth', id, attributes: { timestamp: '2024-07-02T06:00:00+00:00' } } },
  });
  assert.equal(moved.status, 200, moved.text);
  assert.equal(
    (await get(calf)).attributes.revision_log_message,
    'Bramble date of birth was updated to match their birth log. Birth log saved: Renamed birth',
  );
});

test('a log saved without an owner gets the current user, on update too', async () => {
  await createUser(server.ctx.db.knex, { name: 'owen', password: 'owen-password', roles: ['farm_worker'] });
  const worker = await passwordToken(server.url, 'owen', 'owen-password');
  const me = (await request(`${server.url}/api`, { token: worker })).body.meta.links.me.meta.id;
  const log = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token,
    json: { data: { type: 'log--activity', attributes: { name: 'Fence' } } },
  });
  const id = log.body.data.id;
  const cleared = await request(`${server.url}/api/log/activity/${id}`, {
    method: 'PATCH',
    token: worker,
    json: { data: { type: 'log--activity', id, relationships: { owner: { data: [] } } } },
  });
  assert.equal(cleared.status, 200, cleared.text);
  assert.deepEqual(
    cleared.body.data.relationships.owner.data.map((o: any) => o.id),
    [me],
    'the worker who saved it owns it',
  );
});

test("birth logs and changes of the child's parent sent at once: each a 201 or the born-once 422, a 200 or 204, never a 409; the child is born once and keeps one parent", async () => {
  const parents = [await animal('Sire 1'), await animal('Sire 2')];
  const patchParent = (child: string, parent: string, i: number) =>
    // Half through the record, half through its relationship route: both replace the side rows.
    i % 2
      ? request(`${server.url}/api/asset/animal/${child}/relationships/parent`, {
          method: 'PATCH',
          token,
          json: { data: [{ type: 'asset--animal', id: parent }] },
        })
      : request(`${server.url}/api/asset/animal/${child}`, {
          method: 'PATCH',
          token,
          json: {
            data: {
              type: 'asset--animal',
              id: child,
              relationships: { parent: { data: [{ type: 'asset--animal', id: parent }] } },
            },
          },
        });
  for (let round = 0; round < 4; round++) {
    const mothers = [await animal(`Dam ${round}a`), await animal(`Dam ${round}b`), await animal(`Dam ${round}c`)];
    const child = await animal(`Foal ${round}`);
    const answers = await Promise.all([
      ...mothers.map((m, i) =>
        birth([child], m, `2024-08-0${i + 1}T06:00:00+00:00`).then((a) => ({ kind: 'birth', a })),
      ),
      ...Array.from({ length: 4 }, (_, i) =>
        patchParent(child, parents[i % 2]!, i).then((a) => ({ kind: 'parent', a })),
      ),
    ]);
    const report = answers.map(({ kind, a }) => `${kind} ${a.status} ${a.text.slice(0, 200)}`).join('\n');
    const births = answers.filter((x) => x.kind === 'birth').map((x) => x.a);
    assert.ok(
      answers.every(({ kind, a }) =>
        kind === 'birth'
          ? a.status === 201 || (a.status === 422 && /already has a birth log/.test(a.text))
          : a.status === 200 || a.status === 204,
      ),
      report,
    );
    assert.equal(births.filter((a) => a.status === 201).length, 1, `born once:\n${report}`);
    // Every change of the parent replaces it with one sire, and a birth log only fills in a parent
    // that is missing: whatever order they ran in, the child ends with one sire.
    const held = (await get(child)).relationships.parent.data.map((p: any) => p.id);
    assert.equal(held.length, 1, `one parent: ${held.join()}`);
    assert.ok(parents.includes(held[0]), `a sire, not a dam set over a sire it did not see: ${held[0]}`);
  }
});
