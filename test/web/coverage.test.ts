// Generated coverage (issue 38, Tests): every bundle generated/ has, a site's bundle made here and
// an optional module's switched on here (ledger) included, gets working screens with no code of
// its own. For every asset, log and quantity bundle and every vocabulary: the create form
// renders; a record with every field of the form filled (a log's quantity row too) is created
// through it and read back through the API equal; its list, filtered by each offered filter
// that its values answer, finds it; its page shows each value; and a file or image field takes
// an upload from the edit page. One server; the forms are filled and sent over HTTP as a browser
// sends them (the session cookie, the CSRF token from the form's HTML, the form's own field
// names), and every create form is also opened in one Chromium, checked for its heading and for
// no script error.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { generate } from '../../generator/index.ts';
import { launchChromium } from '../support/browser.ts';
import { scratchProject } from '../support/project.ts';
import { startTestServerAsAdmin, ADMIN } from '../support/server.ts';
import { request } from '../support/http.ts';
import type { FieldDescriptor } from '../../runtime/model/descriptor.ts';
import type { ResourceType } from '../../runtime/model/registry.ts';
import type { UiField } from '../../runtime/model/ui.ts';

/** A site bundle with a field of each simple type and a reference to a vocabulary. */
const ORCHARD_ROW = `entity_type: asset
bundle: orchard_row
label: Orchard row
fields:
  trees:
    type: integer
    label: Trees
    ui: { filter: true }
  spacing:
    type: decimal
    label: Spacing
    precision: 8
    scale: 2
  irrigated:
    type: boolean
    label: Irrigated
  rootstock:
    type: list_string
    label: Rootstock
    allowed_values:
      - { value: m9, label: M9 }
      - { value: m26, label: M26 }
  varieties:
    type: entity_reference
    label: Varieties
    target_type: taxonomy_term
    target_bundles: [plant_type]
    multiple: true
  planted:
    type: timestamp
    label: Planted
`;

const COVERED = ['taxonomy_term', 'organization', 'asset', 'quantity', 'log'];
/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const DATE_TIME = '2024-05-02T08:30';

const p = scratchProject({ withGenerated: true });
after(() => p.remove());

/** A person's browser over HTTP: the session cookie kept, forms sent as a browser sends them. */
class Visitor {
  private readonly cookies = new Map<string, string>();
  constructor(private readonly base: string) {}

  async go(
    path: string,
    body?: URLSearchParams | FormData,
  ): Promise<{ status: number; location: string; text: string }> {
    const res = await fetch(`${this.base}${path}`, {
      method: body ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        Cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(body instanceof URLSearchParams ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
      },
      body,
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    return { status: res.status, location: res.headers.get('location') ?? '', text: await res.text() };
  }
}

const unescape = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
const escapeHtml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
const csrfOf = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] ?? '';
const idAttr = (name: string) => `field-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`;

/** The records a reference input offers (its datalist or select), as [value, label]. */
function offered(html: string, name: string): Array<[string, string]> {
  const list = new RegExp(`<datalist id="${idAttr(name)}-options">(.*?)</datalist>`, 's').exec(html)?.[1] ?? '';
  return [...list.matchAll(/<option value="([^"]*)">([^<]*)<\/option>/g)].map((m) => [
    unescape(m[1]!),
    unescape(m[2]!),
  ]);
}

/** What was typed into one input, what the API must hold, what the page must show, and how the list finds it. */
interface Filled {
  name: string;
  /** How many records its input offered (a reference's). */
  offered?: number;
  field: FieldDescriptor;
  sent: string[];
  /** For a reference: the record's UUID, or the new term's name. */
  ref?: { id?: string; name: string };
  shows: string[];
  /** The list's URL parameters that find it by this field. */
  filter?: Record<string, string>;
}

