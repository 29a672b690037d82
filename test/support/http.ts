/** Thin helpers over fetch for tests: JSON:API requests with a bearer token. */
export const JSONAPI = 'application/vnd.api+json';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function request<T = any>(
  url: string,
  init: RequestInit & { token?: string; json?: unknown } = {},
): Promise<ApiResponse<T>> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set('Authorization', `Bearer ${init.token}`);
  let body = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    if (!headers.has('Content-Type')) headers.set('Content-Type', JSONAPI);
  }
  if (!headers.has('Accept')) headers.set('Accept', JSONAPI);
  const res = await fetch(url, { ...init, headers, body, redirect: 'manual' });
  const text = await res.text();
  let parsed: any = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** A password-grant token for `username` with the default `farm` client. */
export async function passwordToken(
  baseUrl: string,
  username: string,
  password: string,
  scope?: string,
): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'password', username, password, client_id: 'farm' });
  if (scope) form.set('scope', scope);
  const res = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form,
  });
  const body = (await res.json()) as { access_token?: string };
  if (res.status !== 200 || !body.access_token)
    throw new Error(`token request failed: ${res.status} ${JSON.stringify(body)}`);
  return body.access_token;
}
