import { constants } from 'node:os';
import type { AgentTool, ToolOutput } from '@agent-backend/agent-runtime';
import {
  MAX_IMAGE_BYTES,
  MAX_IMAGE_BYTES_PER_CALL,
  MAX_IMAGES_PER_CALL,
  SandboxError,
  type CodeLanguage,
  type ExecResult,
  type SandboxFileEntry,
  type SandboxHandle,
} from './sandbox.js';

/** Limits of the code tools (configuration: `SANDBOX_*`, docs/sandbox.md). */
export interface SandboxToolSettings {
  /** Deadline of one call. */
  readonly timeoutMs: number;
  /** stdout and stderr are each cut at this many bytes. */
  readonly maxOutputBytes: number;
  /** `read_file` reads at most this much. */
  readonly maxReadBytes: number;
}

/** The session's sandbox, made on first use, and the idle clock. */
export interface SandboxAccess {
  sandbox(signal: AbortSignal): Promise<SandboxHandle>;
  touch(): Promise<void>;
}

const LANGUAGES: readonly CodeLanguage[] = ['python', 'javascript', 'bash'];

const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name]));

/**
 * The exit code, with the signal named when a shell reports one (128 + its number): how a
 * sandbox limit (CPU time, memory) or a kill shows, so the model knows it was not the code's own.
 */
function exitText(code: number | null): string {
  if (code === null) return 'killed';
  const signal = code > 128 ? SIGNAL_NAMES.get(code - 128) : undefined;
  if (!signal) return String(code);
  return `${code} (killed by ${signal}: a sandbox limit such as CPU time or memory, or a kill)`;
}

function describe(result: ExecResult, settings: SandboxToolSettings): ToolOutput {
  const parts: string[] = [];
  if (result.timedOut) {
    parts.push(`Killed: the call ran past its ${settings.timeoutMs / 1000} s deadline.`);
  } else {
    parts.push(`Exit code: ${exitText(result.exitCode)}`);
  }
  if (result.stdout) parts.push(`stdout:\n${result.stdout}`);
  if (result.stderr) parts.push(`stderr:\n${result.stderr}`);
  if (result.truncated) {
    parts.push(`[output cut at ${settings.maxOutputBytes} bytes per stream]`);
  }
  if (result.images.length > 0) {
    parts.push(`${result.images.length} image(s) produced (PNG), shown to the user.`);
  }
  if (result.imagesLeftOut) {
    parts.push(
      `${result.imagesLeftOut} more image file(s) left out: a call returns at most ` +
        `${MAX_IMAGES_PER_CALL} images and ${MAX_IMAGE_BYTES_PER_CALL / 1024 ** 2} MiB in all, ` +
        `each a PNG of at most ${MAX_IMAGE_BYTES / 1024 ** 2} MiB.`,
    );
  }
  return {
    content: parts.join('\n\n'),
    ...(result.images.length > 0 ? { images: result.images } : {}),
    ...(result.timedOut ? { isError: true } : {}),
  };
}

function failure(error: unknown): ToolOutput {
  if (error instanceof SandboxError) return { content: error.message, isError: true };
  throw error;
}

function text(args: Record<string, unknown>, key: string): string {
  const value = args[key];
  if (typeof value !== 'string')
    throw new SandboxError('provider_error', `${key} must be a string`);
  return value;
}

/**
 * The code tools of a run with a sandbox: `execute_code`, `run_command` and
 * `write_file` change the sandbox (write tools: not in `ask`, not executed in `plan`, subject to
 * HITL); `read_file` and `list_files` only read. All run one at a time in a turn, since they
 * share one working directory.
 */
