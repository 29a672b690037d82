/**
 * The web interface's one stylesheet, served by Tilth at STYLE_PATH (its hash in the name, so it
 * is cached for good and a new release's is fetched). Phones first: one column at 360 px, touch
 * targets at least 44 px, visible focus, colours that meet WCAG AA on their backgrounds.
 */
import { createHash } from 'node:crypto';
// helper `views`: the timeline's, saved views' and charts' styles (issue 42 §5, §6).
import { VIEWS_STYLE } from './views-style.ts';

export const STYLE = `*,*::before,*::after{box-sizing:border-box}
html{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;font-size:100%;line-height:1.45;color:#1f2421;background:#f4f1ea}
body{margin:0}
a{color:#1d5a34}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible,summary:focus-visible{outline:3px solid #b35c00;outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem;z-index:2}
header.top{background:#1d5a34;color:#fff;padding:.25rem 1rem;display:flex;flex-wrap:wrap;align-items:center;gap:.25rem 1rem}
header.top a,header.top button{color:#fff}
header.top .farm{font-weight:700;text-decoration:none;margin-right:auto;min-height:44px;display:inline-flex;align-items:center}
nav.main ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:0 .75rem}
nav.main a{display:inline-flex;align-items:center;min-height:44px}
header.top form{margin:0}
header.top button{background:none;border:1px solid #fff;border-radius:4px;min-height:44px;padding:0 .75rem;font:inherit;cursor:pointer}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0 1rem}h2{font-size:1.2rem;margin:1.5rem 0 .5rem}
.card{background:#fff;border-radius:8px;padding:1rem;box-shadow:0 1px 3px rgba(0,0,0,.15);margin-bottom:1rem}
.grid{display:grid;gap:1rem;grid-template-columns:1fr}
@media (min-width:48rem){.grid{grid-template-columns:1fr 1fr}.with-sidebar{display:grid;grid-template-columns:2fr 1fr;gap:1rem}}
.notice{background:#e6f2ea;border:1px solid #5f9a72;padding:.75rem;border-radius:4px}
.error{background:#fdecea;border:1px solid #b3261e;color:#6b1510;padding:.75rem;border-radius:4px}
.field-error{color:#a11b12;font-weight:600;margin:.25rem 0 0}
.muted{color:#555e58}
.button,button.primary{display:inline-flex;align-items:center;justify-content:center;min-height:44px;padding:0 1rem;border-radius:4px;border:1px solid #1d5a34;background:#1d5a34;color:#fff;text-decoration:none;font:inherit;cursor:pointer}
.button.secondary{background:#fff;color:#1d5a34}
.actions{display:flex;flex-wrap:wrap;gap:.5rem;margin:1rem 0}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.5rem;border-bottom:1px solid #d9d6cc;vertical-align:top}
th a{display:inline-flex;min-height:44px;align-items:center}
.table-wrap{overflow-x:auto}
dl.fields{display:grid;grid-template-columns:1fr;gap:.25rem 1rem;margin:0}
@media (min-width:36rem){dl.fields{grid-template-columns:minmax(8rem,1fr) 3fr}}
dl.fields dt{font-weight:600}dl.fields dd{margin:0 0 .5rem;overflow-wrap:anywhere;white-space:pre-wrap}
form.record label,form.filters label{display:block;font-weight:600;margin:.75rem 0 .25rem}
fieldset{border:1px solid #d9d6cc;border-radius:6px;margin:0 0 1rem;padding:.5rem 1rem 1rem}
legend{font-weight:700}
input[type=text],input[type=email],input[type=password],input[type=number],input[type=datetime-local],input[type=date],input[type=search],select,textarea{width:100%;max-width:40rem;min-height:44px;padding:.5rem;font:inherit;border:1px solid #6b726d;border-radius:4px;background:#fff;color:#1f2421}
textarea{min-height:6rem}
.choice{display:flex;align-items:center;gap:.5rem;min-height:44px;font-weight:400}
.choice input{width:1.25rem;height:1.25rem}
.help{color:#555e58;font-size:.9rem;margin:.25rem 0 0}
.required{color:#a11b12}
form.filters{display:grid;gap:0 1rem;grid-template-columns:1fr}
@media (min-width:48rem){form.filters{grid-template-columns:repeat(3,1fr)}}
.pager{display:flex;gap:.5rem;margin:1rem 0;flex-wrap:wrap}
ul.plain{list-style:none;padding:0;margin:0}ul.plain li{padding:.35rem 0;border-bottom:1px solid #eee}
form.inline{display:inline;margin-left:.5rem}
.badge{display:inline-block;padding:0 .4rem;border-radius:3px;background:#e8e4d8;font-size:.85rem}
.task-actions{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin-top:.35rem}
.task-actions form.inline{margin-left:0;display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}
.task-actions input[type=date]{width:auto}
code.secret{display:inline-block;font-size:1.25rem;padding:.25rem .5rem;border-radius:4px;background:#f4f1ea;overflow-wrap:anywhere;user-select:all}
.choice input{flex:none}form.record label.choice{display:flex;font-weight:400}
.default-submit{display:none}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
fieldset.optional:has(>.switch input:not(:checked))>:not(legend,.switch,.help){display:none}
fieldset.rows .row{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin:.25rem 0}
fieldset.rows .row input,fieldset.rows .row textarea{flex:1 1 16rem}
fieldset.component{background:#faf8f3}
dl.fields dd .text{white-space:normal}.text p{margin:0 0 .5rem}.text ul,.text ol{margin:0 0 .5rem;padding-left:1.25rem}
ul.files li{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem;white-space:normal}
a.thumb{display:inline-flex;min-height:44px}a.thumb img{display:block;max-width:100%;height:auto;object-fit:contain;background:#e8e4d8;border-radius:4px}
td input[type=radio]{width:1.5rem;height:1.5rem;margin:.6rem 0}
${VIEWS_STYLE}
.quick-list a{display:flex;align-items:center;min-height:44px;font-weight:600}input[type=file]{min-height:44px;max-width:100%}
`;

const HASH = createHash('sha256').update(STYLE).digest('base64url').slice(0, 12);

/** Where the stylesheet is served: its content's hash in the name. */
export const STYLE_PATH = `/farm/assets/style.${HASH}.css`;
