/**
 * A form's controls, one per field, chosen by the field's generated widget (generated/ui/,
 * model/ui.ts): text, numbers, choices, dates, references with the records they may point at
 * (reference-options.ts), and rows for a field of several values. The pages have no script, so
 * a form changes shape by submitting itself: "Add another", "Remove" and "Find" are submit
 * inputs whose names start with FORM_ACTION, which re-render the form with everything typed kept
 * (records.ts save) instead of saving it. They are inputs, not buttons, and the form's first
 * submit control is a hidden Save, so that Enter in a text input saves, and the form's Save is
 * its one visible `button`.
 */
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { UiField } from '../model/ui.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import type { ReferenceOptions } from './reference-options.ts';
import type { Form } from './session.ts';

/** What a form shows: the values typed (or stored), and the messages by field. */
export interface FormState {
  /** By input name: a field's name, or `<field>.<row>.<subfield>` for a component row's (quantities-form.ts). */
  values: Map<string, string[]>;
  errors: Map<string, string[]>;
  general: string[];
  version: string;
  /** An edit's values as stored when the form was opened (sent back hidden), to tell which fields the person changed. */
  originals?: Map<string, string[]>;
}

/** How the names of the submit inputs that change the form rather than save it start; the rest says what to do (`_action:add:asset`). */
export const FORM_ACTION = '_action:';

/** A button that changes the form: add a row, remove one, or find the records a reference may point at. */
export type FormAction =
  { kind: 'add'; name: string } | { kind: 'remove'; name: string; index: number } | { kind: 'find'; name: string };

/** The form's action, or null when it is to be saved (Save, or Enter in a text input). */
export function formAction(form: Form): FormAction | null {
  const pressed = [...form.keys()].find((key) => key.startsWith(FORM_ACTION));
  if (!pressed) return null;
  const [kind, ...rest] = pressed.slice(FORM_ACTION.length).split(':');
  if (kind === 'add' && rest.length === 1) return { kind, name: rest[0]! };
  if (kind === 'find' && rest.length === 1) return { kind, name: rest[0]! };
  if (kind === 'remove' && rest.length === 2 && /^\d+$/.test(rest[1]!))
    return { kind, name: rest[0]!, index: Number(rest[1]) };
  return null;
}

/** Widgets that hold one value per input, so that a field of several values gets a row of its own per value. */
const ROW_WIDGETS = new Set([
  'text',
  'textarea',
  'email',
  'number',
  'decimal',
  'fraction',
  'reference',
  'id_tag',
  'datetime',
  'date',
  'wkt',
]);

/** Whether a field of this widget is edited in rows, one value each (with Add another and Remove). */
export function inRows(d: FieldDescriptor, f: UiField): boolean {
  return d.multiple && f.widget !== null && ROW_WIDGETS.has(f.widget);
}

/**
 * The values a field's inputs sent, one per row: blank rows left out, surrounding space trimmed
 * but for long text (its own lines and spaces are its content).
 */
export function sentValues(d: FieldDescriptor, f: UiField, sent: string[]): string[] {
  if (f.widget === 'checkboxes') return sent;
  const long = f.widget === 'textarea' || f.widget === 'wkt';
  const list = inRows(d, f) || !d.multiple ? sent : sent.flatMap((v) => v.split('\n'));
  return (d.multiple ? list : list.slice(0, 1)).map((v) => (long ? v : v.trim())).filter((v) => v.trim() !== '');
}

/** How one control is drawn: its input's name (a component row's is prefixed) and what a reference may point at. */
export interface ControlOptions {
  name: string;
  references?: ReferenceOptions;
  /** A reference to terms: a name no term has yet makes a new one (records.ts resolveReference). */
  createsTerms?: boolean;
  /** A WKT field's map (map.ts widgetSpec, as JSON): the textarea the map's script enhances. */
  geometry?: string;
}

