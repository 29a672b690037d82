/**
 * The frame of every page (header, navigation, sign-out form, one stylesheet) and how a page is
 * sent: a Content-Security-Policy with no inline script or style at all, no framing, forms only to
 * this server, and never cached (pages hold a person's records and a CSRF token).
 */
import type { Response } from 'express';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { STYLE_PATH } from './style.ts';
import { assetPath } from './assets.ts';

/**
 * No inline script or style, nothing from elsewhere; images from here (thumbnails) only. Scripts
 * only Tilth's own bundles (assets.ts), which fetch from here only (the map's features).
 */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/**
 * The policy with images from these origins too (the map's tiles, TILTH_MAP_TILES): webRoutes
 * sets it on every page's response once, as `res.locals.pageCsp`.
 */
export function pageCsp(imageOrigins: readonly string[]): string {
  return imageOrigins.length
    ? PAGE_CSP.replace("img-src 'self'", `img-src 'self' ${imageOrigins.join(' ')}`)
    : PAGE_CSP;
}

/** What a page adds to the frame: the browser entry points it runs (assets.ts ASSET_ENTRIES names). */
export interface PageOptions {
  assets?: readonly string[];
}

export interface Chrome {
  farmName: string;
  /** The signed-in person, or null on the sign-in page. */
  user: { name: string } | null;
  csrfToken: string | null;
  /** Lists shown in the navigation, by what they hold. */
  nav: Array<{ href: string; label: string }>;
}

export function page(title: string, chrome: Chrome, body: Html, options: PageOptions = {}): string {
  // Each entry point's stylesheet (when its sources import CSS) and its script, deferred: the
  // page is whole and usable before it runs, and works without it.
  const assets = (options.assets ?? []).map((name) => {
    const css = assetPath(name, 'css');
    const js = assetPath(name, 'js');
    return html`${css ? html`<link rel="stylesheet" href="${css}">` : ''}${js ? html`<script src="${js}" defer></script>` : ''}`;
  });
  const header = chrome.user
    ? html`<header class="top">
<a class="farm" href="/farm">${chrome.farmName}</a>
<nav class="main" aria-label="${M.nav.menu}"><ul>${chrome.nav.map((n) => html`<li><a href="${n.href}">${n.label}</a></li>`)}</ul></nav>
<form method="post" action="/farm/sign-out"><input type="hidden" name="csrf_token" value="${chrome.csrfToken ?? ''}"><button type="submit">${M.nav.signOut}</button></form>
<a href="/farm/account/password">${M.signIn.signedInAs(chrome.user.name)}</a>
</header>`
    : html`<header class="top"><span class="farm">${chrome.farmName}</span></header>`;
  return html`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${title} · ${chrome.farmName}</title>
<link rel="stylesheet" href="${STYLE_PATH}">
${assets}
</head>
<body>
<a class="skip" href="#content">${M.skipToContent}</a>
${header}
<main id="content">
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`.text;
}

export function sendPage(res: Response, status: number, text: string): void {
  const csp = res.locals.pageCsp ?? PAGE_CSP;
  res.status(status).set('Content-Security-Policy', csp).set('Cache-Control', 'no-store').type('html').send(text);
}