function fill(
  rt: ResourceType,
  d: FieldDescriptor,
  f: UiField,
  name: string,
  html: string,
  tag: string,
  registryTargets: ResourceType[],
  choice = 0,
): Filled | null {
  const text = `${tag} ${f.name.replace(/_/g, ' ')}`;
  const one = (sent: string, shows: string[], filter?: Record<string, string>): Filled => ({
    name,
    field: d,
    sent: [sent],
    shows,
    filter,
  });
  switch (f.widget) {
    case 'text':
    case 'textarea':
      if (d.type === 'geofield') return one('POINT (-72.5 42.3)', ['POINT (-72.5 42.3)']);
      if (d.type === 'uri') {
        // A term's external URI must be one (a scheme, no spaces).
        const uri = `https://example.org/${tag.toLowerCase().replace(/\W+/g, '-')}/${f.name}`;
        return one(uri, [uri], { [f.name]: uri });
      }
      return one(text, [text], { [f.name]: text });
    case 'email':
      return one(`${tag.toLowerCase().replace(/\W/g, '')}@example.com`, []);
    case 'number':
      return one('7', ['7'], { [f.name]: '7' });
    case 'decimal':
    case 'fraction':
      return one('3.25', ['3.25'], { [f.name]: '3.25' });
    case 'select':
    case 'radios': {
      if (d.kind === 'relationship') break;
      // The last allowed value: an asset's status archived, so that its archived time is kept (the farm's rule clears it on an active one).
      // Among those /api (the farmOS 2.x shape) reads back as stored: a log's abandoned reads as done there.
      const folded = d.shapes?.farmos2?.showValues ?? {};
      const choice =
        d.type === 'boolean'
          ? { value: '1', label: 'Yes' }
          : d.allowedValues!.filter((v) => !(v.value in folded)).at(-1)!;
      return one(choice.value, [choice.label], { [f.name]: choice.value });
    }
    case 'checkboxes': {
      const choice = d.allowedValues![0]!;
      return one(choice.value, [choice.label], { [f.name]: choice.value });
    }
    case 'checkbox':
      return one('1', [], { [f.name]: '1' });
    case 'datetime':
      return one(DATE_TIME, [], {
        [`${f.name}_from`]: DATE_TIME.slice(0, 10),
        [`${f.name}_to`]: DATE_TIME.slice(0, 10),
      });
    case 'date':
      return one(DATE_TIME.slice(0, 10), [], {
        [`${f.name}_from`]: DATE_TIME.slice(0, 10),
        [`${f.name}_to`]: DATE_TIME.slice(0, 10),
      });
    case 'wkt':
      return one('POINT (-72.5 42.3)', ['POINT (-72.5 42.3)']);
    case 'id_tag':
      return one('other: T-1', ['T-1'], { [f.name]: 'T-1' });
  }
  if (f.widget === 'reference' || (f.widget === 'select' && d.kind === 'relationship')) {
    const first = offered(html, name)[choice];
    if (first) {
      const id = /\[([0-9a-f-]{36})\]$/.exec(first[0])?.[1];
      return {
        name,
        field: d,
        offered: offered(html, name).length,
        sent: [first[0]],
        ref: { id, name: first[1] },
        shows: [first[1]],
        filter: { [f.name]: first[1] },
      };
    }
    // No record to point at yet: a vocabulary's term is made by its name.
    if (registryTargets.some((t) => t.entityType.access === 'taxonomy')) {
      const term = `${tag} ${f.name} term`;
      return { name, field: d, sent: [term], ref: { name: term }, shows: [term], filter: { [f.name]: term } };
    }
    assert.ok(!f.required, `${rt.type}.${f.name} is required but offers no record to point at`);
  }
  return null;
}

