/**
 * A record's components edited inline on its form (issue 38 screen 5): the records it owns
 * through an entity_reference_revisions field, as a log owns its quantities. Each row is one
 * component with the fields of its own bundle's form (a quantity's value, unit, measure, label,
 * inventory adjustment and asset, whatever its bundle has), named `<field>.<row>.<subfield>`,
 * with its bundle and, for one that exists, its UUID hidden beside them. "Add" (with the bundle
 * chosen beside it) and "Remove" submit the form, which comes back with the row added or gone
 * and everything typed kept; saving sends every row to ComponentCommands
 * (usecases/components.ts), which saves them and the record in one transaction. Nothing here
 * names a bundle: the rows follow the field's type and its target bundles' UI descriptions.
 */
import type { AppContext } from '../context.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ResourceType } from '../model/registry.ts';
import type { BundleUi, UiField } from '../model/ui.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { FORM_ACTION, fieldId, type FormAction, type FormState } from './widgets.ts';
import type { Resource } from './format.ts';

/** A field whose records are edited inline, row by row. */
export function isComponentField(d: FieldDescriptor | undefined): boolean {
  return d?.kind === 'relationship' && d.type === 'entity_reference_revisions';
}

/** One kind of row: a target bundle, and the fields its rows edit. */
export interface ComponentBundle {
  rt: ResourceType;
  ui: BundleUi;
  fields: Array<{ f: UiField; d: FieldDescriptor }>;
}

/** A row of a component field as the form holds it. */
export interface ComponentRowState {
  /** Its number in the form's input names. */
  index: number;
  bundle: ComponentBundle;
  uuid: string | null;
  /** `<field>.<index>.`: its inputs' names start so. */
  prefix: string;
}

export class ComponentForms {
  constructor(private readonly ctx: AppContext) {}

  /** The bundles a component field's rows may be, with the fields each row edits (its form's, but its sidebar's: a revision message is the record's). */
  bundles(d: FieldDescriptor): ComponentBundle[] {
    return this.ctx.registry.targetsOf(d).flatMap((rt) => {
      const ui = this.ctx.generated.ui.get(rt.type);
      if (!ui) return [];
      const fields = ui.fields
        .filter((f) => f.widget && f.widget !== 'file' && f.section !== 'sidebar')
        .map((f) => ({ f, d: rt.fieldsByName.get(f.name)! }))
        .filter((x) => x.d && !isComponentField(x.d));
      return [{ rt, ui, fields }];
    });
  }

  /** The rows `values` holds for the field, in their order. */
  rows(d: FieldDescriptor, values: Map<string, string[]>): ComponentRowState[] {
    const bundles = this.bundles(d);
    const out: ComponentRowState[] = [];
    const pattern = new RegExp(`^${escapeRegExp(d.name)}\\.(\\d+)\\.bundle$`);
    for (const [key, list] of values) {
      const index = Number(pattern.exec(key)?.[1] ?? NaN);
      if (!Number.isInteger(index)) continue;
      const bundle = bundles.find((b) => b.rt.bundle.bundle === list[0]);
      if (!bundle) continue;
      const prefix = `${d.name}.${index}.`;
      const uuid = values.get(`${prefix}uuid`)?.[0] || null;
      out.push({ index, bundle, uuid, prefix });
    }
    return out.sort((a, b) => a.index - b.index);
  }

  /** The inputs a form sent for the field's rows, kept as typed. */
  typed(d: FieldDescriptor, form: Map<string, string[]>, into: Map<string, string[]>): void {
    for (const [key, list] of form) if (key.startsWith(`${d.name}.`)) into.set(key, list);
  }

  /** Whether a new row was left blank: it makes no record. */
  blank(row: ComponentRowState, values: Map<string, string[]>): boolean {
    return (
      row.uuid === null &&
      row.bundle.fields.every(({ f }) =>
        (values.get(`${row.prefix}${f.name}`) ?? []).every((v) => v.trim() === '' || f.widget === 'checkbox'),
      )
    );
  }

  /**
   * The stored rows of an edit form: each component the record names, with its values as its
   * inputs hold them (`text`, records.ts storedText), and its references as names with their IDs.
   */
  stored(
    d: FieldDescriptor,
    resource: Resource,
    included: Map<string, Resource>,
    values: Map<string, string[]>,
    text: (d: FieldDescriptor, value: unknown) => string[],
    reference: (r: { type: string; id: string }) => string,
  ): void {
    const data = resource.relationships?.[d.name]?.data;
    const refs = Array.isArray(data) ? data : data ? [data] : [];
    const bundles = this.bundles(d);
    refs.forEach((ref, index) => {
      const component = included.get(`${ref.type}:${ref.id}`);
      const bundle = bundles.find((b) => b.rt.type === ref.type);
      if (!bundle) return;
      const prefix = `${d.name}.${index}.`;
      values.set(`${prefix}bundle`, [bundle.rt.bundle.bundle]);
      values.set(`${prefix}uuid`, [ref.id]);
      for (const { f, d: sub } of bundle.fields) {
        if (sub.kind === 'relationship') {
          const r = component?.relationships?.[f.name]?.data;
          values.set(`${prefix}${f.name}`, (Array.isArray(r) ? r : r ? [r] : []).map(reference));
        } else values.set(`${prefix}${f.name}`, text(sub, component?.attributes?.[f.name]));
      }
    });
  }

