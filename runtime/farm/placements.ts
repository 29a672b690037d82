/**
 * Where each asset is and which groups it is in, stored as time intervals (the `asset_location`
 * and `asset_group` tables, made by core migrations 0005 and 0006), so that "the assets in X",
 * "the members of herd H", a filter or sort on `location`, and a page of assets with their
 * location and groups cost an index lookup instead of a walk over every movement and
 * group-assignment log.
 *
 * The rules are farmOS's (farmos-behaviour.md §1.7–1.8), applied at every moment something could
 * change: an asset is in the groups its latest done group-assignment log at or before that moment
 * names, and where its latest done movement log put it (ties broken by the higher log id); a
 * group member moves with its group when the group's latest movement has a higher log id and a
 * timestamp at least as late as the member's own; fixed assets have no location (but can be in
 * groups). Future-dated logs make intervals that start in the future, so a move or an assignment
 * takes effect when its time comes with no write.
 *
 * Every write that can change an asset's timeline rebuilds that asset's intervals from its logs
 * (never patched incrementally, so the tables cannot drift from the logs): a movement or
 * group-assignment log saved or deleted (its assets, and the members of any group among them), an
 * asset's `is_fixed` changed, and a group deleted (its members). EntityService calls these inside
 * its write transaction.
 */
import { noteChangedIds } from '../storage/unit-of-work.ts';
import { recordDueChanges, type DueChange } from '../storage/due-changes.ts';
import type { ModelRegistry } from '../model/registry.ts';
import { columnOf, fieldOf, sideTableOf } from '../model/storage-of.ts';
import { chunks, lockRows, type Db, type ItemValue, type Reference } from '../storage/records.ts';
import { SqlMemo, execute, quoteName, selectRows } from '../storage/sql.ts';
import { dialectOf, type JsonRowType, type SqlDialect } from '../storage/dialect.ts';
import { write } from '../storage/transactions.ts';

export const PLACEMENTS_TABLE = 'asset_location';
export const GROUPS_TABLE = 'asset_group';
const PENDING_TABLE = 'tilth_pending_work';

/** A done log, ordered by (timestamp, id) as farmOS orders them. */
interface Dated {
  logId: number;
  timestamp: number;
}

/** A group-assignment log and the groups it assigns. */
interface Assignment extends Dated {
  groups: number[];
}

/** What an asset's location is at a moment: the movement log that says so, and its locations. */
export interface Placement {
  logId: number;
  locations: Reference[];
}

type Values = ReadonlyMap<string, ItemValue | ItemValue[]>;

/** A row of `asset_location` or `asset_group` with its target's UUID and bundle (null when the target is gone). */
interface IntervalRow {
  entity_id: number;
  log_id: number;
  target_id: number | null;
  uuid: string | null;
  bundle: string | null;
}

/** The fields whose change can move an asset, on a log. */
const LOG_FIELDS = ['asset', 'location', 'group', 'is_movement', 'is_group_assignment', 'status', 'timestamp'];

/** Tables and columns, taken from the descriptors once. */
interface Layout {
  log: string;
  asset: string;
  logAsset: string;
  logLocation: string;
  logGroup: string | null;
  isMovement: string;
  isGroupAssignment: string | null;
  status: string;
  timestamp: string;
  isFixed: string | null;
}

const wktOf = (g: ItemValue | ItemValue[] | undefined): string | null =>
  (g as { value?: string } | null | undefined)?.value || null;

function refs(values: Values | null, name: string): number[] {
  const v = values?.get(name);
  return ((Array.isArray(v) ? v : v ? [v] : []) as Reference[]).filter(Boolean).map((r) => r.targetId);
}

/** A sorted list of dated logs, read forward as time goes on. */
class Cursor<T extends Dated> {
  private i = -1;
  constructor(private readonly items: T[]) {}
  /** The latest item at or before `time`; `time` never goes back between calls. */
  at(time: number): T | undefined {
    while (this.i + 1 < this.items.length && this.items[this.i + 1]!.timestamp <= time) this.i++;
    return this.i >= 0 ? this.items[this.i] : undefined;
  }
}

