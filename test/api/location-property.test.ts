// A property test of stored placements (farm records issue, item 7): random movement and group
// logs — back-dated, future-dated, pending, edited, deleted, group moves, a group put in itself —
// and after every step each asset's served location and groups, the `location.id` and `group.id`
// filters, and a computation from scratch over the logs (farmOS's rules, written out again here)
// all agree, now and at a random earlier or later moment (`as_of`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

let server: TestServer;
let token: string;
before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

type Ref = { type: string; id: string };
interface Log {
  id: string;
  serial: number;
  timestamp: number;
  status: string;
  movement: boolean;
  assignment: boolean;
  assets: string[];
  locations: string[];
  groups: string[];
}

const HOUR = 3600;
const api = async (method: string, path: string, data?: unknown) =>
  request(`${server.url}${path}`, { method, token, ...(data ? { json: { data } } : {}) });

/** farmOS's rule, from the logs alone: where `asset` is at `at`. */
function expectedLocation(logs: Log[], asset: string, at: number): string[] {
  const latest = (pick: (l: Log) => boolean) =>
    logs
      .filter((l) => l.status === 'done' && l.timestamp <= at && pick(l))
      .sort((a, b) => a.timestamp - b.timestamp || a.serial - b.serial)
      .at(-1);
  let best = latest((l) => l.movement && l.assets.includes(asset));
  const assignment = latest((l) => l.assignment && l.assets.includes(asset));
  for (const g of assignment?.groups ?? []) {
    const move = latest((l) => l.movement && l.assets.includes(g));
    if (move && (!best || (move.serial > best.serial && move.timestamp >= best.timestamp))) best = move;
  }
  return best?.locations ?? [];
}

/** farmOS's rule for groups: the groups of `asset`'s latest done assignment at or before `at`. */
function expectedGroups(logs: Log[], asset: string, at: number): string[] {
  return (
    logs
      .filter((l) => l.status === 'done' && l.timestamp <= at && l.assignment && l.assets.includes(asset))
      .sort((a, b) => a.timestamp - b.timestamp || a.serial - b.serial)
      .at(-1)?.groups ?? []
  );
}

/** Most logs are done; some pending. */
const mostlyDone = fc.integer({ min: 0, max: 3 }).map((n) => n > 0);

const step = fc.oneof(
  fc.record({
    kind: fc.constant('move' as const),
    assets: fc.constant([3]),
    location: fc.nat(2),
    hours: fc.integer({ min: -48, max: 48 }),
    done: mostlyDone,
  }),
  fc.record({
    kind: fc.constant('move' as const),
    assets: fc.subarray([0, 1, 2, 3], { minLength: 1 }),
    location: fc.nat(2),
    hours: fc.integer({ min: -48, max: 48 }),
    done: mostlyDone,
  }),
  fc.record({
    kind: fc.constant('assign' as const),
    assets: fc.subarray([0, 1, 2], { minLength: 1 }),
    grouped: fc.boolean(),
    hours: fc.integer({ min: -48, max: 48 }),
    done: mostlyDone,
  }),
  fc.record({ kind: fc.constant('delete' as const), which: fc.nat() }),
  fc.record({
    kind: fc.constant('edit' as const),
    which: fc.nat(),
    hours: fc.integer({ min: -48, max: 48 }),
    done: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('circular' as const), hours: fc.integer({ min: -48, max: 48 }) }),
);

