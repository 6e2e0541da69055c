import type * as Http from 'node:http';
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { SandboxError } from '../sandbox.js';

// Node's http as its CommonJS object, not `import ... from 'node:http'`: an ES import of it reads
// every export, and its lazy `WebSocket`, `CloseEvent` and `MessageEvent` load Node's bundled
// undici, ~5 MB resident in a process that never uses fetch (docs/BENCHMARKS.md, "Footprint").
// `createRequire`, not `process.getBuiltinModule`, which Node 22 has only since 22.3.
const { request } = createRequire(import.meta.url)('node:http') as typeof Http;

/**
 * A minimal client of the Docker Engine API (also served by Podman's Docker-compatible API):
 * JSON requests over the engine's unix socket or TCP, and the multiplexed output stream of an
 * exec. Six endpoints do not warrant an SDK.
 */
export class DockerEngine {
  private readonly target: { socketPath: string } | { host: string; port: number };

  /** `host`: `DOCKER_HOST`, `unix:///var/run/docker.sock` or `tcp://127.0.0.1:2375`. */
  constructor(host: string) {
    const url = new URL(host);
    if (url.protocol === 'unix:') this.target = { socketPath: url.pathname };
    else if (url.protocol === 'tcp:' || url.protocol === 'http:') {
      this.target = { host: url.hostname, port: Number(url.port || 2375) };
    } else {
      throw new SandboxError('unavailable', `unsupported DOCKER_HOST ${host} (unix:// or tcp://)`);
    }
  }

  /** A JSON request; resolves with the status and the parsed body (if any). */
  async json<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T | undefined }> {
    const response = await this.send(method, path, body);
    const text = await readText(response);
    return {
      status: response.statusCode ?? 0,
      body: text ? (JSON.parse(text) as T) : undefined,
    };
  }

  /**
   * Starts an exec and feeds its stdout and stderr frames to `onFrame` until the process ends
   * (the engine closes the stream).
   */
  async attachExec(
    execId: string,
    onFrame: (stream: 'stdout' | 'stderr', data: Buffer) => void,
  ): Promise<void> {
    const response = await this.send('POST', `/exec/${execId}/start`, {
      Detach: false,
      Tty: false,
    });
    if (response.statusCode !== 200 && response.statusCode !== 101) {
      throw engineError(`start exec ${execId}`, response.statusCode, await readText(response));
    }
    let pending: Buffer = Buffer.alloc(0);
    for await (const chunk of response) {
      pending = pending.length ? Buffer.concat([pending, chunk as Buffer]) : (chunk as Buffer);
      // Frames: 1 byte stream (1 stdout, 2 stderr), 3 zero bytes, 4 bytes big-endian length.
      while (pending.length >= 8) {
        const size = pending.readUInt32BE(4);
        if (pending.length < 8 + size) break;
        const kind = pending[0] === 2 ? 'stderr' : 'stdout';
        onFrame(kind, pending.subarray(8, 8 + size));
        pending = pending.subarray(8 + size);
      }
    }
  }

  private send(method: string, path: string, body?: unknown): Promise<IncomingMessage> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = request(
        {
          ...this.target,
          method,
          path,
          headers: {
            host: 'docker',
            ...(payload
              ? { 'content-type': 'application/json', 'content-length': payload.length }
              : {}),
          },
        },
        resolve,
      );
      req.once('error', (error) =>
        reject(
          new SandboxError('unavailable', `the Docker engine: ${error.message}`, { cause: error }),
        ),
      );
      req.end(payload);
    });
  }
}

/** An engine answer that is not a success, as the port's error. */
export function engineError(what: string, status: number | undefined, text: string): SandboxError {
  let message = text;
  try {
    message = (JSON.parse(text) as { message?: string }).message ?? text;
  } catch {
    // not JSON: the text as is
  }
  return new SandboxError(
    status === 404 ? 'not_found' : 'provider_error',
    `Docker: could not ${what}: ${status} ${message}`.trim(),
  );
}

async function readText(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
