import { DataDirInUseError, PendingMigrationsError } from '@agent-backend/engines';

/**
 * The reasons a start may fail that a person can fix without reading a stack trace: another
 * process holds the port or the data directory, the schema awaits its migrations, or the listen address is not one of this
 * machine's. Returns the sentence to print, or undefined for anything else (a bug: the stack
 * trace is what helps then).
 */
export function startFailure(
  error: unknown,
  listen: { port: number; host: string },
): string | undefined {
  if (error instanceof DataDirInUseError) {
    return (
      `data directory ${error.dataDir} is in use by process ${error.pid} ` +
      `(another all-in-one or token:issue?); stop it, or set DATA_DIR to another directory`
    );
  }
  if (error instanceof PendingMigrationsError) return error.message;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const where = `${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:${listen.port}`;
  if (code === 'EADDRINUSE') {
    return `port ${listen.port} is already in use (listening on ${where}); stop the process that holds it, or set PORT to another port`;
  }
  if (code === 'EACCES') {
    return `not allowed to listen on ${where} (ports below 1024 need privileges); set PORT to a port above 1024`;
  }
  if (code === 'EADDRNOTAVAIL') {
    return `cannot listen on ${where}: HOST is not an address of this machine; set HOST to one (0.0.0.0 for all, 127.0.0.1 for loopback only)`;
  }
  return undefined;
}
