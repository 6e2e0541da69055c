import { randomUUID } from 'node:crypto';
import { posix } from 'node:path';
import type { CommandExitError, CommandResult, ConnectionOpts, Sandbox } from 'e2b';
import { CappedOutput } from '../capped-output.js';
import { pythonMain } from '../python-prelude.js';
import {
  MAX_IMAGE_BYTES,
  SandboxError,
  type CodeLanguage,
  type ExecImage,
  type ExecOptions,
  type ExecResult,
  type SandboxFileEntry,
  type SandboxHandle,
  type SandboxListing,
  type SandboxMetadata,
  type SandboxProvider,
  type SandboxSpec,
} from '../sandbox.js';

/** How the service reaches E2B (`E2B_*` variables, docs/sandbox.md). */
export interface E2BOptions {
  readonly apiKey: string;
  /** The template sandboxes start from; it must have python3 (matplotlib for figures), node, bash. */
  readonly template: string;
  /** E2B's control API; unset: the SDK's (`https://api.<domain>`). */
  readonly apiUrl?: string;
  /** One origin for every sandbox's envd (E2B's sandbox proxy); unset: the SDK's. */
  readonly sandboxUrl?: string;
  readonly domain?: string;
  /**
   * E2B's own lifetime of a sandbox after each create or connect: then E2B pauses it. A safety net
   * under the service's own idle sweep, for when no worker runs it.
   */
  readonly lifetimeMs: number;
  /** Give sandboxes internet access. @default true (E2B's default) */
  readonly internet?: boolean;
}

/** The working directory of E2B's templates (the `user` user's home). */
export const E2B_WORKDIR = '/home/user';
/** Where code files and figures of a call live, under `/tmp` (cleared with the call). */
const RUN_DIR = '/tmp/.run';
/**
 * The SDK keeps all of a command's output in memory; a call that prints more than this in all is
 * stopped (its first `maxOutputBytes` are kept, as always), so one call cannot fill the service's
 * memory.
 */
export const E2B_MAX_STREAMED_BYTES = 16 * 1024 * 1024;

/**
 * `cloud` sandboxes on E2B (Firecracker microVMs), through E2B's official SDK (`e2b`). A sandbox
 * is one microVM with the session's files in its home directory; it is found again on any
 * replica by its id, paused by E2B's pause API (memory and files kept, no compute billed) and
 * killed by the reaper. Metadata `userId`, `sessionId`, `deployment` label each sandbox, so the
 * reaper lists a deployment's sandboxes with E2B's metadata filter.
 *
 * Files: paths resolve against `/home/user`; only paths under it or under `/tmp` are read or
 * written by the file tools (as in local sandboxes), though code may touch the whole VM: the VM
 * is the boundary.
 */
export class E2BSandboxProvider implements SandboxProvider {
  readonly name = 'e2b';
  readonly mode = 'cloud' as const;
  readonly workdir = E2B_WORKDIR;
  private readonly connection: ConnectionOpts;

  constructor(private readonly options: E2BOptions) {
    this.connection = {
      apiKey: options.apiKey,
      ...(options.apiUrl ? { apiUrl: options.apiUrl } : {}),
      ...(options.sandboxUrl ? { sandboxUrl: options.sandboxUrl } : {}),
      ...(options.domain ? { domain: options.domain } : {}),
    };
  }

  async create(spec: SandboxSpec): Promise<SandboxHandle> {
    const metadata: Record<keyof SandboxMetadata, string> = {
      userId: spec.metadata.userId,
      sessionId: spec.metadata.sessionId,
      deployment: spec.metadata.deployment,
    };
    const { Sandbox } = await e2b();
    const sandbox = await providerCall('create a sandbox', () =>
      Sandbox.create(this.options.template, {
        ...this.connection,
        metadata,
        timeoutMs: this.options.lifetimeMs,
        lifecycle: { onTimeout: 'pause' },
        allowInternetAccess: this.options.internet ?? true,
      }),
    );
    return handleOf(sandbox);
  }

  async connect(id: string): Promise<SandboxHandle | undefined> {
    const { Sandbox } = await e2b();
    try {
      const sandbox = await Sandbox.connect(id, {
        ...this.connection,
        timeoutMs: this.options.lifetimeMs,
      });
      return handleOf(sandbox);
    } catch (error) {
      if (isE2bError(error, 'SandboxNotFoundError') || isE2bError(error, 'NotFoundError'))
        return undefined;
      throw providerError('reconnect to the sandbox', error);
    }
  }

  async pause(id: string): Promise<void> {
    const { Sandbox } = await e2b();
    try {
      await Sandbox.pause(id, this.connection);
    } catch (error) {
      if (isE2bError(error, 'SandboxNotFoundError') || isE2bError(error, 'NotFoundError')) return;
      throw providerError('pause the sandbox', error);
    }
  }

