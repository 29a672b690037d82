/**
 * `node --import tsx scripts/build-assets.ts`: bundles the pages' own scripts and stylesheets
 * (runtime/web/assets.ts) into the git-ignored .cache/assets/. `npm ci` runs it (the `prepare`
 * lifecycle), and the server runs the same build at start when the output is missing or older
 * than its sources, so a checkout works either way.
 *
 * Adding an entry point (a chart, say) is one line in ASSET_ENTRIES in runtime/web/assets.ts:
 *
 *     { name: 'chart', source: 'chart.ts' },
 *
 * with its source at runtime/web/browser/chart.ts (TypeScript for the browser: the folder's own
 * tsconfig.json gives it the DOM's types; `import 'uplot/dist/uPlot.min.css'` there makes a
 * stylesheet beside the script). A page then asks for it by name: `page(title, chrome, body,
 * { assets: ['chart'] })` (runtime/web/layout.ts) adds its `<script defer>` and stylesheet.
 * Nothing else: no CDN, no inline script, and the pages' CSP (`script-src 'self'`) stays as it is.
 */
import { ASSET_ENTRIES, buildAssets } from '../runtime/web/assets.ts';

const started = Date.now();
const manifest = buildAssets();
const names = ASSET_ENTRIES.map((e) => {
  const slot = manifest.entries[e.name];
  return `${e.name} (${[slot?.js, slot?.css].filter(Boolean).join(', ')})`;
});
console.log(`browser assets built in ${Date.now() - started} ms: ${names.join('; ')}`);
