/**
 * Readings and inventories as charts on a record's page (issue 42 §6). A data stream's page, and a
 * sensor's (one block per basic stream it references, at most STREAMS_SHOWN), shows the latest
 * value and its time, a range to pick (the day, week or season up to the latest reading, or dates
 * of one's own), the range's readings reduced to TABLE_BUCKETS rows of min, max and count (a table
 * that works with no script), a link to the range's readings as CSV (what the API's
 * `/api/data_stream/{uuid}/data?start=&end=` answers, newest first), and a chart element that the
 * browser's chart script (browser/chart.ts) draws from this page's summary endpoint: one bucket
 * per pixel (farm/data-streams.ts summariseReadings, one aggregate over the readings' index), never
 * the readings themselves. An asset with an inventory shows its history as a table of the steps
 * the adjusting logs made, which the script draws as a step chart.
 *
 *   GET /farm/data_stream/<bundle>/<uuid>/readings?start=&end=&buckets=   the summary, JSON
 *   GET /farm/data_stream/<bundle>/<uuid>/readings.csv?start=&end=        the readings, CSV
 *
 * Both answer whom the record's page answers (the view command's checks: the role may view data
 * streams, and this one).
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import { mayOnRecord, mayOnType } from '../access/policy.ts';
import { ApiError } from '../errors.ts';
import { domainApiError } from '../jsonapi/errors.ts';
import type { EntityRecord, Reference } from '../storage/records.ts';
import {
  latestReading,
  MAX_READINGS_LIMIT,
  queryReadings,
  summariseReadings,
  summaryRangeOf,
  type ReadingsSummary,
} from '../farm/data-streams.ts';
import { streamRef } from '../usecases/readings.ts';
import { inventoryHistory, type InventoryStep } from '../farm/inventory.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { recordPath, type Formats } from './format.ts';
import type { WebReads } from './reads.ts';
import { webState } from './session.ts';

/** Rows of the table a range's readings are reduced to (what a page with no script shows). */
export const TABLE_BUCKETS = 24;
/** A sensor's streams shown on its page, at most (each its own block). */
export const STREAMS_SHOWN = 8;
/** Steps of an inventory's history shown (the newest), per measure and unit. */
export const INVENTORY_STEPS_SHOWN = 500;
const DAY = 86_400;
/** The ranges one picks, in seconds up to the latest reading. A season: about three months. */
export const RANGES = { day: DAY, week: 7 * DAY, season: 91 * DAY } as const;
type RangeName = keyof typeof RANGES | 'custom';

/** The data stream bundle whose readings Tilth keeps (core migration 0004), and the sensor. */
const STREAM = { type: 'data_stream--basic', entityType: 'data_stream', bundle: 'basic' } as const;
const SENSOR = { type: 'asset--sensor', streams: 'data_stream' } as const;

export function readingsPath(uuid: string, start: number, end: number, csv = false): string {
  return `/farm/${STREAM.entityType}/${STREAM.bundle}/${uuid}/readings${csv ? '.csv' : ''}?start=${start}&end=${end}`;
}

export class RecordCharts {
  constructor(
    private readonly ctx: AppContext,
    private readonly reads: WebReads,
    private readonly formats: Formats,
  ) {}

  private get knex() {
    return this.ctx.db.knex;
  }

  /** The blocks a record's page shows below its fields: readings for a stream or sensor, an asset's inventory history. */
  async section(rt: ResourceType, record: EntityRecord, principal: Principal, view: URLSearchParams): Promise<Html> {
    const parts: Html[] = [];
    if (rt.type === STREAM.type) parts.push(await this.readings([record], record, view));
    if (rt.type === SENSOR.type) parts.push(await this.readings(await this.streamsOf(record, principal), record, view));
    if (rt.entityType.entityType === 'asset') parts.push(await this.inventory(record));
    return html`${parts}`;
  }

  /** The basic data streams a sensor references that this caller may view, in its order. */
  private async streamsOf(sensor: EntityRecord, principal: Principal): Promise<EntityRecord[]> {
    const refs = ((sensor.values.get(SENSOR.streams) as Reference[] | undefined) ?? []).filter(Boolean);
    const et = this.ctx.registry.model.entityTypes[STREAM.entityType];
    if (!refs.length || !et || !mayOnType(principal, et, 'view')) return [];
    const records = await this.ctx.services.loader.load(
      this.knex,
      STREAM.entityType,
      refs.map((r) => r.targetId),
      null,
    );
    return records.filter((r) => r.bundle === STREAM.bundle && mayOnRecord(principal, et, 'view', r));
  }