const byDate = (a: Dated, b: Dated) => a.timestamp - b.timestamp || a.logId - b.logId;

/** The columns of `asset_location` and `asset_group`, in the order the rebuild inserts them, with their types. */
const INTERVAL_COLUMNS: ReadonlyArray<readonly [keyof IntervalColumns, JsonRowType]> = [
  ['entity_id', 'integer'],
  ['target_id', 'integer'],
  ['delta', 'integer'],
  ['log_id', 'integer'],
  ['start_ts', 'bigint'],
  ['end_ts', 'bigint'],
];

export class Placements {
  private readonly layout: Layout | null;
  /**
   * Every statement's text, by what it does, dialect and whether it names one id. A list of ids is
   * one bound parameter (dialect.inIdList) and a set of rows to insert one JSON parameter
   * (dialect.jsonRows), so the texts do not grow with an asset's history: built through Knex's
   * `whereIn` and multi-row INSERT they did, and every history length made SQLite prepare and keep
   * a new statement (bench/README.md, Issue 41 Part F, MEM).
   */
  private readonly statements = new SqlMemo();

  constructor(registry: ModelRegistry) {
    this.layout = Placements.layoutOf(registry);
  }

  private static layoutOf(registry: ModelRegistry): Layout | null {
    const logType = registry.model.entityTypes.log;
    const assetType = registry.model.entityTypes.asset;
    if (!logType || !assetType) return null;
    const logField = (name: string) => fieldOf(registry, 'log', name);
    const assetField = (name: string) => fieldOf(registry, 'asset', name);
    const logAsset = sideTableOf(logField('asset'));
    const logLocation = sideTableOf(logField('location'));
    const isMovement = columnOf(logField('is_movement'));
    const status = columnOf(logField('status'));
    const timestamp = columnOf(logField('timestamp'));
    if (!logAsset || !logLocation || !isMovement || !status || !timestamp) return null;
    return {
      log: logType.table,
      asset: assetType.table,
      logAsset,
      logLocation,
      logGroup: sideTableOf(logField('group')),
      isMovement,
      isGroupAssignment: columnOf(logField('is_group_assignment')),
      status,
      timestamp,
      isFixed: columnOf(assetField('is_fixed')),
    };
  }

  /** Where each asset is at `time`: one indexed query. Assets that are nowhere are absent. */
  async at(db: Db, assetIds: number[], time: number): Promise<Map<number, Placement>> {
    const out = new Map<number, Placement>();
    for (const r of await this.intervalsAt(db, PLACEMENTS_TABLE, assetIds, time)) {
      const asset = Number(r.entity_id);
      let placement = out.get(asset);
      if (!placement) out.set(asset, (placement = { logId: Number(r.log_id), locations: [] }));
      // A movement whose locations were all deleted still places the asset (its geometry counts).
      if (r.target_id !== null && r.uuid)
        placement.locations.push({ targetId: Number(r.target_id), uuid: r.uuid, bundle: r.bundle!, meta: {} });
    }
    return out;
  }

  /** The groups each asset is in at `time`, in the order its assignment log names them: one indexed query. */
  async groupsAt(db: Db, assetIds: number[], time: number): Promise<Map<number, Reference[]>> {
    const out = new Map<number, Reference[]>();
    for (const r of await this.intervalsAt(db, GROUPS_TABLE, assetIds, time)) {
      if (r.target_id !== null && r.uuid)
        push(out, Number(r.entity_id), { targetId: Number(r.target_id), uuid: r.uuid, bundle: r.bundle!, meta: {} });
    }
    return out;
  }