  async destroy(id: string): Promise<void> {
    // `kill` answers false for a sandbox that is gone.
    const { Sandbox } = await e2b();
    await providerCall('destroy the sandbox', () => Sandbox.kill(id, this.connection));
  }

  async list(deployment: string): Promise<SandboxListing[]> {
    const { Sandbox } = await e2b();
    const pages = Sandbox.list({
      ...this.connection,
      query: { metadata: { deployment }, state: ['running', 'paused'] },
      limit: 100,
    });
    const out: SandboxListing[] = [];
    while (pages.hasNext) {
      for (const info of await providerCall('list sandboxes', () => pages.nextItems())) {
        out.push({
          id: info.sandboxId,
          metadata: info.metadata,
          startedAt: info.startedAt,
          state: info.state === 'paused' ? 'paused' : 'running',
        });
      }
    }
    return out;
  }
}

function handleOf(sandbox: Sandbox): SandboxHandle {
  const exec = (command: string, options: ExecOptions) => runCommand(sandbox, command, options);
  return {
    id: sandbox.sandboxId,
    workdir: E2B_WORKDIR,
    async runCode(language, code, options) {
      return runCode(sandbox, language, code, options);
    },
    async runCommand(command, options) {
      return { ...(await exec(command, options)), images: [] };
    },
    async writeFile(path, data) {
      const at = insidePath(path);
      await providerCall('write the file', () =>
        sandbox.files.write(at, typeof data === 'string' ? data : toArrayBuffer(data), {
          useOctetStream: true,
        }),
      );
    },
    async readFile(path, maxBytes) {
      const at = insidePath(path);
      let stream: ReadableStream<Uint8Array>;
      try {
        stream = await sandbox.files.read(at, { format: 'stream' });
      } catch (error) {
        if (isE2bError(error, 'NotFoundError')) {
          throw new SandboxError('not_found', `${path} does not exist`, { cause: error });
        }
        throw providerError('read the file', error);
      }
      // Only the first maxBytes (and one more, to know it is longer) cross the network.
      const chunks: Uint8Array[] = [];
      let size = 0;
      const reader = stream.getReader();
      try {
        while (size <= maxBytes) {
          const { done, value } = await reader.read();
          if (done) break;
          chunks.push(value);
          size += value.length;
        }
      } finally {
        await reader.cancel().catch(() => undefined);
      }
      const data = Buffer.concat(chunks, size);
      return { data: data.subarray(0, maxBytes), truncated: size > maxBytes };
    },
    async listFiles(path, depth) {
      const at = insidePath(path);
      let entries;
      try {
        entries = await sandbox.files.list(at, { depth });
      } catch (error) {
        if (isE2bError(error, 'NotFoundError')) {
          throw new SandboxError('not_found', `${path} is not a directory`, { cause: error });
        }
        throw providerError('list the directory', error);
      }
      const files: SandboxFileEntry[] = [];
      for (const entry of entries) {
        const relative = posix.relative(at, entry.path);
        if (entry.type === 'dir') files.push({ path: relative, type: 'directory' });
        else if (entry.type === 'file')
          files.push({ path: relative, type: 'file', size: entry.size });
      }
      return files;
    },
  };
}

async function runCode(
  sandbox: Sandbox,
  language: CodeLanguage,
  code: string,
  options: ExecOptions,
): Promise<ExecResult> {
  const name = randomUUID();
  const outputs = `${RUN_DIR}/${name}-out`;
  const file = `${RUN_DIR}/${name}.${language === 'python' ? 'py' : language === 'javascript' ? 'mjs' : 'sh'}`;
  const files = [{ path: file, data: code }];
  let command: string;
  if (language === 'python') {
    files.push({ path: `${RUN_DIR}/${name}-main.py`, data: pythonMain(outputs, file) });
    command = `mkdir -p ${outputs} && python3 ${RUN_DIR}/${name}-main.py`;
  } else if (language === 'javascript') {
    command = `node ${file}`;
  } else {
    command = `bash ${file}`;
  }
  // One upload for the code files; the command removes them when it ends.
  await providerCall('upload the code', () => sandbox.files.write(files));
  const result = await runCommand(
    sandbox,
    `${command}; __ab_status=$?; rm -f ${RUN_DIR}/${name}.* ${RUN_DIR}/${name}-main.py; exit $__ab_status`,
    options,
  );
  return { ...result, images: language === 'python' ? await collectImages(sandbox, outputs) : [] };
}

