/**
 * A test server that also answers in the farmOS 4.x shape, and that base as a 4.x client is
 * given it (its FARMOS_HOSTNAME).
 */
import { createServer } from 'node:net';
import { startTestServer, type TestServer, type TestServerOptions } from './server.ts';

/** A free loopback port, found by listening on port 0 and closing. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export async function startFarmos4Server(
  options: TestServerOptions = {},
): Promise<{ server: TestServer; hostname: string }> {
  const port = await freePort();
  const server = await startTestServer({ ...options, env: { TILTH_API4_PORT: String(port), ...options.env } });
  // TILTH_API4_BASE_URL's default: TILTH_BASE_URL with the 4.x port.
  return { server, hostname: server.api4!.url };
}