  /**
   * Where one asset was between `from` and `to` (inclusive): its location intervals overlapping
   * that span, oldest first, each with its start, end (null: still) and locations (an asset's
   * timeline, issue 42 §5). One indexed query, by (entity_id, start_ts), whatever the span holds.
   */
  async intervalsOf(
    db: Db,
    assetId: number,
    from: number,
    to: number,
  ): Promise<Array<{ start: number; end: number | null; logId: number; locations: Reference[] }>> {
    if (!this.layout) return [];
    const sql = this.statements.get(
      'intervals-of',
      () => `SELECT p.start_ts, p.end_ts, p.log_id, p.target_id, t.uuid, t.bundle FROM ${PLACEMENTS_TABLE} AS p LEFT JOIN ${this.layout!.asset} AS t ON t.id = p.target_id
        WHERE p.entity_id = ? AND p.start_ts <= ? AND (p.end_ts IS NULL OR p.end_ts > ?) ORDER BY p.start_ts, p.delta`,
    );
    const rows = await selectRows<IntervalRow & { start_ts: number | string; end_ts: number | string | null }>(
      db,
      sql,
      [assetId, to, from],
    );
    const out: Array<{ start: number; end: number | null; logId: number; locations: Reference[] }> = [];
    for (const r of rows) {
      const start = Number(r.start_ts);
      let last = out[out.length - 1];
      if (!last || last.start !== start || last.logId !== Number(r.log_id))
        out.push(
          (last = { start, end: r.end_ts === null ? null : Number(r.end_ts), logId: Number(r.log_id), locations: [] }),
        );
      if (r.target_id !== null && r.uuid)
        last.locations.push({ targetId: Number(r.target_id), uuid: r.uuid, bundle: r.bundle!, meta: {} });
    }
    return out;
  }

  /** The rows of an interval table (placements or memberships) that hold at `time`, with their targets' UUID and bundle. */
  private async intervalsAt(db: Db, table: string, assetIds: number[], time: number): Promise<IntervalRow[]> {
    if (!this.layout || !assetIds.length) return [];
    const out: IntervalRow[] = [];
    const dialect = dialectOf(db);
    for (const part of chunks([...new Set(assetIds)])) {
      // Two texts per table and dialect (one asset, or a list bound as one parameter): built once.
      const single = part.length === 1;
      const asset = this.layout.asset;
      const sql = this.statements.get(
        `at:${table}:${dialect.name}:${single}`,
        () => `SELECT p.entity_id, p.log_id, p.target_id, t.uuid, t.bundle FROM ${table} AS p LEFT JOIN ${asset} AS t ON t.id = p.target_id
          WHERE ${dialect.inIdList('p.entity_id', { single })} AND p.start_ts <= ? AND (p.end_ts IS NULL OR p.end_ts > ?) ORDER BY p.entity_id, p.delta`,
      );
      out.push(...(await selectRows<IntervalRow>(db, sql, [dialect.idListParameter(part), time, time])));
    }
    return out;
  }

  /**
   * After log `logId` is created (`before` null), updated or deleted (`after` null). A movement
   * log's geometry is the geometry of the assets it places (farm/location.ts), so a new one
   * changes what they show although their intervals stay as they were. `alsoLocked`: other assets
   * the save writes after (the inventories it changes): when a rebuild locks assets, they are
   * rebuilt with them (unchanged, so not listed), so that the save locks all its assets in one
   * ascending pass and cannot deadlock with a save locking the same ones.
   */
  async logChanged(
    db: Db,
    logId: number,
    before: Values | null,
    after: Values | null,
    changed: Iterable<string> = LOG_FIELDS,
    alsoLocked: number[] = [],
  ): Promise<void> {
    if (!this.layout) return;
    const flagged = (v: Values | null) => Boolean(v?.get('is_movement')) || Boolean(v?.get('is_group_assignment'));
    if (!flagged(before) && !flagged(after)) return;
    const names = [...changed];
    const reshaped =
      before !== null &&
      after !== null &&
      names.includes('geometry') &&
      wktOf(before.get('geometry')) !== wktOf(after.get('geometry'));
    if (before && after && !reshaped && !names.some((name) => LOG_FIELDS.includes(name))) return;
    const assets = [...new Set([...refs(before, 'asset'), ...refs(after, 'asset')])];
    await this.rebuild(db, [...assets, ...(await this.membersOf(db, assets)), ...alsoLocked], {
      reshapedLog: reshaped ? logId : undefined,
    });
  }

