import { randomUUID } from 'node:crypto';
import { posix } from 'node:path';
import type { ConnectionOpts, Sandbox } from 'e2b';
import { pythonMain } from '../python-prelude.js';
import {
  SandboxError,
  type CodeLanguage,
  type ExecOptions,
  type ExecResult,
  type SandboxHandle,
  type SandboxListing,
  type SandboxMetadata,
  type SandboxProvider,
  type SandboxSpec,
} from '../sandbox.js';
import { E2B_WORKDIR, runCommand } from './e2b-command.js';
import { collectImages, listFiles, readAtMost } from './e2b-listing.js';
import { e2b, isE2bError, providerCall, providerError, toArrayBuffer } from './e2b-sdk.js';

export { E2B_MAX_STREAMED_BYTES, E2B_WORKDIR } from './e2b-command.js';

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

/** Where code files and figures of a call live, under `/tmp` (cleared with the call). */
const RUN_DIR = '/tmp/.run';

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
      let stream: ReadableStream<Uint8Array>;
      try {
        stream = await sandbox.files.read(insidePath(path), { format: 'stream' });
      } catch (error) {
        if (isE2bError(error, 'NotFoundError')) {
          throw new SandboxError('not_found', `${path} does not exist`, { cause: error });
        }
        throw providerError('read the file', error);
      }
      const data = await readAtMost(stream, maxBytes);
      return { data: data.subarray(0, maxBytes), truncated: data.length > maxBytes };
    },
    async listFiles(path, depth, options = {}) {
      return listFiles(sandbox, insidePath(path), path, depth, options);
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
  if (language !== 'python') return { ...result, images: [] };
  return { ...result, ...(await collectImages(sandbox, outputs, options)) };
}

/** A file tool's path inside the sandbox, if it is under the home directory or `/tmp`. */
function insidePath(path: string): string {
  const at = posix.resolve(E2B_WORKDIR, path);
  for (const root of [E2B_WORKDIR, '/tmp']) {
    if (at === root || at.startsWith(`${root}/`)) return at;
  }
  throw new SandboxError('path_outside', `${path} is outside the sandbox's home and /tmp`);
}
