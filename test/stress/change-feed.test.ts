// The change feed under concurrency (issue 25 item 2): writers create, edit and delete logs,
// assets and quantities, some holding their transaction open 0–500 ms (so that a transaction that
// took its place in the feed first commits last), while readers follow /api/changes 50 at a time.
// At the end each reader's replayed state (UUIDs and versions, deletions applied) equals the
// server's: 0 records missed, 0 deleted records resurrected, 0 stale versions, and no reader ever
// saw a record's version go backwards. The writers run inside the test server's process, through
// the same EntityService the handlers use, because only there can a transaction be held open.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { Api } from '../support/fixtures.ts';
import { JsonApiServices } from '../../runtime/jsonapi/handlers/services.ts';
import { ANONYMOUS } from '../../runtime/access/principal.ts';
import { FULL, SCALE, report } from './scale.ts';
import { write } from '../../runtime/storage/transactions.ts';

const KINDS = [
  {
    type: 'log--activity',
    values: (name: string) =>
      new Map<string, any>([
        ['name', name],
        ['status', 'done'],
        ['timestamp', 1_714_550_400],
      ]),
  },
  { type: 'asset--equipment', values: (name: string) => new Map<string, any>([['name', name]]) },
  {
    type: 'quantity--standard',
    values: (name: string) =>
      new Map<string, any>([
        ['label', name],
        ['measure', 'weight'],
      ]),
  },
] as const;
const TYPES = KINDS.map((k) => k.type);

let server: TestServer;
let api: Api;
let services: JsonApiServices;

before(async () => {
  const started = await startTestServerAsAdmin();
  server = started.server;
  api = new Api(server.url, started.token);
  services = new JsonApiServices(server.ctx);
});
after(() => server.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const op = fc.record({
  action: fc.constantFrom('create', 'create', 'update', 'delete'),
  kind: fc.constantFrom(0, 1, 2),
  // One write in four holds its transaction open.
  hold: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 500 }) }),
});

/** One writer: cycles through its plan until the deadline, touching only records it made. */
async function writer(
  w: number,
  plan: Array<{ action: string; kind: number; hold: number }>,
  deadline: number,
  counts: { writes: number; held: number },
): Promise<void> {
  const mine: Array<{ kind: number; id: number }> = [];
  for (let n = 0; Date.now() < deadline; n++) {
    const step = plan[n % plan.length]!;
    const action = mine.length === 0 ? 'create' : step.action;
    const kind = KINDS[step.kind]!;
    const rt = server.ctx.registry.get(kind.type)!;
    const hold = async () => {
      if (step.hold) {
        counts.held++;
        await sleep(step.hold);
      }
    };
    await write(services.knex, async (trx) => {
      if (action === 'create') {
        const { id } = await services.entities.create(
          trx,
          rt,
          { values: kind.values(`w${w}-${n}`), secrets: new Map() },
          ANONYMOUS,
        );
        await hold();
        mine.push({ kind: step.kind, id });
        return;
      }
      const index = (n * 7919) % mine.length;
      const target = mine[index]!;
      const targetKind = KINDS[target.kind]!;
      const entityType = targetKind.type.split('--')[0]!;
      const [record] = await services.loader.store.load(trx, entityType, [target.id]);
      if (action === 'update') {
        const label = entityType === 'quantity' ? 'label' : 'name';
        await services.entities.update(
          trx,
          record!,
          { values: new Map([[label, `w${w}-${n}-edited`]]), secrets: new Map() },
          ANONYMOUS,
        );
      } else {
        await services.entities.delete(trx, record!, ANONYMOUS);
        mine.splice(index, 1);
      }
      await hold();
    });
    counts.writes++;
  }
}