  /** After an asset is updated: a fixed asset has no location, a movable one its logs' location. */
  async assetChanged(db: Db, assetId: number, changed: Iterable<string>): Promise<void> {
    if ([...changed].includes('is_fixed')) await this.rebuild(db, [assetId]);
  }

  /**
   * Before an asset is deleted: the members whose intervals depend on it as a group. (The
   * database deletes every reference to a deleted record with it, so they cannot be found after.)
   */
  async membersBeforeDelete(db: Db, assetId: number): Promise<number[]> {
    return this.layout ? this.membersOf(db, [assetId]) : [];
  }

  /**
   * Before an asset is deleted: the other assets whose rows of `asset_location` or `asset_group`
   * its deletion writes (assetDeleted): its members, and the assets it is (or was) the location of.
   * On PostgreSQL these are locked first (entities/deletion-locks.ts), as rebuild locks the assets
   * it writes.
   */
  async assetsWrittenOnDelete(db: Db, assetId: number): Promise<number[]> {
    if (!this.layout) return [];
    const placed = (await db(PLACEMENTS_TABLE).where('target_id', assetId).distinct('entity_id')) as Array<{
      entity_id: number;
    }>;
    return [...new Set([...(await this.membersOf(db, [assetId])), ...placed.map((r) => Number(r.entity_id))])].filter(
      (id) => id !== assetId,
    );
  }

  /**
   * After an asset is deleted: its intervals go; logs that moved assets into it no longer name it
   * (as their references to it are gone), and its members no longer move with it or count as in it.
   */
  async assetDeleted(db: Db, assetId: number, members: number[]): Promise<void> {
    if (!this.layout) return;
    await db(PLACEMENTS_TABLE).where('entity_id', assetId).delete();
    // The assets it was the location or a group of show it no more: listed here, as the rebuild
    // below compares with rows already without it (locked first on PostgreSQL: assetsWrittenOnDelete).
    const showing: number[] = [];
    for (const table of [PLACEMENTS_TABLE, GROUPS_TABLE]) {
      for (const r of (await db(table).where('target_id', assetId).distinct('entity_id')) as Array<{
        entity_id: number;
      }>)
        showing.push(Number(r.entity_id));
    }
    await db(PLACEMENTS_TABLE).where('target_id', assetId).update({ target_id: null });
    await db(GROUPS_TABLE).where('entity_id', assetId).orWhere('target_id', assetId).delete();
    await this.rebuild(db, members);
    await noteChangedIds(
      db,
      'asset',
      this.layout.asset,
      showing.filter((id) => id !== assetId),
    );
  }

  /** Assets ever assigned to any of these groups, by a group-assignment log of any status. */
  private async membersOf(db: Db, groups: number[]): Promise<number[]> {
    const l = this.layout!;
    if (!groups.length || !l.logGroup || !l.isGroupAssignment) return [];
    const members = new Set<number>();
    const logGroup = l.logGroup;
    const isGroupAssignment = l.isGroupAssignment;
    for (const part of chunks(groups)) {
      const rows = await this.selectByIds<{ target_id: number }>(
        db,
        'members',
        part,
        (
          ids,
        ) => `SELECT DISTINCT la.target_id FROM ${q(logGroup)} AS lg JOIN ${q(l.logAsset)} AS la ON la.entity_id = lg.entity_id
          JOIN ${q(l.log)} AS g ON g.id = lg.entity_id WHERE ${ids('lg.target_id')} AND g.${q(isGroupAssignment)} = ?`,
        [true],
      );
      for (const r of rows) members.add(Number(r.target_id));
    }
    return [...members];
  }

