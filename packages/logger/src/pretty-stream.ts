import { createRequire } from 'node:module';
import type { DestinationStream } from 'pino';
import type PinoPretty from 'pino-pretty';

type PinoPrettyModule = typeof PinoPretty;

/**
 * What the logger writes, as its first line, when `pretty` was asked for and pino-pretty is not
 * installed: it is a development dependency, so production installs (`pnpm install --prod`, the
 * Docker image) leave it out.
 */
export const PRETTY_LOGS_UNAVAILABLE =
  'LOG_FORMAT=pretty needs pino-pretty, a development dependency that is not installed here ' +
  '(production installs leave it out); writing JSON lines instead. Install it ' +
  '(pnpm add -D pino-pretty) or set LOG_FORMAT=json';

const require = createRequire(import.meta.url);

/**
 * A pino-pretty stream writing to `destination` (stdout when absent), or `undefined` when
 * pino-pretty is not installed. Loaded on first use only, so a process that logs JSON never
 * needs the package.
 */
export function loadPrettyStream(destination?: DestinationStream): DestinationStream | undefined {
  let prettyModule: PinoPrettyModule;
  try {
    prettyModule = require('pino-pretty') as PinoPrettyModule;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
  // In-process and synchronous (no transport thread), so nothing is lost on exit.
  return prettyModule.PinoPretty({
    sync: true,
    colorize: process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: true,
    ...(destination ? { destination } : {}),
  });
}