export function sandboxTools(access: SandboxAccess, settings: SandboxToolSettings): AgentTool[] {
  const limits = (signal: AbortSignal) => ({
    timeoutMs: settings.timeoutMs,
    maxOutputBytes: settings.maxOutputBytes,
    signal,
  });
  const run = async (signal: AbortSignal, fn: (sandbox: SandboxHandle) => Promise<ToolOutput>) => {
    try {
      const output = await fn(await access.sandbox(signal));
      await access.touch();
      return output;
    } catch (error) {
      return failure(error);
    }
  };
  return [
    {
      name: 'execute_code',
      description:
        "Runs code in the session's sandbox (python, javascript or bash) and returns stdout, " +
        'stderr and the exit code; figures drawn with matplotlib come back as images. Files ' +
        'persist between calls in the working directory.',
      parameters: {
        type: 'object',
        properties: {
          language: { type: 'string', enum: LANGUAGES },
          code: { type: 'string', description: 'The program to run.' },
        },
        required: ['language', 'code'],
        additionalProperties: false,
      },
      writes: true,
      parallelSafe: false,
      execute: (args, context) =>
        run(context.signal, async (sandbox) => {
          const language = text(args, 'language') as CodeLanguage;
          if (!LANGUAGES.includes(language)) {
            return { content: `language must be one of ${LANGUAGES.join(', ')}`, isError: true };
          }
          const result = await sandbox.runCode(
            language,
            text(args, 'code'),
            limits(context.signal),
          );
          return describe(result, settings);
        }),
    },
    {
      name: 'run_command',
      description: "Runs a shell command line (bash) in the sandbox's working directory.",
      parameters: {
        type: 'object',
        properties: { command: { type: 'string' } },
        required: ['command'],
        additionalProperties: false,
      },
      writes: true,
      parallelSafe: false,
      execute: (args, context) =>
        run(context.signal, async (sandbox) =>
          describe(
            await sandbox.runCommand(text(args, 'command'), limits(context.signal)),
            settings,
          ),
        ),
    },
    {
      name: 'write_file',
      description:
        'Writes a text file in the sandbox (relative paths start at the working directory).',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' }, content: { type: 'string' } },
        required: ['path', 'content'],
        additionalProperties: false,
      },
      writes: true,
      parallelSafe: false,
      execute: (args, context) =>
        run(context.signal, async (sandbox) => {
          const content = text(args, 'content');
          await sandbox.writeFile(text(args, 'path'), content);
          return { content: `Wrote ${Buffer.byteLength(content)} bytes to ${text(args, 'path')}.` };
        }),
    },
    {
      name: 'read_file',
      description: 'Reads a text file of the sandbox.',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' } },
        required: ['path'],
        additionalProperties: false,
      },
      writes: false,
      parallelSafe: false,
      execute: (args, context) =>
        run(context.signal, async (sandbox) => {
          const file = await sandbox.readFile(text(args, 'path'), settings.maxReadBytes);
          const body = Buffer.from(file.data).toString('utf8');
          return {
            content: file.truncated ? `${body}\n[cut at ${settings.maxReadBytes} bytes]` : body,
          };
        }),
    },
    {
      name: 'list_files',
      description: 'Lists a directory of the sandbox (default: the working directory).',
      parameters: {
        type: 'object',
        properties: {
          path: { type: 'string' },
          depth: { type: 'integer', minimum: 1, maximum: 5, description: 'Levels (default 2).' },
        },
        additionalProperties: false,
      },
      writes: false,
      parallelSafe: false,
      execute: (args, context) =>
        run(context.signal, async (sandbox) => {
          const path = typeof args.path === 'string' && args.path ? args.path : '.';
          const depth = typeof args.depth === 'number' ? Math.min(5, Math.max(1, args.depth)) : 2;
          const listing = await sandbox.listFiles(path, depth, {
            limit: MAX_LISTED,
            signal: context.signal,
            timeoutMs: settings.timeoutMs,
          });
          if (listing.length === 0 && !listing.cut) return { content: `${path} is empty.` };
          const lines = listing.map(listedLine);
          if (listing.cut) {
            lines.push(
              `[list cut: more entries than shown (at most ${MAX_LISTED}); list a subdirectory or ` +
                'a smaller depth]',
            );
          }
          return { content: lines.join('\n') };
        }),
    },
  ];
}

/** Entries `list_files` answers at most. */
const MAX_LISTED = 500;

/**
 * Characters that could make one name read as several lines or hide what follows: C0 and C1
 * controls (newline, carriage return, escape sequences), DEL, the Unicode line and paragraph
 * separators, and the bidirectional overrides.
 */
// eslint-disable-next-line no-control-regex -- control characters are what is matched.
const UNSAFE_IN_NAME = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

/**
 * One `list_files` line. A path with a character of {@link UNSAFE_IN_NAME}, or starting with a
 * quote, is written as a JSON string (escaped), so a name the code chose cannot fake further
 * entries or a size: every other line is the plain path.
 */
function listedLine(entry: SandboxFileEntry): string {
  const unsafe = entry.path.search(UNSAFE_IN_NAME) !== -1 || entry.path.startsWith('"');
  // JSON.stringify leaves DEL, C1, the separators and the overrides as they are: escaped here.
  const path = unsafe
    ? JSON.stringify(entry.path).replace(
        UNSAFE_IN_NAME,
        (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
      )
    : entry.path;
  return entry.type === 'directory' ? `${path}/` : `${path} (${entry.size ?? 0} bytes)`;
}