  /**
   * Recompute these assets' intervals from their logs, replacing what was stored. The assets whose
   * intervals come out different, and those placed by `reshapedLog` (a movement log whose geometry
   * changed), get a change-feed row (a new version): offline clients and ETags learn what they
   * show now. The others are left out, so that a log sent back unchanged does not have every
   * client download them again; but with `listAll` (the rebuild after an import, whose writes
   * change inventories and geometries without telling anyone) every one is listed.
   */
  async rebuild(
    db: Db,
    assetIds: Iterable<number>,
    options: { reshapedLog?: number | undefined; listAll?: boolean } = {},
  ): Promise<void> {
    if (!this.layout) return;
    const ids = [...new Set(assetIds)].sort((a, b) => a - b);
    for (const part of chunks(ids, 500)) await this.rebuildPart(db, part, options);
  }

  private async rebuildPart(
    db: Db,
    ids: number[],
    { reshapedLog, listAll }: { reshapedLog?: number | undefined; listAll?: boolean },
  ): Promise<void> {
    const l = this.layout!;
    // Two PostgreSQL transactions moving the same asset would each rebuild from a snapshot missing
    // the other's log; the row locks (taken in id order, so they cannot deadlock each other) make
    // the second wait and then read the first's log. FOR NO KEY UPDATE, not FOR UPDATE: each
    // transaction already holds the KEY SHARE lock its log's reference to the asset took, which
    // FOR UPDATE would wait on (a deadlock between two movers) and FOR NO KEY UPDATE does not.
    // Step 5 of the global lock order (storage/locks.ts).
    await lockRows(db, l.asset, ids);
    const stored = new Intervals();
    for (const [table, kind] of [
      [PLACEMENTS_TABLE, 'L'],
      [GROUPS_TABLE, 'G'],
    ] as const) {
      const rows = await this.selectByIds<IntervalColumns>(
        db,
        `stored:${table}`,
        ids,
        (of) => `SELECT ${INTERVAL_COLUMNS.map(([c]) => c).join(', ')} FROM ${table} WHERE ${of('entity_id')}`,
      );
      for (const r of rows) stored.add(kind, r);
    }
    for (const table of [PLACEMENTS_TABLE, GROUPS_TABLE])
      await this.executeByIds(db, `delete:${table}`, ids, (of) => `DELETE FROM ${table} WHERE ${of('entity_id')}`);
    const { isFixed } = l;
    const movable = (
      await this.selectByIds<{ id: number }>(
        db,
        'movable',
        ids,
        (of) =>
          `SELECT id FROM ${q(l.asset)} WHERE ${of('id')}${isFixed ? ` AND (${q(isFixed)} IS NULL OR ${q(isFixed)} = ?)` : ''}`,
        isFixed ? [false] : [],
      )
    ).map((r) => Number(r.id));

    // The assets' own movement and group-assignment logs, done, at any time (future ones too).
    const own = await this.datedLogs(db, ids);
    const assignments = new Map<number, Assignment[]>();
    const moves = new Map<number, Dated[]>();
    const assignmentLogs = new Set<number>();
    for (const r of own) {
      if (r.movement) push(moves, r.assetId, r);
      if (r.assignment) assignmentLogs.add(r.logId);
    }
    // The groups each assignment log names (groups deleted since do not count, as they are not shown).
    const groupsOf = new Map<number, number[]>();
    if (assignmentLogs.size && l.logGroup) {
      const logGroup = l.logGroup;
      for (const part of chunks([...assignmentLogs])) {
        const rows = await this.selectByIds<{ entity_id: number; target_id: number }>(
          db,
          'groupsOf',
          part,
          (
            of,
          ) => `SELECT lg.entity_id, lg.target_id FROM ${q(logGroup)} AS lg JOIN ${q(l.asset)} AS g ON g.id = lg.target_id
            WHERE ${of('lg.entity_id')} ORDER BY lg.entity_id, lg.delta`,
        );
        for (const r of rows) push(groupsOf, Number(r.entity_id), Number(r.target_id));
      }
    }
    for (const r of own)
      if (r.assignment)
        push(assignments, r.assetId, { logId: r.logId, timestamp: r.timestamp, groups: groupsOf.get(r.logId) ?? [] });
    for (const list of [...moves.values(), ...assignments.values()]) list.sort(byDate);

    const rebuilt = new Intervals();
    for (const r of await this.storeMemberships(db, ids, assignments)) rebuilt.add('G', r);
    if (movable.length)
      for (const r of await this.storeLocations(db, movable, moves, assignments, [
        ...new Set([...groupsOf.values()].flat()),
      ]))
        rebuilt.add('L', r);
    await noteChangedIds(
      db,
      'asset',
      l.asset,
      listAll
        ? ids
        : ids.filter(
            (id) =>
              stored.of(id) !== rebuilt.of(id) || (reshapedLog !== undefined && rebuilt.logsOf(id).has(reshapedLog)),
          ),
    );
    // An interval that starts or ends in the future changes what the asset shows then.
    await recordDueChanges(db, 'asset', rebuilt.moments());
  }

