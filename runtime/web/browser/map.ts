/**
 * The farm map in the browser (issue 42), over OpenLayers: enhances what the server rendered and
 * changes nothing a page needs without script.
 *
 * - `[data-map]` (the dashboard's map and a record's small map): the farm's features for the
 *   visible area, fetched from the features endpoint (web/map.ts) at every move, in layers by
 *   type with the legend's colours, switched by the legend's checkboxes; a click opens a popup
 *   with the record's name, type, location, a link to its page and "record a log here".
 * - `textarea[data-geometry-widget]` (a geometry field on a form): a map above the WKT textarea
 *   to draw, modify, move and delete points, lines and polygons, snapped to the farm's locations;
 *   the textarea stays the field (the accessible way in) and is kept in step both ways.
 *
 * Everything the server sends is read as data: names go into text nodes, never markup. The map
 * takes focus like any control (arrow keys pan, + and - zoom) and Tab leaves it.
 */
import 'ol/ol.css';
import './map.css';
import OlMap from 'ol/Map.js';
import View from 'ol/View.js';
import Feature from 'ol/Feature.js';
import Overlay from 'ol/Overlay.js';
import VectorLayer from 'ol/layer/Vector.js';
import TileLayer from 'ol/layer/Tile.js';
import VectorSource from 'ol/source/Vector.js';
import XYZ from 'ol/source/XYZ.js';
import GeoJSON from 'ol/format/GeoJSON.js';
import WKT from 'ol/format/WKT.js';
import Point from 'ol/geom/Point.js';
import type Geometry from 'ol/geom/Geometry.js';
import type { FeatureLike } from 'ol/Feature.js';
import Style from 'ol/style/Style.js';
import Fill from 'ol/style/Fill.js';
import Stroke from 'ol/style/Stroke.js';
import CircleStyle from 'ol/style/Circle.js';
import Text from 'ol/style/Text.js';
import Draw from 'ol/interaction/Draw.js';
import Modify from 'ol/interaction/Modify.js';
import Snap from 'ol/interaction/Snap.js';
import Translate from 'ol/interaction/Translate.js';
import Select from 'ol/interaction/Select.js';
import type Interaction from 'ol/interaction/Interaction.js';
import { fromLonLat, transformExtent } from 'ol/proj.js';
import { getForViewAndSize, isEmpty, type Extent } from 'ol/extent.js';
import { rotate, type Coordinate } from 'ol/coordinate.js';
import { easeOut, linear } from 'ol/easing.js';
import { defaults as defaultInteractions } from 'ol/interaction/defaults.js';

/** A layer as the server describes it (web/map-layers.ts): its bundle, label and legend colour. */
interface LayerSpec {
  id: string;
  label: string;
  colour: string;
}

/** What a map element's `data-map` (or a textarea's `data-geometry-widget`) holds. */
interface MapSpec {
  features: string;
  layers: LayerSpec[];
  /** The farm's (or the record's) extent, [west, south, east, north] in degrees; null: the whole world. */
  extent: Extent | null;
  tiles: { url: string; attribution: string } | null;
  /** A record's own geometry (its page's small map), WKT. */
  wkt?: string;
  labels: Record<string, string>;
}

const WGS84 = 'EPSG:4326';
const MERCATOR = 'EPSG:3857';
const geojson = new GeoJSON();
const wkt = new WKT();
/** Ask for fewer decimals than a double has: 7 places of a degree are about a centimetre. */
const DECIMALS = 7;

function readSpec(text: string | undefined): MapSpec | null {
  try {
    return text ? (JSON.parse(text) as MapSpec) : null;
  } catch {
    return null;
  }
}

/** Characters OpenLayers would read as markup in an attribution, escaped (it sets them as HTML). */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** An element with its text (never markup) and attributes. */
function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The base layer, when the farm set one (TILTH_MAP_TILES); none by default. */
function baseLayers(spec: MapSpec): TileLayer[] {
  if (!spec.tiles) return [];
  return [
    new TileLayer({
      source: new XYZ({
        url: spec.tiles.url,
        attributions: spec.tiles.attribution ? escapeHtml(spec.tiles.attribution) : undefined,
        crossOrigin: null,
      }),
    }),
  ];
}

