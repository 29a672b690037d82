/**
 * Run the \`tilth\` command as a child process without blocking: the test's own servers (in this
 * process) go on answering it meanwhile, and the test may SIGKILL it at any moment.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './project.ts';

export interface CommandResult {
  status: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

export function tilthAsync(
  args: string[],
  env: Record<string, string>,
  onStdout?: (text: string) => void,
): { done: Promise<CommandResult>; kill: () => void } {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'tilth.js'), ...args], {
    env: { ...process.env, TILTH_LOG_LEVEL: 'silent', DATABASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
    onStdout?.(String(d));
  });
  child.stderr.on('data', (d) => (stderr += d));
  const done = new Promise<CommandResult>((resolve) =>
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr })),
  );
  return { done, kill: () => child.kill('SIGKILL') };
}