  /** Each asset's group membership: the groups of its latest assignment, from each assignment's moment. */
  private async storeMemberships(
    db: Db,
    assets: number[],
    assignments: Map<number, Assignment[]>,
  ): Promise<IntervalColumns[]> {
    const rows: IntervalColumns[] = [];
    for (const asset of assets) {
      const list = assignments.get(asset) ?? [];
      for (let i = 0; i < list.length; i++) {
        const a = list[i]!;
        const end = list[i + 1]?.timestamp ?? null;
        // Of several assignments at one moment, the one with the higher log id holds.
        if (end === a.timestamp) continue;
        a.groups.forEach((group, delta) =>
          rows.push({ entity_id: asset, target_id: group, delta, log_id: a.logId, start_ts: a.timestamp, end_ts: end }),
        );
      }
    }
    await this.insertIntervals(db, GROUPS_TABLE, rows);
    return rows;
  }

  /** Each movable asset's location: which movement log holds from each moment something changed. */
  private async storeLocations(
    db: Db,
    movable: number[],
    moves: Map<number, Dated[]>,
    assignments: Map<number, Assignment[]>,
    groups: number[],
  ): Promise<IntervalColumns[]> {
    const l = this.layout!;
    const groupMoves = new Map<number, Dated[]>();
    for (const r of groups.length ? await this.datedLogs(db, groups) : [])
      if (r.movement) push(groupMoves, r.assetId, r);
    for (const list of groupMoves.values()) list.sort(byDate);

    const intervals: Array<{ asset: number; logId: number; start: number; end: number | null }> = [];
    for (const asset of movable) {
      const mine = moves.get(asset) ?? [];
      const assigned = assignments.get(asset) ?? [];
      const theirGroups = [...new Set(assigned.flatMap((a) => a.groups))];
      const times = new Set<number>([...mine, ...assigned].map((d) => d.timestamp));
      for (const g of theirGroups) for (const d of groupMoves.get(g) ?? []) times.add(d.timestamp);
      const ownAt = new Cursor(mine);
      const assignedAt = new Cursor(assigned);
      const groupAt = new Map(theirGroups.map((g) => [g, new Cursor(groupMoves.get(g) ?? [])]));
      let open: { logId: number; start: number } | null = null;
      for (const time of [...times].sort((a, b) => a - b)) {
        let best = ownAt.at(time);
        const current = assignedAt.at(time);
        // Every group's cursor moves on with time, assigned now or not.
        const groupNow = new Map([...groupAt].map(([g, c]) => [g, c.at(time)]));
        for (const g of current?.groups ?? []) {
          const move = groupNow.get(g);
          if (move && (!best || (move.logId > best.logId && move.timestamp >= best.timestamp))) best = move;
        }
        if ((best?.logId ?? null) === (open?.logId ?? null)) continue;
        if (open) intervals.push({ asset, logId: open.logId, start: open.start, end: time });
        open = best ? { logId: best.logId, start: time } : null;
      }
      if (open) intervals.push({ asset, logId: open.logId, start: open.start, end: null });
    }
    if (!intervals.length) return [];

    const locations = new Map<number, number[]>();
    for (const part of chunks([...new Set(intervals.map((i) => i.logId))])) {
      const rows = await this.selectByIds<{ entity_id: number; target_id: number }>(
        db,
        'logLocations',
        part,
        (of) =>
          `SELECT entity_id, target_id FROM ${q(l.logLocation)} WHERE ${of('entity_id')} ORDER BY entity_id, delta`,
      );
      for (const r of rows) push(locations, Number(r.entity_id), Number(r.target_id));
    }
    const rows = intervals.flatMap((i) => {
      const at = locations.get(i.logId) ?? [];
      const row = (target: number | null, delta: number): IntervalColumns => ({
        entity_id: i.asset,
        target_id: target,
        delta,
        log_id: i.logId,
        start_ts: i.start,
        end_ts: i.end,
      });
      return at.length ? at.map((target, delta) => row(target, delta)) : [row(null, 0)];
    });
    await this.insertIntervals(db, PLACEMENTS_TABLE, rows);
    return rows;
  }