function hexToRgba(hex: string, alpha: number): string {
  const n = Number.parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${alpha})`;
}

/** Styles by layer and kind, made once each (OpenLayers calls the style function per feature and frame). */
function styler(layers: LayerSpec[]): (f: FeatureLike) => Style {
  const colours = new Map(layers.map((l) => [l.id, l.colour]));
  const cache = new Map<string, Style>();
  return (f) => {
    const colour = colours.get(String(f.get('layer'))) ?? '#555555';
    const kind = String(f.get('kind'));
    const count = Number(f.get('count') ?? 1);
    const key = `${colour}|${kind}|${kind === 'cluster' ? count : ''}`;
    let style = cache.get(key);
    if (!style) {
      if (kind === 'shape')
        style = new Style({
          fill: new Fill({ color: hexToRgba(colour, 0.25) }),
          stroke: new Stroke({ color: colour, width: 2 }),
        });
      else if (kind === 'cluster')
        style = new Style({
          image: new CircleStyle({
            radius: Math.min(22, 9 + Math.log2(count) * 2),
            fill: new Fill({ color: colour }),
            stroke: new Stroke({ color: '#ffffff', width: 2 }),
          }),
          text: new Text({
            text: String(count),
            fill: new Fill({ color: '#ffffff' }),
            font: '600 12px system-ui,sans-serif',
          }),
        });
      else
        style = new Style({
          image: new CircleStyle({
            radius: 7,
            fill: new Fill({ color: colour }),
            stroke: new Stroke({ color: '#ffffff', width: 2 }),
          }),
        });
      cache.set(key, style);
    }
    return style;
  };
}

/** The view: the extent given (padded a little), or the whole world. */
function viewFor(map: OlMap, extent: Extent | null): void {
  const view = map.getView();
  if (extent && !isEmpty(extent) && extent.every(Number.isFinite)) {
    const e = transformExtent(extent, WGS84, MERCATOR);
    // A point (or a tiny shape) is shown at a field's scale, not at the deepest zoom.
    view.fit(e, { padding: [24, 24, 24, 24], maxZoom: 18 });
  } else view.setCenter(fromLonLat([0, 20]));
}

/**
 * The features of the visible area, fetched at every move (the answer depends on the zoom:
 * clusters and simplified shapes, web/map.ts), the previous request aborted. The element's
 * `data-state` says `loading` or `ready` (the answer drawn and the view still), `data-loads`
 * counts the answers drawn, and `data-drawn` is when the last was (milliseconds since navigation:
 * bench rows M2 and M3 read it).
 */
class FeatureLoader {
  readonly source = new VectorSource<Feature<Geometry>>();
  private controller: AbortController | null = null;
  private loads = 0;
  /** The features address last asked for. */
  private asked: string | null = null;
  visible: Set<string>;
  truncated = false;

  constructor(
    private readonly map: OlMap,
    private readonly spec: MapSpec,
    private readonly element: HTMLElement,
    private readonly status: HTMLElement | null,
  ) {
    this.visible = new Set(spec.layers.map((l) => l.id));
  }

  /**
   * The first view's features, once the map has its size (OpenLayers sends no `moveend` for its
   * first frame), then every view's after a pan or zoom.
   */
  start(): void {
    this.map.once('postrender', () => {
      void this.load();
      this.map.on('moveend', () => void this.load());
    });
  }

  /** The features of the view now. */
  async load(): Promise<void> {
    const view = this.map.getView();
    const center = view.getCenter();
    const resolution = view.getResolution();
    if (!center || resolution === undefined) return;
    return this.ask(center, resolution);
  }

  /** The features of the view at `center` and `resolution`: the view now, or where a pan or zoom is going. */
  async ask(center: Coordinate, resolution: number): Promise<void> {
    const size = this.map.getSize();
    const view = this.map.getView();
    if (!size) return;
    // As view.calculateExtent computes the view's own, so that a view asked for before its
    // animation is the same address as the view after it.
    const extent = transformExtent(getForViewAndSize(center, resolution, view.getRotation(), size), MERCATOR, WGS84);
    // A view wider than the world asks for the world.
    const bbox = [
      Math.max(-180, extent[0]!),
      Math.max(-85, extent[1]!),
      Math.min(180, extent[2]!),
      Math.min(85, extent[3]!),
    ].map((n) => n.toFixed(6));
    const layers = this.spec.layers.filter((l) => this.visible.has(l.id)).map((l) => l.id);
    const url = `${this.spec.features}?bbox=${bbox.join(',')}&zoom=${Math.round(view.getZoomForResolution(resolution) ?? 0)}&layers=${encodeURIComponent(layers.join(','))}`;
    // The view asked for already (drawn or on its way): OpenLayers sends a `moveend` after the
    // first frame too, which asked for the dashboard's first view twice, the second aborting the
    // first (about 200 ms more before the map was first drawn, bench row M2).
    if (url === this.asked) return;
    this.asked = url;
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.element.dataset.state = 'loading';
    try {
      const res = await fetch(url, { signal: controller.signal, credentials: 'same-origin' });
      if (!res.ok) throw new Error(String(res.status));
      const body = (await res.json()) as { features: unknown[]; truncated?: boolean };
      const features = geojson.readFeatures(body, { dataProjection: WGS84, featureProjection: MERCATOR });
      this.source.clear(true);
      this.source.addFeatures(features as Feature<Geometry>[]);
      this.truncated = Boolean(body.truncated);
      if (this.status) this.status.textContent = this.truncated ? (this.spec.labels.truncated ?? '') : '';
      const drawn = () => {
        if (this.controller !== controller) return;
        this.element.dataset.drawn = String(Math.round(performance.now()));
        this.element.dataset.loads = String(++this.loads);
        this.element.dataset.state = 'ready';
      };
      // Drawn, and the view still (an answer asked for at a key comes while the view moves, and
      // OpenLayers says a frame is complete during a view's animation too).
      this.map.once('rendercomplete', () => {
        if (this.map.getView().getAnimating()) this.map.once('moveend', drawn);
        else drawn();
      });
      this.map.render();
    } catch (err) {
      if ((err as Error).name === 'AbortError') return;
      // Asked again at the next move, even of the same view.
      this.asked = null;
      this.element.dataset.state = 'failed';
      if (this.status) this.status.textContent = this.spec.labels.failed ?? '';
    }
  }
}

/** The popup of a clicked feature: its name (a link to its page), type, location and "record a log here". */
function popupFor(map: OlMap, spec: MapSpec, layer: VectorLayer): void {
  const box = el('div', { class: 'map-popup', role: 'dialog', 'aria-live': 'polite' });
  const close = el(
    'button',
    { type: 'button', class: 'map-popup-close', 'aria-label': spec.labels.close ?? 'Close' },
    '×',
  );
  const content = el('div');
  box.append(close, content);
  const overlay = new Overlay({
    element: box,
    autoPan: { animation: { duration: 150 } },
    positioning: 'bottom-center',
    offset: [0, -10],
  });
  map.addOverlay(overlay);
  close.addEventListener('click', () => overlay.setPosition(undefined));
  map.on('singleclick', (event) => {
    // The farm's features only (not a record's own shape drawn over them): a marker before the
    // shape it stands on, else the topmost.
    const hits = map.getFeaturesAtPixel(event.pixel, { layerFilter: (l) => l === layer, hitTolerance: 4 });
    const hit = hits.find((f) => f.get('kind') !== 'shape') ?? hits[0];
    if (!hit) return overlay.setPosition(undefined);
    content.replaceChildren();
    const props = hit.getProperties();
    if (props.kind === 'cluster') {
      content.append(el('p', { class: 'map-popup-title' }, String(props.label ?? '')));
      const zoom = el('button', { type: 'button', class: 'button secondary' }, spec.labels.zoomIn ?? 'Zoom in');
      zoom.addEventListener('click', () => {
        overlay.setPosition(undefined);
        map.getView().animate({ center: event.coordinate, zoom: (map.getView().getZoom() ?? 0) + 2, duration: 200 });
      });
      content.append(zoom);
    } else {
      const title = el('p', { class: 'map-popup-title' });
      title.append(el('a', { href: String(props.url) }, String(props.name ?? '')));
      content.append(title, el('p', {}, String(props.type ?? '')));
      if (props.location)
        content.append(el('p', {}, `${spec.labels.location ?? 'Location'}: ${String(props.location)}`));
      if (props.logUrl) {
        const p = el('p');
        p.append(
          el(
            'a',
            { href: String(props.logUrl), class: 'button secondary' },
            spec.labels.recordLog ?? 'Record a log here',
          ),
        );
        content.append(p);
      }
    }
    overlay.setPosition(event.coordinate);
  });
}

function newMap(target: HTMLElement, spec: MapSpec, layers: Array<VectorLayer | TileLayer>): OlMap {
  // Focusable, so that the keyboard pans and zooms it (keyboard(), below); Tab leaves it as any control.
  if (!target.hasAttribute('tabindex')) target.setAttribute('tabindex', '0');
  return new OlMap({
    target,
    layers: [...baseLayers(spec), ...layers],
    view: new View({ zoom: 2, maxZoom: 22 }),
    interactions: defaultInteractions({ keyboard: false }),
  });
}

/** The keys that pan: arrows, by KEY_PAN_PX pixels. */
const PAN_KEYS: Readonly<Record<string, [number, number]>> = {
  ArrowLeft: [-1, 0],
  ArrowRight: [1, 0],
  ArrowDown: [0, -1],
  ArrowUp: [0, 1],
};
const KEY_PAN_PX = 128;
const KEY_MS = 100;

/**
 * The keyboard, as OpenLayers' own (KeyboardPan and KeyboardZoom: arrows pan 128 px, + and -
 * zoom a level, each animated for 100 ms), but the features of the view it goes to are asked for
 * at the key, while the view moves, not once it has stopped: a pan or zoom is drawn about 100 ms
 * sooner (bench row M3). The view after the animation is the same address, not asked again.
 */
function keyboard(map: OlMap, element: HTMLElement, loader: FeatureLoader): void {
  element.addEventListener('keydown', (event) => {
    const target = event.target as HTMLElement;
    if (event.defaultPrevented || target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) return;
    const view = map.getView();
    const center = view.getCenter();
    const zoom = view.getZoom();
    const resolution = view.getResolution();
    if (!center || zoom === undefined || resolution === undefined) return;
    const pan = PAN_KEYS[event.key];
    if (pan && !(event.altKey || event.ctrlKey || event.metaKey || event.shiftKey)) {
      const delta = rotate([pan[0] * KEY_PAN_PX * resolution, pan[1] * KEY_PAN_PX * resolution], view.getRotation());
      const to = view.getConstrainedCenter([center[0]! + delta[0]!, center[1]! + delta[1]!]);
      if (!to) return;
      event.preventDefault();
      void loader.ask(to, resolution);
      view.animate({ center: to, duration: KEY_MS, easing: linear });
    } else if (event.key === '+' || event.key === '-') {
      const level = view.getConstrainedZoom(zoom + (event.key === '+' ? 1 : -1));
      if (level === undefined) return;
      event.preventDefault();
      if (view.getAnimating()) view.cancelAnimations();
      const to = view.getResolutionForZoom(level);
      void loader.ask(view.getConstrainedCenter(center, to) ?? center, to);
      view.animate({ resolution: to, duration: KEY_MS, easing: easeOut });
    }
  });
}

/** A `[data-map]` element: the farm (dashboard) or a record (its page), with the features around. */
function farmMap(element: HTMLElement): void {
  const spec = readSpec(element.dataset.map);
  if (!spec) return;
  const section = element.closest<HTMLElement>('[data-map-section]');
  section?.removeAttribute('hidden');
  const features = new VectorLayer({ style: styler(spec.layers) });
  const own = new VectorSource<Feature<Geometry>>();
  if (spec.wkt) {
    try {
      own.addFeatures(
        wkt.readFeatures(spec.wkt, { dataProjection: WGS84, featureProjection: MERCATOR }) as Feature<Geometry>[],
      );
    } catch {
      // A stored value that does not parse here is shown in the page's fields all the same.
    }
  }
  const ownLayer = new VectorLayer({
    source: own,
    style: new Style({
      fill: new Fill({ color: 'rgba(179,92,0,0.2)' }),
      stroke: new Stroke({ color: '#b35c00', width: 3 }),
      image: new CircleStyle({
        radius: 8,
        fill: new Fill({ color: '#b35c00' }),
        stroke: new Stroke({ color: '#fff', width: 2 }),
      }),
    }),
  });
  const map = newMap(element, spec, [features, ownLayer]);
  const status = section?.querySelector<HTMLElement>('[data-map-status]') ?? null;
  const loader = new FeatureLoader(map, spec, element, status);
  features.setSource(loader.source);
  keyboard(map, element, loader);
  popupFor(map, spec, features);
  // The legend's checkboxes switch layers: fetched again with the layers asked for.
  for (const box of section?.querySelectorAll<HTMLInputElement>('input[data-map-layer]') ?? []) {
    box.disabled = false;
    box.addEventListener('change', () => {
      if (box.checked) loader.visible.add(box.value);
      else loader.visible.delete(box.value);
      void loader.load();
    });
  }
  viewFor(map, spec.wkt && own.getFeatures().length ? transformExtent(own.getExtent()!, MERCATOR, WGS84) : spec.extent);
  loader.start();
}

/** What the textarea holds, as features; null when it does not parse (what is drawn stays). */
function readWkt(text: string): Feature<Geometry>[] | null {
  if (!text.trim()) return [];
  try {
    const features = wkt.readFeatures(text, {
      dataProjection: WGS84,
      featureProjection: MERCATOR,
    }) as Feature<Geometry>[];
    // A collection is drawn as its members, each edited on its own.
    return features.flatMap((f) => {
      const g = f.getGeometry();
      if (g && g.getType() === 'GeometryCollection')
        return (g as unknown as { getGeometries(): Geometry[] }).getGeometries().map((m) => new Feature(m));
      return [f];
    });
  } catch {
    return null;
  }
}

/** What is drawn, as the WKT the API stores: one shape, or a GEOMETRYCOLLECTION of several (as farmOS writes). */
function writeWkt(features: Feature<Geometry>[]): string {
  const options = { dataProjection: WGS84, featureProjection: MERCATOR, decimals: DECIMALS };
  if (!features.length) return '';
  if (features.length === 1) return wkt.writeFeature(features[0]!, options);
  return `GEOMETRYCOLLECTION (${features.map((f) => wkt.writeFeature(f, options)).join(', ')})`;
}

/** A geometry field's textarea, enhanced with a map to draw on; the textarea stays the field. */
function geometryWidget(textarea: HTMLTextAreaElement): void {
  const spec = readSpec(textarea.dataset.geometryWidget);
  if (!spec) return;
  const L = spec.labels;
  const wrap = el('div', { class: 'geometry-widget' });
  const toolbar = el('div', {
    class: 'map-toolbar',
    role: 'toolbar',
    'aria-label': L.tools ?? 'Drawing tools',
    'aria-controls': textarea.id,
  });
  const target = el('div', {
    class: 'map',
    role: 'application',
    'aria-label': L.widgetMap ?? 'Map',
    'aria-describedby': `${textarea.id}-help`,
  });
  wrap.append(toolbar, target);
  textarea.before(wrap);

  const drawn = new VectorSource<Feature<Geometry>>();
  const drawnLayer = new VectorLayer({
    source: drawn,
    style: new Style({
      fill: new Fill({ color: 'rgba(179,92,0,0.25)' }),
      stroke: new Stroke({ color: '#b35c00', width: 3 }),
      image: new CircleStyle({
        radius: 7,
        fill: new Fill({ color: '#b35c00' }),
        stroke: new Stroke({ color: '#fff', width: 2 }),
      }),
    }),
  });
  const around = new VectorLayer({ style: styler(spec.layers), opacity: 0.8 });
  const map = newMap(target, spec, [around, drawnLayer]);
  const loader = new FeatureLoader(map, spec, target, null);
  around.setSource(loader.source);
  keyboard(map, target, loader);

  const fromText = (): boolean => {
    const features = readWkt(textarea.value);
    if (!features) return false;
    drawn.clear();
    drawn.addFeatures(features);
    return true;
  };
  const toText = () => {
    textarea.value = writeWkt(drawn.getFeatures());
    textarea.dispatchEvent(new Event('change', { bubbles: true }));
  };
  fromText();
  textarea.addEventListener('input', () => fromText());

  // Tools: one at a time, each a toggle button; snapping to the drawn shapes and the farm's locations always on.
  const select = new Select({ layers: [drawnLayer] });
  const tools: Record<string, () => Interaction[]> = {
    Point: () => [new Draw({ source: drawn, type: 'Point' })],
    LineString: () => [new Draw({ source: drawn, type: 'LineString' })],
    Polygon: () => [new Draw({ source: drawn, type: 'Polygon' })],
    modify: () => [new Modify({ source: drawn })],
    move: () => [new Translate({ layers: [drawnLayer] })],
    delete: () => [select],
  };
  let active: Interaction[] = [];
  const snaps = [new Snap({ source: drawn }), new Snap({ source: loader.source })];
  const buttons = new Map<string, HTMLButtonElement>();
  const use = (name: string | null) => {
    for (const i of [...active, ...snaps]) map.removeInteraction(i);
    active = name ? tools[name]!() : [];
    for (const i of active) {
      map.addInteraction(i);
      i.on(['drawend', 'modifyend', 'translateend'] as never, () => setTimeout(toText, 0));
    }
    // Snapping is added last, as OpenLayers asks, so that it sees the pointer first.
    if (name) for (const s of snaps) map.addInteraction(s);
    for (const [n, b] of buttons) b.setAttribute('aria-pressed', String(n === name));
  };
  select.on('select', (e) => {
    for (const f of e.selected) drawn.removeFeature(f as Feature<Geometry>);
    select.getFeatures().clear();
    toText();
  });
  const labels: Record<string, string> = {
    Point: L.point ?? 'Point',
    LineString: L.line ?? 'Line',
    Polygon: L.polygon ?? 'Polygon',
    modify: L.modify ?? 'Modify',
    move: L.move ?? 'Move',
    delete: L.delete ?? 'Delete',
  };
  for (const [name, label] of Object.entries(labels)) {
    const b = el(
      'button',
      { type: 'button', class: 'button secondary', 'aria-pressed': 'false', 'data-tool': name },
      label,
    );
    b.addEventListener('click', () => use(b.getAttribute('aria-pressed') === 'true' ? null : name));
    buttons.set(name, b);
    toolbar.append(b);
  }
  const clear = el('button', { type: 'button', class: 'button secondary', 'data-tool': 'clear' }, L.clear ?? 'Clear');
  clear.addEventListener('click', () => {
    drawn.clear();
    toText();
  });
  toolbar.append(clear);
  // "Use my location": where the browser allows it (a secure page with geolocation).
  if (window.isSecureContext && 'geolocation' in navigator) {
    const here = el(
      'button',
      { type: 'button', class: 'button secondary', 'data-tool': 'here' },
      L.here ?? 'Use my location',
    );
    here.addEventListener('click', () =>
      navigator.geolocation.getCurrentPosition(
        (p) => {
          const point = new Feature(new Point(fromLonLat([p.coords.longitude, p.coords.latitude])));
          drawn.addFeature(point);
          toText();
          map.getView().animate({
            center: point.getGeometry()!.getCoordinates(),
            zoom: Math.max(map.getView().getZoom() ?? 0, 17),
          });
        },
        () => here.setAttribute('aria-disabled', 'true'),
        { enableHighAccuracy: true, timeout: 15000 },
      ),
    );
    toolbar.append(here);
  }
  viewFor(map, drawn.getFeatures().length ? transformExtent(drawn.getExtent()!, MERCATOR, WGS84) : spec.extent);
  loader.start();
}

for (const element of document.querySelectorAll<HTMLElement>('[data-map]')) farmMap(element);
for (const textarea of document.querySelectorAll<HTMLTextAreaElement>('textarea[data-geometry-widget]'))
  geometryWidget(textarea);