/** Whether the API's value for a field holds what was typed. */
function holds(d: FieldDescriptor, filled: Filled, resource: any, included: Map<string, any>): boolean {
  if (d.kind === 'relationship') {
    const data = resource.relationships?.[d.name]?.data;
    const refs: any[] = Array.isArray(data) ? data : data ? [data] : [];
    return refs.some((r) =>
      filled.ref!.id
        ? r.id === filled.ref!.id
        : included.get(`${r.type}:${r.id}`)?.attributes?.name === filled.ref!.name,
    );
  }
  const raw = resource.attributes?.[d.name];
  const values: any[] = d.multiple ? raw : [raw];
  const sent = filled.sent[0]!;
  return values.some((v) => {
    switch (d.type) {
      case 'text_long':
        return v?.value === sent;
      case 'integer':
        return v === Number(sent);
      case 'decimal':
        return Number(v) === Number(sent);
      case 'fraction':
        return Number(v?.decimal) === Number(sent);
      case 'boolean':
        return v === (sent === '1');
      case 'timestamp':
        return Date.parse(v) === new Date(sent.length === 10 ? `${sent}T00:00` : sent).getTime();
      case 'geofield':
        return /POINT \(-72\.5 42\.3\)/.test(typeof v === 'string' ? v : v?.value);
      case 'id_tag':
        return v?.id === 'T-1' && v?.type === 'other';
      default:
        return v === sent;
    }
  });
}