  /** Done movement and group-assignment logs that reference these assets. */
  private async datedLogs(
    db: Db,
    assetIds: number[],
  ): Promise<Array<Dated & { assetId: number; movement: boolean; assignment: boolean }>> {
    const l = this.layout!;
    const out: Array<Dated & { assetId: number; movement: boolean; assignment: boolean }> = [];
    const { isGroupAssignment } = l;
    for (const part of chunks(assetIds)) {
      const rows = await this.selectByIds<{
        asset_id: number;
        log_id: number;
        ts: number;
        movement: unknown;
        assignment?: unknown;
      }>(
        db,
        'datedLogs',
        part,
        (of) =>
          `SELECT la.target_id AS asset_id, l.id AS log_id, l.${q(l.timestamp)} AS ts, l.${q(l.isMovement)} AS movement${isGroupAssignment ? `, l.${q(isGroupAssignment)} AS assignment` : ''}
          FROM ${q(l.logAsset)} AS la JOIN ${q(l.log)} AS l ON l.id = la.entity_id
          WHERE ${of('la.target_id')} AND l.${q(l.status)} = ? AND (l.${q(l.isMovement)} = ?${isGroupAssignment ? ` OR l.${q(isGroupAssignment)} = ?` : ''})`,
        isGroupAssignment ? ['done', true, true] : ['done', true],
      );
      for (const r of rows) {
        out.push({
          assetId: Number(r.asset_id),
          logId: Number(r.log_id),
          timestamp: Number(r.ts),
          movement: Boolean(Number(r.movement) || r.movement === true),
          assignment: Boolean(Number(r.assignment) || r.assignment === true),
        });
      }
    }
    return out;
  }

  /**
   * A SELECT naming `ids` (bound as one parameter, or `= ?` for one), its text built once per
   * `key` and dialect; `text` writes the statement around the id condition `of(column)`. The
   * other `bindings` follow the ids.
   */
  private selectByIds<T>(
    db: Db,
    key: string,
    ids: readonly number[],
    text: (of: (column: string) => string) => string,
    bindings: readonly unknown[] = [],
  ): Promise<T[]> {
    const { sql, parameter } = this.byIds(db, key, ids, text);
    return selectRows<T>(db, sql, [parameter, ...(bindings as Array<string | number | boolean>)]);
  }

  /** As selectByIds, for a DELETE or UPDATE. */
  private async executeByIds(
    db: Db,
    key: string,
    ids: readonly number[],
    text: (of: (column: string) => string) => string,
  ): Promise<void> {
    const { sql, parameter } = this.byIds(db, key, ids, text);
    await execute(db, sql, [parameter]);
  }

  private byIds(
    db: Db,
    key: string,
    ids: readonly number[],
    text: (of: (column: string) => string) => string,
  ): { sql: string; parameter: string | number } {
    const dialect: SqlDialect = dialectOf(db);
    const single = ids.length === 1;
    const sql = this.statements.get(`${key}:${dialect.name}:${single}`, () =>
      text((column) => dialect.inIdList(column, { single })),
    );
    return { sql, parameter: dialect.idListParameter(ids) };
  }