  /** Include paths an edit form reads its rows' references by (`quantity.units`). */
  includes(d: FieldDescriptor): string[] {
    const names = new Set(
      this.bundles(d).flatMap((b) => b.fields.filter((x) => x.d.kind === 'relationship').map((x) => x.f.name)),
    );
    return [d.name, ...[...names].map((n) => `${d.name}.${n}`)];
  }

  /** A row added (of the bundle chosen beside Add) or removed; the rows after a removed one move up, keeping what was typed. */
  apply(d: FieldDescriptor, action: FormAction, values: Map<string, string[]>): void {
    const rows = this.rows(d, values);
    if (action.kind === 'add') {
      const chosen = values.get(`${d.name}.add_bundle`)?.[0];
      const bundle = this.bundles(d).find((b) => b.rt.bundle.bundle === chosen) ?? this.bundles(d)[0];
      if (!bundle) return;
      const index = rows.length ? Math.max(...rows.map((r) => r.index)) + 1 : 0;
      values.set(`${d.name}.${index}.bundle`, [bundle.rt.bundle.bundle]);
      return;
    }
    if (action.kind !== 'remove') return;
    const kept = rows.filter((r) => r.index !== action.index);
    const moved = new Map<string, string[]>();
    kept.forEach((row, i) => {
      for (const [key, list] of values)
        if (key.startsWith(row.prefix)) moved.set(`${d.name}.${i}.${key.slice(row.prefix.length)}`, list);
    });
    for (const key of [...values.keys()])
      if (key.startsWith(`${d.name}.`) && /^\d+\./.test(key.slice(d.name.length + 1))) values.delete(key);
    for (const [key, list] of moved) values.set(key, list);
  }

  /** The field's rows, each a group of its bundle's controls with Remove, then Add with the bundle to add. */
  render(
    d: FieldDescriptor,
    f: UiField,
    state: FormState,
    control: (sub: FieldDescriptor, uf: UiField, name: string) => Html,
  ): Html {
    const rows = this.rows(d, state.values);
    const bundles = this.bundles(d);
    const id = fieldId(d.name);
    const groups = rows.map(
      (row, n) =>
        html`<fieldset class="component"><legend>${M.widgets.component(f.label, n + 1, row.bundle.ui.label)}</legend>
<input type="hidden" name="${row.prefix}bundle" value="${row.bundle.rt.bundle.bundle}">${row.uuid ? html`<input type="hidden" name="${row.prefix}uuid" value="${row.uuid}">` : ''}
${row.bundle.fields.map(({ f: uf, d: sub }) => control(sub, uf, `${row.prefix}${uf.name}`))}
${(state.errors.get(`${row.prefix}*`) ?? []).map((e) => html`<p class="field-error">${e}</p>`)}
<div class="actions"><input class="button secondary" type="submit" name="${FORM_ACTION}remove:${d.name}:${row.index}" value="${M.widgets.removeComponent(f.label, n + 1)}" formnovalidate></div></fieldset>`,
    );
    const chooser =
      bundles.length > 1
        ? html`<label for="${id}-add">${M.widgets.componentKind(f.label)}</label><select id="${id}-add" name="${d.name}.add_bundle">${bundles.map(
            (b) =>
              html`<option value="${b.rt.bundle.bundle}" ${state.values.get(`${d.name}.add_bundle`)?.[0] === b.rt.bundle.bundle ? 'selected' : ''}>${b.ui.label}</option>`,
          )}</select>`
        : bundles.length
          ? html`<input type="hidden" name="${d.name}.add_bundle" value="${bundles[0]!.rt.bundle.bundle}">`
          : '';
    return html`<fieldset class="components" id="${id}"><legend>${f.label}</legend>${f.description ? html`<p class="help">${f.description}</p>` : ''}${rows.length ? '' : html`<p class="muted">${M.widgets.noComponents}</p>`}${groups}<div class="control">${chooser}<div class="actions"><input class="button secondary" type="submit" name="${FORM_ACTION}add:${d.name}" value="${M.widgets.addComponent(f.label)}" formnovalidate></div></div></fieldset>`;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
