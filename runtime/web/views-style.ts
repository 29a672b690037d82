/**
 * The styles of an asset's timeline, saved views and charts (issue 42 §5, §6), and the log types'
 * icons: one SVG sprite served by Tilth (ICONS_PATH, its hash in the name), drawn as a CSS
 * background (the pages' CSP allows images from this server only; no inline SVG, no script), one
 * 24 px cell per type, a log type it does not know drawn as the generic one.
 */
import { createHash } from 'node:crypto';

/** farmOS's log types, each an icon: a colour and a letter or two. */
const ICONS: ReadonlyArray<[type: string, colour: string, glyph: string]> = [
  ['activity', '#1d5a34', 'A'],
  ['birth', '#8a3b8f', 'B'],
  ['harvest', '#9a5b00', 'H'],
  ['input', '#2f5f8a', 'I'],
  ['lab_test', '#4b4f8f', 'L'],
  ['maintenance', '#5c5c5c', 'M'],
  ['medical', '#a11b12', '+'],
  ['observation', '#00667a', 'O'],
  ['purchase', '#6b4f1d', 'P'],
  ['sale', '#7a2e4f', 'S'],
  ['seeding', '#3d6b00', 'Se'],
  ['transplanting', '#5a6b00', 'T'],
  ['other', '#555e58', '•'],
];

export const ICON_SPRITE = `<svg xmlns="http://www.w3.org/2000/svg" width="${ICONS.length * 24}" height="24" viewBox="0 0 ${ICONS.length * 24} 24">${ICONS.map(
  ([, colour, glyph], i) =>
    `<circle cx="${i * 24 + 12}" cy="12" r="11" fill="${colour}"/><text x="${i * 24 + 12}" y="16.5" font-family="sans-serif" font-size="${glyph.length > 1 ? 10 : 13}" font-weight="700" fill="#fff" text-anchor="middle">${glyph}</text>`,
).join('')}</svg>`;

export const ICONS_PATH = `/farm/assets/log-icons.${createHash('sha256').update(ICON_SPRITE).digest('base64url').slice(0, 12)}.svg`;

/** The CSS class of a log type's icon (a known type's own, else the generic one). */
export function iconClass(bundle: string): string {
  return ICONS.some(([t]) => t === bundle) ? `log-icon-${bundle}` : 'log-icon-other';
}

export const VIEWS_STYLE = `.log-icon{flex:none;display:inline-block;width:24px;height:24px;background:url(${ICONS_PATH}) no-repeat}
${ICONS.map(([t], i) => `.log-icon-${t}{background-position:-${i * 24}px 0}`).join('\n')}
ol.timeline{list-style:none;margin:0;padding:0}
ol.timeline li.event{display:flex;gap:.75rem;align-items:flex-start;padding:.5rem 0;border-bottom:1px solid #eee}
ol.timeline p{margin:0 0 .25rem}ol.timeline ul.quantities li{border:0;padding:0}
.chart{width:100%;min-height:0}.chart canvas{max-width:100%}
.readings .stream,.card .stream{margin:1rem 0}
ul.views li{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem}
ul.views form{display:inline;margin:0}
form.save-view{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-end}
form.save-view input[type=text]{width:auto;flex:1 1 14rem}
fieldset.columns{display:flex;flex-wrap:wrap;gap:0 1rem}
`;