  /** Interval rows inserted by one statement whatever their number: the rows are one JSON parameter. */
  private async insertIntervals(db: Db, table: string, rows: readonly IntervalColumns[]): Promise<void> {
    if (!rows.length) return;
    const dialect = dialectOf(db);
    const sql = this.statements.get(
      `insert:${table}:${dialect.name}`,
      () =>
        `INSERT INTO ${table} (${INTERVAL_COLUMNS.map(([c]) => c).join(', ')}) ${dialect.jsonRows(INTERVAL_COLUMNS.map(([, t]) => t))}`,
    );
    const values = (v: number | string | null) => (v === null ? null : Number(v));
    await execute(db, sql, [dialect.jsonRowsParameter(rows.map((r) => INTERVAL_COLUMNS.map(([c]) => values(r[c]))))]);
  }

  /**
   * Ask for every asset's intervals to be rebuilt (by rebuildIfPending: the server does it at
   * start). `tilth import farmos` asks in the transaction of each page it writes, without
   * computing anything per record, so that a run killed before its rebuild leaves the request.
   */
  async requestRebuild(db: Db): Promise<void> {
    await db(PENDING_TABLE).insert({ name: PLACEMENTS_TABLE }).onConflict('name').ignore();
  }

  /**
   * Compute every asset's intervals when a migration asked for it (a farm upgraded to the release
   * that brought the table), a thousand assets per transaction; then clear the request.
   */
  async rebuildIfPending(knex: Db & { transaction: Db['transaction'] }): Promise<number> {
    if (!this.layout || !(await knex.schema.hasTable(PENDING_TABLE))) return 0;
    if (!(await knex(PENDING_TABLE).where('name', PLACEMENTS_TABLE).first())) return 0;
    let done = 0;
    for (let after = 0; ;) {
      const ids = (
        (await knex(this.layout.asset).where('id', '>', after).orderBy('id').limit(1000).select('id')) as Array<{
          id: number;
        }>
      ).map((r) => Number(r.id));
      if (!ids.length) break;
      await write(knex, (trx) => this.rebuild(trx, ids, { listAll: true }));
      done += ids.length;
      after = ids[ids.length - 1]!;
    }
    await knex(PENDING_TABLE).where('name', PLACEMENTS_TABLE).delete();
    return done;
  }
}

/** A row of `asset_location` or `asset_group` (PostgreSQL gives its bigints as strings). */
interface IntervalColumns {
  entity_id: number | string;
  target_id: number | string | null;
  delta: number | string;
  log_id: number | string;
  start_ts: number | string;
  end_ts: number | string | null;
}

/** Assets' interval rows, each asset's as one comparable text, and the logs they come from. */
class Intervals {
  private readonly rows = new Map<number, string[]>();
  private readonly logs = new Map<number, Set<number>>();
  private readonly boundaries: DueChange[] = [];

  add(kind: 'L' | 'G', r: IntervalColumns): void {
    const asset = Number(r.entity_id);
    this.boundaries.push({ id: asset, at: Number(r.start_ts) });
    if (r.end_ts !== null) this.boundaries.push({ id: asset, at: Number(r.end_ts) });
    const n = (v: number | string | null) => (v === null ? '' : String(Number(v)));
    push(this.rows, asset, `${kind}${n(r.target_id)},${n(r.delta)},${n(r.log_id)},${n(r.start_ts)},${n(r.end_ts)}`);
    const logs = this.logs.get(asset) ?? new Set<number>();
    this.logs.set(asset, logs.add(Number(r.log_id)));
  }

  of(asset: number): string {
    return (this.rows.get(asset) ?? []).sort().join(';');
  }

  logsOf(asset: number): ReadonlySet<number> {
    return this.logs.get(asset) ?? new Set();
  }

  /** The moments the intervals start and end at (recordDueChanges keeps those to come). */
  moments(): DueChange[] {
    return this.boundaries;
  }
}

/** A table or column name from the definitions, quoted. */
const q = quoteName;

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
