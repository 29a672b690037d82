/**
 * Readings and inventories as charts in the browser (issue 42 §6), over uPlot: enhances what the
 * server rendered (web/charts.ts) and changes nothing a page needs without script.
 *
 * - `.readings-chart[data-summary]`: a data stream's readings over the page's range, fetched from
 *   the summary endpoint with one bucket per pixel of the chart's width (the server reduces them:
 *   lowest and highest per bucket, so no peak is lost), drawn as two lines. Dragging across the
 *   chart zooms in: the chart asks again for the range shown, at the same width, so detail
 *   appears as the range narrows; "Whole range" goes back.
 * - `.inventory-chart[data-steps]`: an asset's inventory history, drawn as a step chart from the
 *   table beside it (each row's time and value after the step).
 *
 * Once drawn, a chart's element says so in `data-drawn` (milliseconds since navigation) and
 * `data-points` (the points drawn): the tests and bench row C1 read them.
 */
import 'uplot/dist/uPlot.min.css';
import uPlot from 'uplot';

const HEIGHT = 240;
const LOW = '#2f5f8a';
const HIGH = '#a11b12';

interface Bucket {
  first: number;
  last: number;
  min: number;
  max: number;
  count: number;
}

function widthOf(el: HTMLElement): number {
  return Math.max(200, Math.floor(el.clientWidth || el.parentElement?.clientWidth || 600));
}

function drawn(el: HTMLElement, points: number): void {
  el.dataset.points = String(points);
  el.dataset.drawn = String(Math.round(performance.now()));
}

/** The summary's buckets as uPlot's columns: time (the bucket's middle), lowest, highest. */
function columns(buckets: Bucket[]): uPlot.AlignedData {
  return [buckets.map((b) => (b.first + b.last) / 2), buckets.map((b) => b.min), buckets.map((b) => b.max)];
}

async function readingsChart(el: HTMLElement): Promise<void> {
  const base = new URL(el.dataset.summary!, location.href);
  const whole = { start: Number(base.searchParams.get('start')), end: Number(base.searchParams.get('end')) };
  const width = widthOf(el);
  const fetchRange = async (start: number, end: number): Promise<Bucket[]> => {
    const url = new URL(base);
    url.searchParams.set('start', String(Math.floor(start)));
    url.searchParams.set('end', String(Math.ceil(end)));
    url.searchParams.set('buckets', String(width));
    const res = await fetch(url, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
    if (!res.ok) throw new Error(`readings: ${res.status}`);
    return ((await res.json()) as { buckets: Bucket[] }).buckets;
  };
  let buckets = await fetchRange(whole.start, whole.end);
  let fetching = false;
  const label = el.dataset.label ?? '';
  const plot = new uPlot(
    {
      width,
      height: HEIGHT,
      series: [
        {},
        { label: `${label} (lowest)`, stroke: LOW, width: 1 },
        { label: `${label} (highest)`, stroke: HIGH, width: 1 },
      ],
      scales: { x: { time: true } },
      // The drag selects; the hook below zooms (uPlot would otherwise rescale without asking again).
      cursor: { drag: { x: true, y: false, setScale: false } },
      hooks: {
        // A zoom (a drag across the chart) asks for the range now shown, at the same width.
        setSelect: [
          (u) => {
            if (u.select.width < 2 || fetching) return;
            const start = u.posToVal(u.select.left, 'x');
            const end = u.posToVal(u.select.left + u.select.width, 'x');
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            void zoomTo(start, end);
          },
        ],
      },
    },
    columns(buckets),
    el,
  );
  const zoomTo = async (start: number, end: number) => {
    fetching = true;
    try {
      buckets = await fetchRange(start, end);
      plot.setData(columns(buckets), false);
      plot.setScale('x', { min: start, max: end });
      drawn(el, buckets.length);
      reset.hidden = start <= whole.start && end >= whole.end;
    } finally {
      fetching = false;
    }
  };
  const reset = document.createElement('button');
  reset.type = 'button';
  reset.className = 'button secondary';
  reset.textContent = 'Whole range';
  reset.hidden = true;
  reset.addEventListener('click', () => void zoomTo(whole.start, whole.end));
  el.after(reset);
  drawn(el, buckets.length);
}

function inventoryChart(el: HTMLElement): void {
  const table = document.getElementById(el.dataset.steps ?? '');
  if (!table) return;
  const steps = [...table.querySelectorAll<HTMLTableRowElement>('tbody tr')]
    .map((tr) => ({ t: Number(tr.dataset.t), v: Number(tr.dataset.v) }))
    .filter((s) => Number.isFinite(s.t) && Number.isFinite(s.v))
    .sort((a, b) => a.t - b.t);
  if (!steps.length) return;
  // The last value holds until now.
  const now = Date.now() / 1000;
  const xs = [...steps.map((s) => s.t), Math.max(now, steps[steps.length - 1]!.t)];
  const ys = [...steps.map((s) => s.v), steps[steps.length - 1]!.v];
  new uPlot(
    {
      width: widthOf(el),
      height: HEIGHT,
      series: [{}, { label: el.dataset.label ?? '', stroke: LOW, width: 2, paths: uPlot.paths.stepped!({ align: 1 }) }],
      scales: { x: { time: true } },
    },
    [xs, ys],
    el,
  );
  drawn(el, steps.length);
}

for (const el of document.querySelectorAll<HTMLElement>('.readings-chart[data-summary]'))
  readingsChart(el).catch((e: unknown) => {
    el.dataset.failed = String(e);
  });
for (const el of document.querySelectorAll<HTMLElement>('.inventory-chart[data-steps]')) inventoryChart(el);
