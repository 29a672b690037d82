/**
 * The HTML of the authorization flow: the login page, the consent page and the error page.
 * Plain server-rendered HTML without scripts; every interpolated value goes through `escape`.
 * The one stylesheet is inline and allowed by its hash in the pages' Content-Security-Policy.
 */
import { createHash } from 'node:crypto';

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Escape text for HTML element content and double-quoted attribute values. */
export function escape(value: unknown): string {
  return String(value ?? '').replace(/[&<>"'`]/g, (c) => HTML_ESCAPES[c]!);
}

const STYLE = `
body{font-family:system-ui,sans-serif;background:#f4f1ea;color:#222;margin:0;padding:2rem 1rem}
main{max-width:26rem;margin:0 auto;background:#fff;border-radius:8px;padding:1.5rem 2rem;box-shadow:0 1px 4px rgba(0,0,0,.15)}
h1{font-size:1.3rem;margin-top:0}
label{display:block;margin:.8rem 0 .2rem}
input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;font-size:1rem}
button{font-size:1rem;padding:.5rem 1.2rem;margin:1rem .5rem 0 0;cursor:pointer}
.error{background:#fde8e8;border:1px solid #e0a0a0;padding:.6rem;border-radius:4px}
.muted{color:#666;font-size:.9rem}
ul.scopes li{margin:.3rem 0}
code{word-break:break-all}
`;

/** The CSP source allowing the inline stylesheet. */
export const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

function layout(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escape(title)} · Tilth</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

export interface LoginPage {
  /** The client asking, when known. */
  clientLabel: string | null;
  /** Where to continue after signing in: the authorization request. */
  returnTo: string;
  csrfToken: string;
  error?: string;
  username?: string;
}

export function loginPage(p: LoginPage): string {
  return layout(
    'Sign in',
    `<h1>Sign in to ${escape(p.clientLabel ? `authorize ${p.clientLabel}` : 'continue')}</h1>
${p.error ? `<p class="error" role="alert">${escape(p.error)}</p>` : ''}
<form method="post" action="/oauth/login">
<input type="hidden" name="csrf_token" value="${escape(p.csrfToken)}">
<input type="hidden" name="return_to" value="${escape(p.returnTo)}">
<label for="username">User name or e-mail address</label>
<input type="text" id="username" name="username" autocomplete="username" autocapitalize="none" required value="${escape(p.username ?? '')}">
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,
  );
}

export interface ConsentScope {
  name: string;
  description: string;
  /** The scope allows more than the user's roles do (the token still gets only what both allow). */
  beyondUserRoles: boolean;
}

export interface ConsentPage {
  clientLabel: string;
  clientId: string;
  userName: string;
  scopes: ConsentScope[];
  redirectUri: string;
  transactionId: string;
  csrfToken: string;
  /** The authorization request, to come back to after signing out. */
  returnTo: string;
}

export function consentPage(p: ConsentPage): string {
  const scopes = p.scopes
    .map(
      (s) =>
        `<li><strong>${escape(s.name)}</strong>: ${escape(s.description)}${s.beyondUserRoles ? ` <span class="muted">(beyond your own roles: the application gets no more than they allow)</span>` : ''}</li>`,
    )
    .join('\n');
  return layout(
    'Authorize',
    `<h1>Authorize ${escape(p.clientLabel)}?</h1>
<p><strong>${escape(p.clientLabel)}</strong> <span class="muted">(client <code>${escape(p.clientId)}</code>)</span> asks to use this farm as <strong>${escape(p.userName)}</strong> with these scopes:</p>
<ul class="scopes">
${scopes}
</ul>
<p class="muted">If you allow it, you will be sent to <code>${escape(p.redirectUri)}</code>.</p>
<form method="post" action="/oauth/authorize/decision">
<input type="hidden" name="transaction_id" value="${escape(p.transactionId)}">
<input type="hidden" name="csrf_token" value="${escape(p.csrfToken)}">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
<form method="post" action="/oauth/logout">
<input type="hidden" name="csrf_token" value="${escape(p.csrfToken)}">
<input type="hidden" name="return_to" value="${escape(p.returnTo)}">
<p class="muted">Not ${escape(p.userName)}? <button type="submit">Sign in as someone else</button></p>
</form>`,
  );
}

export function errorPage(title: string, message: string): string {
  return layout(
    title,
    `<h1>${escape(title)}</h1>\n<p class="error">${escape(message)}</p>\n<p class="muted">Go back to the application and start again.</p>`,
  );
}