  /** The range the page asks for (`range`, `from`, `to`), ending at the latest reading when not custom. */
  private rangeOf(view: URLSearchParams, latest: number): { name: RangeName; start: number; end: number } {
    const name = (view.get('range') ?? 'day') as RangeName;
    if (name === 'custom') {
      const from = this.formats.parseInputDateTime(view.get('from') ?? '');
      const to = this.formats.parseInputDateTime(view.get('to') ?? '');
      if (from && to && from <= to)
        return { name, start: Math.floor(from.getTime() / 1000), end: Math.floor(to.getTime() / 1000) + DAY - 1 };
    }
    const span = RANGES[name as keyof typeof RANGES] ?? RANGES.day;
    return { name: name in RANGES ? name : 'day', start: latest - span + 1, end: latest };
  }

  /** The readings blocks of these streams: one range form for the page, then each stream's block. */
  private async readings(streams: EntityRecord[], page: EntityRecord, view: URLSearchParams): Promise<Html> {
    if (!streams.length)
      return html`<section class="card" aria-labelledby="readings"><h2 id="readings">${M.charts.readings}</h2><p class="muted">${M.charts.noStreams}</p></section>`;
    const shown = streams.slice(0, STREAMS_SHOWN);
    const latest = await Promise.all(shown.map((s) => latestReading(this.knex, s.id)));
    const newest = Math.max(...latest.map((l) => l?.timestamp ?? -Infinity));
    const range = this.rangeOf(view, Number.isFinite(newest) ? newest : Math.floor(Date.now() / 1000));
    const blocks: Html[] = [];
    for (const [i, stream] of shown.entries()) blocks.push(await this.streamBlock(stream, latest[i] ?? null, range, i));
    const input = (d: number) => this.formats.inputDateTime(new Date(d * 1000).toISOString()).slice(0, 10);
    const option = (name: RangeName) =>
      html`<option value="${name}" ${range.name === name ? 'selected' : ''}>${M.charts.ranges[name]}</option>`;
    const form = html`<form class="filters range" method="get" action="${recordPath({ type: page.rt.type, id: page.uuid })}#readings">
<div><label for="range">${M.charts.range}</label><select id="range" name="range">${(['day', 'week', 'season', 'custom'] as const).map(option)}</select></div>
<div><label for="range-from">${M.charts.from}</label><input type="date" id="range-from" name="from" value="${input(range.start)}"></div>
<div><label for="range-to">${M.charts.to}</label><input type="date" id="range-to" name="to" value="${input(range.end)}"></div>
<div class="actions"><button class="primary" type="submit">${M.charts.show}</button></div></form>`;
    const more =
      streams.length > STREAMS_SHOWN ? html`<p class="muted">${M.charts.moreStreams(STREAMS_SHOWN)}</p>` : '';
    return html`<section class="card" aria-labelledby="readings"><h2 id="readings">${M.charts.readings}</h2><p class="help">${M.charts.rangeHelp(this.formats.dateTime.format(new Date(range.start * 1000)), this.formats.dateTime.format(new Date(range.end * 1000)))}</p>${form}${blocks}${more}</section>`;
  }

  private async streamBlock(
    stream: EntityRecord,
    latest: { timestamp: number; value: number } | null,
    range: { start: number; end: number },
    n: number,
  ): Promise<Html> {
    const name = String(stream.values.get('name') ?? '');
    const id = `stream-${n}`;
    const when = (t: number) => this.formats.dateTime.format(new Date(t * 1000));
    const summary = latest ? await summariseReadings(this.knex, stream.id, { ...range, buckets: TABLE_BUCKETS }) : null;
    const latestText = latest
      ? html`<p>${M.charts.latest}: <strong>${this.formats.number.format(latest.value)}</strong> <time datetime="${new Date(latest.timestamp * 1000).toISOString()}">${when(latest.timestamp)}</time></p>`
      : html`<p class="muted">${M.charts.noReadings}</p>`;
    const table = summary?.buckets.length
      ? this.summaryTable(summary, id, name)
      : latest
        ? html`<p class="muted">${M.charts.noneInRange}</p>`
        : '';
    const chart = latest
      ? html`<div class="chart readings-chart" id="${id}-chart" data-summary="${readingsPath(stream.uuid, range.start, range.end)}" data-label="${name}" role="img" aria-label="${M.charts.chartOf(name)}"></div>`
      : '';
    const csv = latest
      ? html`<p><a href="${readingsPath(stream.uuid, range.start, range.end, true)}" download>${M.charts.csv(name)}</a></p>`
      : '';
    return html`<div class="stream" aria-labelledby="${id}"><h3 id="${id}"><a href="${recordPath({ type: STREAM.type, id: stream.uuid })}">${name}</a></h3>${latestText}${chart}${table}${csv}</div>`;
  }

