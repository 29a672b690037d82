/**
 * The dashboard's tasks (issue 38 screen 2): farmOS's tasks are pending logs, late when dated in
 * the past and upcoming within 14 days, of every log type in one list (one page query across the
 * bundles, page-across-bundles.ts), mine or everyone's. Each can be marked done or moved to
 * another date in place. A move is the update command with the version the dashboard showed as
 * its ifMatch: when the task changed since, nothing is saved and the dashboard says so.
 */
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { BundleUi } from '../model/ui.ts';
import type { Principal } from '../access/principal.ts';
import { ApiError } from '../errors.ts';
import { StaleVersionError } from '../usecases/if-match.ts';
import { versionsOf } from '../storage/change-feed.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { labelOf, recordPath, type Formats, type Resource } from './format.ts';
import type { WebReads } from './reads.ts';
import { formValue, type Form } from './session.ts';
import { ApiQuery } from './api-query.ts';

/** farmOS's tasks: pending logs, by their date, owned by someone (the log entity type's base fields). */
export const TASKS = {
  entityType: 'log',
  status: 'status',
  pending: 'pending',
  done: 'done',
  date: 'timestamp',
  owner: 'owner',
} as const;

const DAY = 86_400;
/** Tasks shown in each of late and upcoming. */
const SHOWN = 20;

export interface Task {
  resource: Resource;
  ui: BundleUi;
  /** Its version when the dashboard was made: a move names it. */
  version: number | null;
}

/** Why a move of a task was not saved: shown above the tasks. */
export interface TaskProblem {
  status: 409 | 422;
  message: string;
}

export class TaskList {
  constructor(
    private readonly ctx: AppContext,
    private readonly reads: WebReads,
    private readonly formats: Formats,
  ) {}

  /** Pending logs dated in [from, to), oldest first, of every log type the caller may list; mine only when asked. */
  async between(
    logs: Array<{ rt: ResourceType; ui: BundleUi }>,
    principal: Principal,
    range: { from: number | null; to: number; mine: boolean },
  ): Promise<Task[]> {
    if (!logs.length) return [];
    const q = new ApiQuery()
      .condition(TASKS.status, '=', TASKS.pending)
      .condition(TASKS.date, '<', String(range.to))
      .set('sort', TASKS.date)
      .set('page[limit]', String(SHOWN));
    if (range.from !== null) q.condition(TASKS.date, '>=', String(range.from));
    if (range.mine && principal.userUuid) q.condition(`${TASKS.owner}.id`, '=', principal.userUuid);
    const types = logs.map((l) => l.rt);
    const result = await this.reads.list(types, this.reads.query(types[0]!, q.toString()), principal);
    const internalId = types[0]!.entityType.internalId;
    const versions = await versionsOf(
      this.reads.services.knex,
      TASKS.entityType,
      result.resources.map((r) => Number(r.attributes?.[internalId])).filter(Number.isSafeInteger),
    );
    return result.resources.map((resource) => ({
      resource,
      ui: logs.find((l) => l.rt.type === resource.type)!.ui,
      version: versions.get(Number(resource.attributes?.[internalId])) ?? null,
    }));
  }

  /** Late (before now) and upcoming (the next 14 days). */
  async dashboard(
    logs: Array<{ rt: ResourceType; ui: BundleUi }>,
    principal: Principal,
    mine: boolean,
    now: number,
  ): Promise<{ late: Task[]; upcoming: Task[] }> {
    return {
      late: await this.between(logs, principal, { from: null, to: now, mine }),
      upcoming: await this.between(logs, principal, { from: now, to: now + 14 * DAY, mine }),
    };
  }

  /** The tasks as a list: each its link, type and date, and (to whom may update logs) mark done and move. */
  render(tasks: Task[], options: { csrfToken: string; returnTo: string; mayUpdate: boolean }): Html {
    if (!tasks.length) return html`<p class="muted">${M.dashboard.noTasks}</p>`;
    const labelField = this.ctx.registry.model.entityTypes[TASKS.entityType]?.labelField;
    const hidden = html`<input type="hidden" name="csrf_token" value="${options.csrfToken}"><input type="hidden" name="return_to" value="${options.returnTo}">`;
    return html`<ul class="plain tasks">${tasks.map(({ resource, ui, version }) => {
      const name = labelOf(resource, labelField);
      const at = String(resource.attributes?.[TASKS.date] ?? '');
      const id = `move-${resource.id}`;
      const actions = options.mayUpdate
        ? html`<div class="task-actions"><form class="inline" method="post" action="${recordPath(resource)}/done">${hidden}<button class="button secondary" type="submit" aria-label="${M.dashboard.markDoneOf(name)}">${M.dashboard.markDone}</button></form><form class="inline move" method="post" action="${recordPath(resource)}/move">${hidden}<input type="hidden" name="version" value="${version === null ? '' : String(version)}"><input type="date" id="${id}" name="date" required value="${at ? this.formats.inputDateTime(at).slice(0, 10) : ''}" aria-label="${M.tasks.newDateOf(name)}"><button class="button secondary" type="submit" aria-label="${M.tasks.moveOf(name)}">${M.tasks.move}</button></form></div>`
        : '';
      return html`<li><a href="${recordPath(resource)}">${name}</a> <span class="badge">${ui.label}</span> <span class="muted">${at ? this.formats.dateTime.format(new Date(at)) : ''}</span>${actions}</li>`;
    })}</ul>`;
  }

  /**
   * POST /farm/log/<bundle>/<uuid>/move (after the CSRF check): the task's date set to the day
   * sent, at the same time of day, as a PATCH of its timestamp at the version the dashboard
   * showed. Null when saved; otherwise what to tell the person (nothing was saved).
   */
  async move(principal: Principal, rt: ResourceType, uuid: string, form: Form): Promise<TaskProblem | null> {
    const version = formValue(form, 'version') ?? '';
    const day = (formValue(form, 'date') ?? '').trim();
    if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return { status: 422, message: M.tasks.badDate };
    try {
      await this.reads.services.commands.update(principal, rt, uuid, {
        ifMatch: /^\d+$/.test(version) ? new Set([Number(version)]) : '*',
        read: (trx, record) => {
          // The same time of day in the farm's time zone, on the day chosen.
          const stored = record.values.get(TASKS.date);
          const time =
            typeof stored === 'number'
              ? this.formats.inputDateTime(new Date(stored * 1000).toISOString()).slice(10)
              : 'T00:00';
          const at = this.formats.parseInputDateTime(`${day}${time}`);
          if (!at) throw new ApiError(422, M.tasks.badDate);
          return this.reads.services.input.read(
            trx,
            rt,
            {
              data: {
                type: rt.type,
                id: record.uuid,
                attributes: { [TASKS.date]: at.toISOString().replace(/\.\d{3}Z$/, '+00:00') },
              },
            },
            record,
          );
        },
        present: async () => null,
      });
      return null;
    } catch (error) {
      if (error instanceof StaleVersionError) return { status: 409, message: M.tasks.moveStale };
      if (error instanceof ApiError && (error.status === 422 || error.status === 400))
        return { status: 422, message: M.tasks.badDate };
      throw error;
    }
  }
}