/** The PNGs the python prelude saved, in order; the directory is removed after. */
async function collectImages(sandbox: Sandbox, dir: string): Promise<ExecImage[]> {
  let entries;
  try {
    entries = await sandbox.files.list(dir);
  } catch {
    return [];
  }
  const images: ExecImage[] = [];
  const pngs = entries
    .filter((e) => e.type === 'file' && e.name.toLowerCase().endsWith('.png'))
    .sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of pngs) {
    if (entry.size > MAX_IMAGE_BYTES) continue;
    const data = await providerCall('read a figure', () =>
      sandbox.files.read(entry.path, { format: 'bytes' }),
    );
    images.push({ data: Buffer.from(data).toString('base64'), mimeType: 'image/png' });
  }
  await sandbox.commands.run(`rm -rf ${dir}`).catch(() => undefined);
  return images;
}

/**
 * Runs `bash -c command` in the workdir with the call's deadline: at the deadline, on abort, or
 * once it printed {@link E2B_MAX_STREAMED_BYTES}, the process is killed in the sandbox (E2B
 * would otherwise leave it running after the stream ends).
 */
async function runCommand(
  sandbox: Sandbox,
  command: string,
  options: ExecOptions,
): Promise<Omit<ExecResult, 'images'>> {
  const stdout = new CappedOutput(options.maxOutputBytes);
  const stderr = new CappedOutput(options.maxOutputBytes);
  let timedOut = false;
  let stopped = false;
  let pid: number | undefined;
  const stop = () => {
    if (stopped || pid === undefined) return;
    stopped = true;
    void sandbox.commands.kill(pid).catch(() => undefined);
  };
  const onOutput = (into: CappedOutput) => (text: string) => {
    into.push(Buffer.from(text));
    if (stdout.seen + stderr.seen > E2B_MAX_STREAMED_BYTES) stop();
  };
  const controller = new AbortController();
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
    // A sandbox that does not answer the kill still ends the call, a second later.
    setTimeout(() => controller.abort(), 1_000).unref();
  }, options.timeoutMs);
  const onAbort = () => {
    stop();
    controller.abort();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let result: CommandResult | undefined;
  try {
    const handle = await providerCall('start the command', () =>
      sandbox.commands.run(command, {
        background: true,
        cwd: E2B_WORKDIR,
        onStdout: onOutput(stdout),
        onStderr: onOutput(stderr),
        signal: controller.signal,
        // The stream itself may last a little longer than the call: the kill ends it.
        timeoutMs: options.timeoutMs + 5_000,
      }),
    );
    pid = handle.pid;
    if (timedOut || options.signal?.aborted) stop();
    result = await handle.wait();
  } catch (error) {
    if (isE2bError(error, 'CommandExitError')) result = error as CommandExitError;
    else if (!timedOut && !stopped) {
      if (error instanceof SandboxError) throw error;
      throw providerError('run the command', error);
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
  return {
    stdout: stdout.text(),
    stderr: stderr.text(),
    exitCode: timedOut || stopped || result === undefined ? null : result.exitCode,
    timedOut,
    truncated: stdout.cut || stderr.cut,
  };
}

/** A file tool's path inside the sandbox, if it is under the home directory or `/tmp`. */
function insidePath(path: string): string {
  const at = posix.resolve(E2B_WORKDIR, path);
  for (const root of [E2B_WORKDIR, '/tmp']) {
    if (at === root || at.startsWith(`${root}/`)) return at;
  }
  throw new SandboxError('path_outside', `${path} is outside the sandbox's home and /tmp`);
}

const importSdk = () => import('e2b');
type E2bSdk = Awaited<ReturnType<typeof importSdk>>;
let sdk: E2bSdk | undefined;
let loading: Promise<E2bSdk> | undefined;

/**
 * The E2B SDK, imported on first use: it and its RPC stack take about a third of a second to
 * load, which every api and worker start would pay in a deployment without cloud sandboxes.
 */
async function e2b(): Promise<E2bSdk> {
  return (sdk ??= await (loading ??= importSdk()));
}

/** Whether `error` is the SDK's error class `name` (never before the SDK was loaded). */
function isE2bError(
  error: unknown,
  name: 'NotFoundError' | 'SandboxNotFoundError' | 'CommandExitError',
): boolean {
  return sdk !== undefined && error instanceof sdk[name];
}

function toArrayBuffer(data: Uint8Array): ArrayBuffer {
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
}

async function providerCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw providerError(what, error);
  }
}

/** E2B's errors as the port's: a sandbox that is gone is `unavailable`, the rest `provider_error`. */
function providerError(what: string, error: unknown): SandboxError {
  if (error instanceof SandboxError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = isE2bError(error, 'SandboxNotFoundError') ? 'unavailable' : 'provider_error';
  return new SandboxError(code, `E2B: could not ${what}: ${message}`, { cause: error });
}