/** One reader: follows the feed 50 at a time, replaying it, until told to stop and caught up. */
async function reader(
  state: Map<string, number>,
  stop: () => boolean,
  figures: { reads: number; backwards: string[] },
): Promise<void> {
  let cursor = '0';
  for (let idle = 0; ;) {
    const res = await api.get(
      `/api/changes?since=${cursor}&page[limit]=50&${TYPES.map((t) => `filter[type][]=${t}`).join('&')}`,
    );
    assert.equal(res.status, 200, res.text.slice(0, 300));
    figures.reads++;
    for (const entry of res.body.data) {
      const seen = state.get(entry.id);
      if (seen !== undefined && entry.meta.version < seen) figures.backwards.push(entry.id);
      if (entry.meta.deleted) state.delete(entry.id);
      else state.set(entry.id, entry.meta.version);
    }
    cursor = res.body.meta.cursor;
    if (res.body.data.length === 0 && !res.body.links.next) {
      // Caught up: once the writers have stopped, two empty reads in a row end it.
      if (stop() && ++idle >= 2) return;
      await sleep(20);
    } else idle = 0;
  }
}

/** The server's state: every live record of the kinds written, with its version. */
async function serverState(): Promise<Map<string, number>> {
  const knex = server.ctx.db.knex;
  const out = new Map<string, number>();
  for (const type of TYPES) {
    const rt = server.ctx.registry.get(type)!;
    const rows = (await knex(`${rt.entityType.table} as e`)
      .leftJoin('change_feed as f', (j) =>
        j.on('f.entity_id', '=', 'e.id').andOn('f.entity_type', '=', knex.raw('?', [rt.entityType.entityType])),
      )
      .where('e.bundle', rt.bundle.bundle)
      .select('e.uuid', 'f.position')) as Array<{ uuid: string; position: number | string | null }>;
    for (const r of rows) out.set(r.uuid, r.position === null ? -1 : Number(r.position));
  }
  return out;
}

test(`${SCALE.feed.writers} writers (some holding their transaction open) and ${SCALE.feed.readers} readers for ${SCALE.feed.seconds} s: every reader's replay equals the server`, async () => {
  const totals = {
    runs: 0,
    writes: 0,
    held: 0,
    reads: 0,
    missed: 0,
    resurrected: 0,
    stale: 0,
    backwards: 0,
    records: 0,
  };
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(op, { minLength: 4, maxLength: 12 }), {
        minLength: SCALE.feed.writers,
        maxLength: SCALE.feed.writers,
      }),
      async (plans) => {
        const deadline = Date.now() + SCALE.feed.seconds * 1000;
        const counts = { writes: 0, held: 0 };
        let stopped = false;
        const states = Array.from({ length: SCALE.feed.readers }, () => new Map<string, number>());
        const figures = { reads: 0, backwards: [] as string[] };
        const readers = states.map((state) => reader(state, () => stopped, figures));
        await Promise.all(plans.map((plan, w) => writer(w, plan, deadline, counts)));
        stopped = true;
        await Promise.all(readers);
        const truth = await serverState();
        totals.runs++;
        totals.writes += counts.writes;
        totals.held += counts.held;
        totals.reads += figures.reads;
        totals.backwards += figures.backwards.length;
        totals.records = truth.size;
        for (const state of states) {
          const missed = [...truth.keys()].filter((id) => !state.has(id));
          const resurrected = [...state.keys()].filter((id) => !truth.has(id));
          const stale = [...truth].filter(([id, v]) => state.has(id) && state.get(id) !== v);
          totals.missed += missed.length;
          totals.resurrected += resurrected.length;
          totals.stale += stale.length;
          assert.deepEqual({ missed, resurrected, stale }, { missed: [], resurrected: [], stale: [] });
        }
        assert.deepEqual(figures.backwards, [], 'no reader saw a version go backwards');
        assert.ok(counts.writes > SCALE.feed.writers, `the writers wrote (${counts.writes})`);
      },
    ),
    { numRuns: SCALE.feed.runs, endOnFailure: true },
  );
  report('change feed under concurrency', {
    ...totals,
    seconds: SCALE.feed.seconds,
    writers: SCALE.feed.writers,
    readers: SCALE.feed.readers,
    full: FULL,
  });
});