test('served location and groups, their filters and a computation from scratch agree after every edit', async () => {
  let world = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(step, { minLength: 3, maxLength: 8 }),
      fc.integer({ min: -60, max: 60 }),
      async (steps, probeHours) => {
        world++;
        const now = Math.floor(Date.now() / 1000);
        const prefix = `W${world}-`;
        const create = async (path: string, data: unknown) => {
          const res = await api('POST', path, data);
          assert.equal(res.status, 201, res.text);
          return res.body.data;
        };
        const places: Ref[] = [];
        for (const n of ['A', 'B', 'C']) {
          const p = await create('/api/asset/land', {
            type: 'asset--land',
            attributes: { name: `${prefix}place ${n}`, land_type: 'field' },
          });
          places.push({ type: p.type, id: p.id });
        }
        // Three pieces of equipment and a group (asset 3), which can itself be moved.
        const assets: Ref[] = [];
        for (const n of ['x', 'y', 'z']) {
          const a = await create('/api/asset/equipment', {
            type: 'asset--equipment',
            attributes: { name: `${prefix}${n}` },
          });
          assets.push({ type: a.type, id: a.id });
        }
        const group = await create('/api/asset/group', {
          type: 'asset--group',
          attributes: { name: `${prefix}group` },
        });
        assets.push({ type: group.type, id: group.id });
        const logs: Log[] = [];
        const save = async (log: Omit<Log, 'id' | 'serial'>) => {
          const body = await create('/api/log/activity', {
            type: 'log--activity',
            attributes: {
              timestamp: log.timestamp,
              status: log.status,
              is_movement: log.movement,
              is_group_assignment: log.assignment,
            },
            relationships: {
              asset: { data: log.assets.map((id) => assets.find((a) => a.id === id)) },
              location: { data: log.locations.map((id) => places.find((p) => p.id === id)) },
              group: { data: log.groups.map((id) => ({ type: 'asset--group', id })) },
            },
          });
          logs.push({ ...log, id: body.id, serial: body.attributes.drupal_internal__id });
        };

        // x and y start in place A and in the group, so that the group's moves matter from the start.
        await save({
          timestamp: now - 72 * HOUR,
          status: 'done',
          movement: true,
          assignment: false,
          assets: [assets[0]!.id, assets[1]!.id],
          locations: [places[0]!.id],
          groups: [],
        });
        await save({
          timestamp: now - 71 * HOUR,
          status: 'done',
          movement: false,
          assignment: true,
          assets: [assets[0]!.id, assets[1]!.id],
          locations: [],
          groups: [group.id],
        });

        for (const s of steps) {
          if (s.kind === 'move') {
            await save({
              timestamp: now + s.hours * HOUR,
              status: s.done ? 'done' : 'pending',
              movement: true,
              assignment: false,
              assets: s.assets.map((i) => assets[i]!.id),
              locations: [places[s.location]!.id],
              groups: [],
            });
          } else if (s.kind === 'assign') {
            await save({
              timestamp: now + s.hours * HOUR,
              status: s.done ? 'done' : 'pending',
              movement: false,
              assignment: true,
              assets: s.assets.map((i) => assets[i]!.id),
              locations: [],
              groups: s.grouped ? [group.id] : [],
            });
          } else if (s.kind === 'circular') {
            // A group in itself is refused and changes nothing.
            const res = await api('POST', '/api/log/activity', {
              type: 'log--activity',
              attributes: { timestamp: now + s.hours * HOUR, status: 'done', is_group_assignment: true },
              relationships: { asset: { data: [assets[3]] }, group: { data: [assets[3]] } },
            });
            assert.equal(res.status, 422, res.text);
          } else if (logs.length) {
            const log = logs[s.which % logs.length]!;
            if (s.kind === 'delete') {
              assert.equal((await api('DELETE', `/api/log/activity/${log.id}`)).status, 204);
              logs.splice(logs.indexOf(log), 1);
            } else {
              log.timestamp = now + s.hours * HOUR;
              log.status = s.done ? 'done' : 'pending';
              const res = await api('PATCH', `/api/log/activity/${log.id}`, {
                type: 'log--activity',
                id: log.id,
                attributes: { timestamp: log.timestamp, status: log.status },
              });
              assert.equal(res.status, 200, res.text);
            }
          }

          for (const at of [now, now + probeHours * HOUR]) {
            const asOf = at === now ? '' : `&as_of=${at}`;
            const served = await api(
              'GET',
              `/api/asset/equipment?filter[name][operator]=STARTS_WITH&filter[name][value]=${prefix}&sort=name${asOf}`,
            );
            const groupServed = await api('GET', `/api/asset/group/${group.id}`);
            const rows = [...served.body.data, ...(at === now ? [groupServed.body.data] : [])] as Array<{
              id: string;
              attributes: { name: string };
              relationships: { location: { data: Ref[] }; group: { data: Ref[] } };
            }>;
            for (const r of rows) {
              assert.deepEqual(
                r.relationships.location.data.map((l) => l.id),
                expectedLocation(logs, r.id, at),
                `${r.attributes.name} at ${at - now} s, after ${JSON.stringify(s)}`,
              );
              assert.deepEqual(
                r.relationships.group.data.map((g) => g.id),
                expectedGroups(logs, r.id, at),
                `${r.attributes.name}'s groups at ${at - now} s, after ${JSON.stringify(s)}`,
              );
            }
            const members = await api(
              'GET',
              `/api/asset/equipment?filter[name][operator]=STARTS_WITH&filter[name][value]=${prefix}&filter[group.id]=${group.id}&sort=name${asOf}`,
            );
            assert.equal(members.status, 200, members.text);
            const inGroup = assets
              .slice(0, 3)
              .filter((a) => expectedGroups(logs, a.id, at).includes(group.id))
              .map((a) => a.id);
            assert.deepEqual(
              members.body.data.map((r: Ref) => r.id).sort(),
              inGroup.sort(),
              `the group filter at ${at - now} s`,
            );
            const ungrouped = await api(
              'GET',
              `/api/asset/equipment?filter[name][operator]=STARTS_WITH&filter[name][value]=${prefix}&filter[group.id][operator]=IS%20NULL&sort=name${asOf}`,
            );
            const inNone = assets
              .slice(0, 3)
              .filter((a) => !expectedGroups(logs, a.id, at).length)
              .map((a) => a.id);
            assert.deepEqual(
              ungrouped.body.data.map((r: Ref) => r.id).sort(),
              inNone.sort(),
              `the assets in no group at ${at - now} s`,
            );
            for (const place of places) {
              const inside = await api(
                'GET',
                `/api/asset/equipment?filter[name][operator]=STARTS_WITH&filter[name][value]=${prefix}&filter[location.id]=${place.id}&sort=name${asOf}`,
              );
              const expected = assets
                .slice(0, 3)
                .filter((a) => expectedLocation(logs, a.id, at).includes(place.id))
                .map((a) => a.id);
              assert.deepEqual(
                inside.body.data.map((r: Ref) => r.id).sort(),
                expected.sort(),
                `the location filter at ${at - now} s`,
              );
            }
          }
        }
      },
    ),
    { numRuns: 15 },
  );
});