  /** The range reduced to rows: from, to, min, max, readings. */
  private summaryTable(summary: ReadingsSummary, id: string, name: string): Html {
    const when = (t: number) => this.formats.dateTime.format(new Date(t * 1000));
    const n = (v: number) => this.formats.number.format(v);
    return html`<div class="table-wrap" tabindex="0" role="region" aria-label="${M.charts.tableOf(name)}"><table id="${id}-table"><thead><tr><th scope="col">${M.charts.from}</th><th scope="col">${M.charts.to}</th><th scope="col">${M.charts.min}</th><th scope="col">${M.charts.max}</th><th scope="col">${M.charts.count}</th></tr></thead><tbody>${summary.buckets.map(
      (b) =>
        html`<tr data-first="${b.first}" data-last="${b.last}" data-min="${b.min}" data-max="${b.max}"><td>${when(b.first)}</td><td>${when(b.last)}</td><td>${n(b.min)}</td><td>${n(b.max)}</td><td>${n(b.count)}</td></tr>`,
    )}</tbody></table></div>`;
  }

  /** An asset's inventory history, per measure and unit: each step a log made, newest first; nothing when it has none. */
  private async inventory(asset: EntityRecord): Promise<Html> {
    const histories = await inventoryHistory(
      this.knex,
      this.ctx.registry,
      asset.id,
      Math.floor(Date.now() / 1000),
      INVENTORY_STEPS_SHOWN,
    );
    if (!histories.length) return html``;
    const when = (t: number) => this.formats.dateTime.format(new Date(t * 1000));
    const change = (s: InventoryStep) =>
      s.kind === 'reset' ? M.charts.resetTo(s.amount) : s.kind === 'decrement' ? `−${s.amount}` : `+${s.amount}`;
    const blocks = histories.map((h, i) => {
      const label = M.charts.inventoryOf(h.measure, h.units);
      return html`<div class="stream"><h3 id="inventory-${i}">${label}</h3><div class="chart inventory-chart" data-steps="inventory-${i}-table" data-label="${label}" role="img" aria-label="${M.charts.chartOf(label)}"></div><div class="table-wrap" tabindex="0" role="region" aria-labelledby="inventory-${i}"><table id="inventory-${i}-table"><thead><tr><th scope="col">${M.charts.when}</th><th scope="col">${M.charts.change}</th><th scope="col">${M.charts.after}</th></tr></thead><tbody>${[
        ...h.steps,
      ]
        .reverse()
        .map(
          (s) =>
            html`<tr data-t="${s.timestamp}" data-v="${s.numeric}"><td>${when(s.timestamp)}</td><td>${change(s)}</td><td>${s.value}</td></tr>`,
        )}</tbody></table></div>${h.more ? html`<p class="muted">${M.charts.olderSteps(INVENTORY_STEPS_SHOWN)}</p>` : ''}</div>`;
    });
    return html`<section class="card" aria-labelledby="inventory"><h2 id="inventory">${M.charts.inventory}</h2>${blocks}</section>`;
  }

  /** The summary and CSV endpoints. */
  routes(signedIn: express.RequestHandler): Router {
    const router = express.Router();
    const streamOf = async (req: Request, res: Response) => {
      const rt = this.ctx.registry.get(STREAM.type);
      if (!rt || String(req.params.bundle) !== STREAM.bundle) throw new ApiError(404, M.errors.notFoundText);
      const { record } = await this.reads.record(rt, String(req.params.uuid), webState(res).principal, []);
      return record;
    };
    // Answered as JSON, errors too: the chart script reads them.
    router.get(`/farm/${STREAM.entityType}/:bundle/:uuid/readings`, signedIn, (req, res, next: NextFunction) => {
      (async () => {
        const stream = await streamOf(req, res);
        const params = new URL(req.originalUrl, 'http://x').searchParams;
        const range = summaryRangeOf((name) => params.get(name), Math.floor(Date.now() / 1000));
        res.set('Cache-Control', 'no-store').json(await summariseReadings(this.knex, stream.id, range));
      })().catch((error: unknown) => {
        const e = domainApiError(error) ?? error;
        if (!(e instanceof ApiError) || e.status >= 500) return next(error);
        res.status(e.status).json({ errors: [{ status: String(e.status), detail: e.message, source: e.source }] });
      });
    });
    router.get(`/farm/${STREAM.entityType}/:bundle/:uuid/readings.csv`, signedIn, (req, res, next: NextFunction) => {
      (async () => {
        const stream = await streamOf(req, res);
        const params = new URL(req.originalUrl, 'http://x').searchParams;
        const { start, end } = summaryRangeOf((name) => params.get(name), Math.floor(Date.now() / 1000));
        // The API's answer for this range, as it answers it: newest first, at most its cap.
        const ref = streamRef(stream);
        const rows = await queryReadings(this.knex, [ref], {
          start,
          end,
          limit: MAX_READINGS_LIMIT,
          offset: 0,
          names: null,
        });
        const lines = ['timestamp,value', ...rows.map((r) => `${r.timestamp},${r[ref.name]}`)];
        res
          .status(200)
          .set('Cache-Control', 'no-store')
          .set('Content-Disposition', `attachment; filename="readings-${start}-${end}.csv"`)
          .type('text/csv')
          .send(`${lines.join('\r\n')}\r\n`);
      })().catch(next);
    });
    return router;
  }
}
