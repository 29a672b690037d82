/**
 * A router that only sees the requests under its own paths. Express tries every route of every
 * router mounted without a path against every request (path-to-regexp, one pattern at a time),
 * and every layer it passes costs a walk of its own: a read of one log walked some forty patterns
 * of OAuth, OpenAPI, data stream and configuration routes before reaching the resource routes.
 * One prefix test per router skips them, which made one log by UUID about 15% quicker; routers
 * that sit at the same place in the chain (the same rules before them) share one test, so a
 * request elsewhere passes them as one layer.
 *
 * The scope must cover every path the routers answer (each module lists its own beside its
 * routes: OPENAPI_PATHS, OAUTH_PATHS, DATA_STREAM_PATHS…). Paths are compared without regard to
 * case, as Express matches routes by default, so a request reaches the same handler as before.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';

/**
 * Where routers answer: under any of `prefixes`, or at one of `exact` (with or without a trailing
 * slash, as Express matches it), but never under one of `except` (another router's paths inside
 * this one's prefix: the sensor listener's /farm/sensor/listener/ inside the web pages' /farm/).
 */
export interface Scope {
  prefixes?: readonly string[];
  exact?: readonly string[];
  except?: readonly string[];
}

const escape = (path: string) => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `handlers` (routers, tried in order as Express would) for the requests in `scope` (a list of prefixes, or a Scope); every other request passes by. */
export function scoped(scope: readonly string[] | Scope, ...handlers: RequestHandler[]): RequestHandler {
  const { prefixes = [], exact = [], except = [] }: Scope = isPrefixList(scope) ? { prefixes: scope } : scope;
  const alternatives = [...prefixes.map(escape), ...exact.map((path) => `${escape(path.replace(/\/$/, ''))}\\/?$`)];
  const outside = except.length ? `(?!${except.map(escape).join('|')})` : '';
  const under = new RegExp(`^${outside}(?:${alternatives.join('|')})`, 'i');
  const handler = handlers.length === 1 ? handlers[0]! : express.Router().use(...handlers);
  return (req: Request, res: Response, next: NextFunction) => (under.test(req.path) ? handler(req, res, next) : next());
}

/** One scope covering all of these. */
export function mergeScopes(...scopes: Array<readonly string[] | Scope>): Scope {
  const all = scopes.map((scope): Scope => (isPrefixList(scope) ? { prefixes: scope } : scope));
  return { prefixes: all.flatMap((s) => s.prefixes ?? []), exact: all.flatMap((s) => s.exact ?? []) };
}

function isPrefixList(scope: readonly string[] | Scope): scope is readonly string[] {
  return Array.isArray(scope);
}