test(
  'every bundle, a site bundle and an optional module’s included, has a form, a list and a page that work with no code of its own',
  { timeout: 600_000 },
  async (t) => {
    const site = join(p.root, 'site');
    p.write('site/definitions/asset/orchard_row.yaml', ORCHARD_ROW);
    await generate({ root: p.root, siteDir: site });
    const { server, token } = await startTestServerAsAdmin({
      generatedDir: join(p.root, 'generated'),
      env: { TILTH_SITE_DIR: site, TILTH_MODULES: 'ledger' },
    });
    const browser = await launchChromium();
    try {
      const { registry, generated } = server.ctx;
      const bundles = [...generated.ui.values()]
        .filter((ui) => COVERED.includes(ui.entityType) && registry.get(ui.type))
        .sort((a, b) => COVERED.indexOf(a.entityType) - COVERED.indexOf(b.entityType) || a.type.localeCompare(b.type));
      const types = bundles.map((b) => b.type);
      t.diagnostic(`${bundles.length} bundles: ${types.join(' ')}`);
      for (const expected of [
        'asset--orchard_row',
        'log--sale',
        'log--purchase',
        'quantity--standard',
        'taxonomy_term--unit',
        'taxonomy_term--equipment_type',
        'organization--farm',
      ])
        assert.ok(types.includes(expected), `${expected} is covered`);

      const visitor = new Visitor(server.url);
      const signIn = await visitor.go('/farm/sign-in');
      const signedIn = await visitor.go(
        '/farm/sign-in',
        new URLSearchParams({ username: ADMIN.name, password: ADMIN.password, csrf_token: csrfOf(signIn.text) }),
      );
      assert.equal(signedIn.status, 303);

      // Chromium: every create form opens, with its heading, and nothing on it errs.
      const context = await browser.newContext();
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      await page.goto(`${server.url}/farm/sign-in`);
      await page.fill('#username', ADMIN.name);
      await page.fill('#password', ADMIN.password);
      await page.click('button[type=submit]');
      await page.waitForURL(`${server.url}/farm`);
      for (const ui of bundles) {
        await page.goto(`${server.url}/farm/${ui.entityType}/${ui.bundle}/new`);
        assert.equal(await page.textContent('h1'), `New ${ui.label}`, ui.type);
      }
      assert.deepEqual(errors, []);

      let n = 0;
      for (const ui of bundles) {
        const rt = registry.get(ui.type)!;
        const path = `/farm/${ui.entityType}/${ui.bundle}`;
        const tag = `Cov${++n}`;
        let form = await visitor.go(`${path}/new`);
        assert.equal(form.status, 200, `${ui.type}: the form renders`);
        const edited = ui.fields.filter((f) => f.widget && f.widget !== 'file');
        for (const f of edited)
          assert.ok(
            form.text.includes(`name="${f.name}"`) ||
              form.text.includes(`name="${f.name}.add_bundle"`) ||
              form.text.includes(`value="add:${f.name}"`),
            `${ui.type}: the form has ${f.name}`,
          );

        // A component field (a log's quantities): one row added with the form's own button, then filled.
        const components = edited.filter((f) => rt.fieldsByName.get(f.name)?.type === 'entity_reference_revisions');
        if (components.length) {
          const body = new URLSearchParams({ csrf_token: csrfOf(form.text) });
          for (const f of components) body.append(`_action:add:${f.name}`, 'Add');
          form = await visitor.go(`${path}/new`, body);
          assert.equal(form.status, 200, `${ui.type}: a quantity row added`);
        }

        // Every field filled. A farm rule may refuse a combination (a birth's children must be
        // animals): a reference refused takes the next record its input offers, and a field with
        // nothing else to offer is left out, named in the test's diagnostics, and the form is sent again.
        const choices = new Map<string, number>();
        const leftOut = new Set<string>();
        let filled: Filled[] = [];
        let rowFilled: Array<{ component: UiField; bundle: string; values: Filled[] }> = [];
        let saved: { status: number; location: string; text: string } | undefined;
        for (let attempt = 0; ; attempt++) {
          filled = [];
          rowFilled = [];
          for (const f of edited) {
            const d = rt.fieldsByName.get(f.name)!;
            if (d.type === 'entity_reference_revisions') {
              const bundle = /name="([^"]+)\.0\.bundle" value="([^"]+)"/.exec(form.text);
              assert.ok(bundle, `${ui.type}: the ${f.name} row`);
              const sub = generated.ui.get(registry.typeName(d.target!.entityType, bundle[2]!))!;
              const subRt = registry.get(sub.type)!;
              const values: Filled[] = [];
              for (const sf of sub.fields.filter((x) => x.widget && x.widget !== 'file' && x.section !== 'sidebar')) {
                const sd = subRt.fieldsByName.get(sf.name)!;
                const name = `${f.name}.0.${sf.name}`;
                if (leftOut.has(name)) continue;
                const v = fill(subRt, sd, sf, name, form.text, `${tag}q`, registry.targetsOf(sd), choices.get(name));
                if (v) values.push(v);
              }
              rowFilled.push({ component: f, bundle: bundle[2]!, values });
              continue;
            }
            if (leftOut.has(f.name)) continue;
            const v = fill(rt, d, f, f.name, form.text, tag, registry.targetsOf(d), choices.get(f.name));
            if (v) filled.push(v);
          }
          const body = new URLSearchParams({ csrf_token: csrfOf(form.text) });
          for (const v of filled) for (const s of v.sent) body.append(v.name, s);
          for (const row of rowFilled) {
            body.append(`${row.component.name}.0.bundle`, row.bundle);
            for (const v of row.values) for (const s of v.sent) body.append(v.name, s);
          }
          saved = await visitor.go(`${path}/new`, body);
          if (saved.status !== 422 || attempt === 12) break;
          const refused = new Set([...saved.text.matchAll(/id="(field-[^"]+)-error"/g)].map((m) => m[1]!));
          let changed = false;
          for (const v of [...filled, ...rowFilled.flatMap((r) => r.values)]) {
            if (!refused.has(idAttr(v.name))) continue;
            const next = (choices.get(v.name) ?? 0) + 1;
            if (v.offered !== undefined && next < v.offered) choices.set(v.name, next);
            else {
              assert.ok(
                !v.field.required,
                `${ui.type}: required ${v.name} refused: ${saved.text.match(/class="field-error"[^>]*>(.*?)<\/p>/gs)?.join(' ')}`,
              );
              leftOut.add(v.name);
              t.diagnostic(`${ui.type}: ${v.name} left out, refused with the others filled`);
            }
            changed = true;
          }
          if (!changed) break;
        }
        assert.equal(
          saved!.status,
          303,
          `${ui.type}: created through the form: ${saved!.text.match(/class="(?:field-)?error"[^>]*>(.*?)<\/(?:p|div)>/gs)?.join(' ') ?? saved!.text.slice(0, 500)}`,
        );
        const uuid = /\/([0-9a-f-]{36})\?saved=created$/.exec(saved!.location)?.[1];
        assert.ok(uuid, saved!.location);

        // Read back through the API: every value as entered.
        const includes = [
          ...new Set(
            [...filled, ...rowFilled.map((r) => ({ field: rt.fieldsByName.get(r.component.name)! }))]
              .filter((v) => v.field.kind === 'relationship')
              .map((v) => v.field.name),
          ),
        ];
        const api = await request(
          `${server.url}/api/${ui.entityType}/${ui.bundle}/${uuid}${includes.length ? `?include=${includes.join(',')}` : ''}`,
          { token },
        );
        assert.equal(api.status, 200);
        const included = new Map<string, any>((api.body.included ?? []).map((r: any) => [`${r.type}:${r.id}`, r]));
        for (const v of filled)
          assert.ok(
            holds(v.field, v, api.body.data, included),
            `${ui.type}.${v.field.name}: ${JSON.stringify(v.sent)} read back as ${JSON.stringify(api.body.data.attributes?.[v.field.name] ?? api.body.data.relationships?.[v.field.name])}`,
          );
        for (const row of rowFilled) {
          const [ref] = api.body.data.relationships[row.component.name].data;
          assert.ok(ref, `${ui.type}: its ${row.component.name} row was saved`);
          const [qe, qb] = ref.type.split('--');
          const q = await request(
            `${server.url}/api/${qe}/${qb}/${ref.id}?include=${row.values
              .filter((v) => v.field.kind === 'relationship')
              .map((v) => v.field.name)
              .join(',')}`,
            { token },
          );
          const qIncluded = new Map<string, any>((q.body.included ?? []).map((r: any) => [`${r.type}:${r.id}`, r]));
          for (const v of row.values)
            assert.ok(holds(v.field, v, q.body.data, qIncluded), `${ui.type} ${row.component.name}.${v.field.name}`);
        }

        // Its page shows each value.
        const shown = await visitor.go(`${path}/${uuid}`);
        assert.equal(shown.status, 200);
        for (const v of filled)
          for (const s of v.shows)
            assert.ok(shown.text.includes(escapeHtml(s)), `${ui.type}: its page shows ${v.field.name} ${s}`);

        // Its list finds it by each offered filter its values answer.
        const list = await visitor.go(path);
        for (const filter of ui.list.filters) {
          const v = filled.find((x) => x.field.name === filter.field);
          if (!v?.filter) continue;
          const offeredHere =
            list.text.includes(`name="${filter.field}"`) || list.text.includes(`name="${filter.field}_from"`);
          assert.ok(offeredHere, `${ui.type}: the list offers its ${filter.field} filter`);
          const found = await visitor.go(`${path}?${new URLSearchParams(v.filter)}`);
          assert.equal(found.status, 200);
          assert.ok(
            found.text.includes(`${path}/${uuid}`),
            `${ui.type}: the list filtered by ${filter.field} (${JSON.stringify(v.filter)}) finds it`,
          );
        }

        // A file or image field takes an upload from the edit page, and the page shows it.
        for (const f of ui.fields.filter((x) => x.widget === 'file')) {
          const d = rt.fieldsByName.get(f.name)!;
          const edit = await visitor.go(`${path}/${uuid}/edit`);
          const upload = new FormData();
          upload.append('csrf_token', csrfOf(edit.text));
          const name = d.type === 'image' ? `${tag}.png` : `${tag}.txt`;
          upload.append('file', new Blob([d.type === 'image' ? PNG : Buffer.from('notes')]), name);
          const sent = await visitor.go(`${path}/${uuid}/files/${f.name}`, upload);
          assert.equal(sent.status, 303, `${ui.type}.${f.name}: uploaded: ${sent.text.slice(0, 300)}`);
          const withFile: any = await request(
            `${server.url}/api/${ui.entityType}/${ui.bundle}/${uuid}?include=${f.name}`,
            { token },
          );
          assert.deepEqual(
            withFile.body.included?.map((r: any) => r.attributes.filename),
            [name],
            `${ui.type}.${f.name}`,
          );
          assert.ok((await visitor.go(`${path}/${uuid}`)).text.includes(name), `${ui.type}: its page shows ${name}`);
        }
      }
    } finally {
      await browser.close();
      await server.close();
    }
  },
);
