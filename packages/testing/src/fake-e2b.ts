import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeServer, killProcessGroup, listenOnLoopback } from './fake-http.js';
import { e2bControlApi } from './fake-e2b-api.js';
import { e2bEnvd } from './fake-e2b-envd.js';
import { fail, type E2BWorld, type FakeE2BSandbox, type LiveSandbox } from './fake-e2b-world.js';

export type { FakeE2BSandbox };

/**
 * A fake of E2B (`cloud` sandboxes) on loopback that speaks E2B's wire protocol, so the
 * real `e2b` SDK runs against it unchanged:
 *
 * - the control API (`apiUrl`): `POST /v2/sandboxes`, `POST /v2/sandboxes/{id}/connect`,
 *   `POST /sandboxes/{id}/pause`, `DELETE /sandboxes/{id}`, `GET /v2/sandboxes` (metadata and
 *   state filters, `x-next-token` pages), `X-API-KEY` checked, errors as `{ code, message }`;
 * - envd (`sandboxUrl`, one origin for every sandbox, told apart by the `E2b-Sandbox-Id` header as
 *   E2B's own sandbox proxy does): `GET`/`POST /files` (multipart or octet-stream), the Connect
 *   RPCs `process.Process/Start` (server streaming, `application/connect+json` envelopes),
 *   `process.Process/SendSignal` and `filesystem.Filesystem/ListDir` (unary JSON), the
 *   `X-Access-Token` checked, 502 for a sandbox that is not running.
 *
 * Behind it each sandbox is a directory: its home (`/home/user`) and `/tmp`, and processes run in
 * bubblewrap with those two mounted, so absolute paths inside mean what they mean in E2B. A
 * sandbox past its timeout is paused (`autoPause`) or killed, as E2B does.
 */
export interface FakeE2B {
  /** `E2B_API_URL`. */
  readonly apiUrl: string;
  /** `E2B_SANDBOX_URL`. */
  readonly sandboxUrl: string;
  readonly apiKey: string;
  /** The sandboxes as the provider sees them (killed ones are gone). */
  readonly sandboxes: ReadonlyMap<string, FakeE2BSandbox>;
  /** Every request, in order (method and path). */
  readonly requests: Array<{ readonly method: string; readonly path: string }>;
  /** The largest page `GET /v2/sandboxes` answers (E2B's is 100); lower it to test paging. */
  pageSize: number;
  /**
   * Sandbox ids whose control-API requests (connect, pause, kill) answer 500, as E2B does when
   * one sandbox's host is in trouble; remove an id to let it through again.
   */
  readonly failing: Set<string>;
  /**
   * While true, `POST /v2/sandboxes` creates the sandbox (it runs, and lists with its metadata)
   * but holds back its answer until {@link releaseCreates}: the window in which a client that
   * dies never learns the sandbox's id.
   */
  holdCreates: boolean;
  /**
   * Called before `GET /files` reads a file, with its host path: a test changes the file there,
   * as code still running in the sandbox would between a listing and a download.
   */
  beforeFileRead: ((host: string) => void | Promise<void>) | undefined;
  /** Sends the held create answers (the connection may be gone by then). */
  releaseCreates(): void;
  /** Processes running in a sandbox now. */
  running(id: string): number;
  close(): Promise<void>;
}

export async function startFakeE2B(options: { apiKey?: string } = {}): Promise<FakeE2B> {
  const apiKey = options.apiKey ?? `e2b_${randomBytes(12).toString('hex')}`;
  const base = await mkdtemp(join(tmpdir(), 'fake-e2b-'));
  const sandboxes = new Map<string, LiveSandbox>();
  const requests: Array<{ method: string; path: string }> = [];
  const failing = new Set<string>();
  let heldCreates: Array<() => void> = [];
  let nextPid = 100;

  /** Applies E2B's lifecycle lazily: a sandbox past `endAt` is paused or killed. */
  const current = async (id: string): Promise<LiveSandbox | undefined> => {
    const sandbox = sandboxes.get(id);
    if (sandbox && sandbox.state === 'running' && sandbox.endAt.getTime() <= Date.now()) {
      if (sandbox.autoPause) stopProcesses(sandbox, 'paused');
      else await kill(sandbox);
    }
    return sandboxes.get(id);
  };
  const stopProcesses = (sandbox: LiveSandbox, state: LiveSandbox['state']) => {
    for (const child of sandbox.processes.values()) killProcessGroup(child);
    sandbox.processes.clear();
    sandbox.state = state;
  };
  const kill = async (sandbox: LiveSandbox) => {
    stopProcesses(sandbox, 'paused');
    sandboxes.delete(sandbox.id);
    await rm(join(base, sandbox.id), { recursive: true, force: true });
  };

  const world: E2BWorld = {
    apiKey,
    base,
    sandboxes,
    requests,
    failing,
    settings: () => fake,
    held: () => new Promise<void>((resolve) => heldCreates.push(resolve)),
    current,
    stopProcesses,
    kill,
    nextPid: () => nextPid++,
  };
  const api = createServer((req, res) => {
    void control(req, res).catch((error: unknown) => fail(res, 500, String(error)));
  });
  const control = e2bControlApi(world);
  const envd = createServer((req, res) => {
    void daemon(req, res).catch((error: unknown) => {
      if (!res.headersSent) fail(res, 500, String(error));
      else res.destroy();
    });
  });
  const daemon = e2bEnvd(world);

  await Promise.all([listenOnLoopback(api), listenOnLoopback(envd)]);
  const fake: FakeE2B = {
    apiUrl: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
    sandboxUrl: `http://127.0.0.1:${(envd.address() as AddressInfo).port}`,
    apiKey,
    sandboxes,
    requests,
    pageSize: 100,
    failing,
    holdCreates: false,
    beforeFileRead: undefined,
    releaseCreates() {
      const held = heldCreates;
      heldCreates = [];
      for (const release of held) release();
    },
    running: (id) => sandboxes.get(id)?.processes.size ?? 0,
    async close() {
      fake.releaseCreates();
      for (const sandbox of sandboxes.values()) stopProcesses(sandbox, 'paused');
      await Promise.all([closeServer(api), closeServer(envd)]);
      await rm(base, { recursive: true, force: true });
    },
  };
  return fake;
}