/** One field's label, input (or rows of inputs), help and messages. */
export function control(d: FieldDescriptor, f: UiField, state: FormState, options: ControlOptions): Html {
  const name = options.name;
  const id = fieldId(name);
  const values = state.values.get(name) ?? [];
  const errors = state.errors.get(name) ?? [];
  const hasHelp =
    Boolean(f.description) || d.kind === 'relationship' || f.widget === 'wkt' || f.widget === 'id_tag' || inRows(d, f);
  const describedBy = [hasHelp ? `${id}-help` : '', errors.length ? `${id}-error` : ''].filter(Boolean).join(' ');
  const aria = html`${describedBy ? html` aria-describedby="${describedBy}"` : ''}${errors.length ? html` aria-invalid="true"` : ''}${f.required ? html` aria-required="true"` : ''}`;
  const required = f.required ? html` <span class="required">(${M.form.required})</span>` : '';
  const label = html`<label for="${id}">${f.label}${required}</label>`;
  const placeholder = f.placeholder ? html` placeholder="${f.placeholder}"` : '';
  const list = options.references ? html` list="${id}-options"` : '';
  /** One input of the field's widget, holding `value`, with this id. */
  const one = (value: string, inputId: string, extra: Html | string = ''): Html => {
    switch (f.widget) {
      case 'textarea':
        return html`<textarea id="${inputId}" name="${name}"${placeholder}${aria}${extra}>${value}</textarea>`;
      case 'wkt':
        // The field itself, and the accessible way in; the map's script puts a map to draw on above it.
        return html`<textarea id="${inputId}" name="${name}"${placeholder}${aria}${extra}${options.geometry ? html` data-geometry-widget="${options.geometry}"` : ''}>${value}</textarea>`;
      case 'datetime':
        // A time with seconds keeps them (format.ts inputDateTime): the default step of 60 s would refuse it.
        return html`<input type="datetime-local" id="${inputId}" name="${name}" value="${value}"${value.length > 16 ? html` step="1"` : ''}${aria}${extra}>`;
      case 'date':
        return html`<input type="date" id="${inputId}" name="${name}" value="${value.slice(0, 10)}"${aria}${extra}>`;
      case 'number':
        return html`<input type="number" step="1" id="${inputId}" name="${name}" value="${value}"${placeholder}${aria}${extra}>`;
      case 'decimal':
      case 'fraction':
        return html`<input type="text" inputmode="decimal" id="${inputId}" name="${name}" value="${value}"${placeholder}${aria}${extra}>`;
      case 'email':
        return html`<input type="email" id="${inputId}" name="${name}" value="${value}"${placeholder}${aria}${extra}>`;
      default:
        // A URI's text input brings up a phone's URL keyboard (inputmode), without the browser's
        // own check of type=url, which refuses URIs a term may hold (urn:, doi:).
        return html`<input type="text"${d.type === 'uri' ? html` inputmode="url"` : ''} id="${inputId}" name="${name}" value="${value}"${d.maxLength && f.widget === 'text' ? html` maxlength="${d.maxLength}"` : ''}${placeholder}${list}${aria}${extra}>`;
    }
  };
  let input: Html;
  if (inRows(d, f)) {
    // One row per value, and at least one; each row its own input and Remove button.
    const rows = values.length ? values : [''];
    input = html`<fieldset class="rows"><legend>${f.label}${required}</legend>${rows.map(
      (value, i) =>
        html`<div class="row"><label class="visually-hidden" for="${i === 0 ? id : `${id}-row-${i}`}">${M.widgets.row(f.label, i + 1)}</label>${one(value, i === 0 ? id : `${id}-row-${i}`)}${
          rows.length > 1
            ? html`<input class="button secondary" type="submit" name="${FORM_ACTION}remove:${name}:${i}" value="${M.widgets.remove}" formnovalidate aria-label="${M.widgets.removeRow(f.label, i + 1)}">`
            : ''
        }</div>`,
    )}<div class="actions"><input class="button secondary" type="submit" name="${FORM_ACTION}add:${name}" value="${M.widgets.addAnother}" formnovalidate aria-label="${M.widgets.addAnotherOf(f.label)}">${findButton(name, f, options)}</div></fieldset>`;
  } else {
    switch (f.widget) {
      case 'checkbox':
        input = html`<label class="choice" for="${id}"><input type="checkbox" id="${id}" name="${name}" value="1" ${values.includes('1') || values.includes('true') ? 'checked' : ''}${aria}> ${f.label}</label>`;
        break;
      case 'select': {
        // A reference's select offers the records it may point at (reference-options.ts), as the input holds them.
        const choices =
          d.kind === 'relationship'
            ? (options.references?.options ?? []).map((o) => ({ value: o.value, label: o.label }))
            : (d.allowedValues ?? []);
        input = html`${label}<select id="${id}" name="${name}"${aria}>${f.required ? '' : html`<option value=""></option>`}${choices.map((a) => html`<option value="${a.value}" ${values.includes(a.value) ? 'selected' : ''}>${a.label}</option>`)}</select>`;
        break;
      }
      case 'radios':
      case 'checkboxes': {
        const type = f.widget === 'radios' ? 'radio' : 'checkbox';
        const choices =
          d.type === 'boolean'
            ? [
                { value: '1', label: M.values.yes },
                { value: '0', label: M.values.no },
              ]
            : (d.allowedValues ?? []);
        // A group of radios is a radiogroup (which may be required); a group of checkboxes is a
        // plain group, which ARIA gives no aria-required: its legend says so.
        const groupAria =
          type === 'radio'
            ? html` role="radiogroup"${aria}`
            : html`${describedBy ? html` aria-describedby="${describedBy}"` : ''}${errors.length ? html` aria-invalid="true"` : ''}`;
        input = html`<fieldset id="${id}"${groupAria}><legend>${f.label}${required}</legend>${choices.map(
          (a, i) =>
            html`<label class="choice" for="${id}-${i}"><input type="${type}" id="${id}-${i}" name="${name}" value="${a.value}" ${values.includes(a.value) ? 'checked' : ''}> ${a.label}</label>`,
        )}</fieldset>`;
        break;
      }
      default:
        input = html`${label}${one(values[0] ?? '', id)}${findButton(name, f, options)}`;
    }
  }
  const datalist =
    options.references && f.widget !== 'select'
      ? html`<datalist id="${id}-options">${options.references.options.map((o) => html`<option value="${o.value}">${o.label}</option>`)}</datalist>`
      : '';
  const help = [
    f.description ?? '',
    d.kind === 'relationship' ? M.widgets.referenceHelp : '',
    options.createsTerms ? M.widgets.createsTerms : '',
    options.references?.more ? M.widgets.findHelp : '',
    f.widget === 'wkt' ? M.form.wktHelp : '',
    f.widget === 'id_tag' ? M.widgets.idTagHelp : '',
  ]
    .filter(Boolean)
    .join(' ');
  return html`<div class="control">${input}${datalist}${help ? html`<p class="help" id="${id}-help">${help}</p>` : ''}${errors.length ? html`<p class="field-error" id="${id}-error">${errors.join(' ')}</p>` : ''}</div>`;
}

/** "Find" beside a reference whose records are more than its list offers: the form again, offering those named like what was typed. */
function findButton(name: string, f: UiField, options: ControlOptions): Html | string {
  return options.references?.more
    ? html`<input class="button secondary" type="submit" name="${FORM_ACTION}find:${name}" value="${M.widgets.find}" formnovalidate aria-label="${M.widgets.findOf(f.label)}">`
    : '';
}

/** The id of a field's input: its name, with the characters an id should not hold replaced. */
export function fieldId(name: string): string {
  return `field-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`;
}

/**
 * The form's values after a button that changes it (FormAction): a row added to or removed from
 * the field it names. Component rows (quantities-form.ts) are changed there.
 */
export function applyRowAction(values: Map<string, string[]>, action: FormAction): void {
  if (action.kind === 'add') {
    const list = values.get(action.name) ?? [];
    values.set(action.name, [...(list.length ? list : ['']), '']);
  }
  if (action.kind === 'remove') {
    const list = [...(values.get(action.name) ?? [])];
    list.splice(action.index, 1);
    values.set(action.name, list);
  }
}
