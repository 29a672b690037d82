/**
 * Servers in processes of their own, as the tests that load or kill them and the benchmark start
 * them: a free loopback port, and stopping one that may be stuck.
 */
import { createServer } from 'node:net';
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';

/** A process's resident memory in MB (Linux's /proc); NaN once it has died. */
export function rssMb(pid: number | undefined): number {
  let status = '';
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return NaN;
  }
  const kb = /VmRSS:\s+(\d+)/.exec(status)?.[1];
  return kb === undefined ? NaN : Number(kb) / 1024;
}

/** A free loopback port found by the OS. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** SIGTERM and wait for the exit; a process still running ten seconds later (stuck) is killed. */
export async function stopProcess(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const grace = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(grace);
}
