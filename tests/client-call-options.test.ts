/**
 * The SDK's per-call options and error classes against the all-in-one, through a TCP proxy
 * that stalls or drops connections the way a frozen server or a broken network does:
 * `timeout`, `retries` (an idempotent call sent again, a POST never), `signal`, and each
 * refusal thrown as the class of its `code`.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  runEntry,
  startServiceProcess,
  startTcpProxy,
  type ServiceProcess,
  type TcpProxy,
} from '@agent-backend/testing';
import {
  AgentBackendClient,
  ApiError,
  NotFoundError,
  TimeoutError,
  UnauthorizedError,
  ValidationError,
} from '../packages/client/src/index.js';
import { requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';

describe('SDK call options', () => {
  const env = { DATA_DIR: tempDir('client-call-options'), LOG_LEVEL: 'info' };
  let service: ServiceProcess;
  let proxy: TcpProxy;
  let token: string;
  /** A client whose requests go through the proxy. */
  const client = (options: { token?: string } = {}) =>
    new AgentBackendClient({
      baseUrl: `http://127.0.0.1:${proxy.port}`,
      token: options.token ?? token,
    });

  beforeAll(async () => {
    requireBuild(MAIN, TOKEN_ISSUE);
    service = await startServiceProcess({ entry: MAIN, env, timeoutMs: 200_000 });
    proxy = await startTcpProxy({ host: '127.0.0.1', port: service.port });
    token = (
      JSON.parse((await runEntry(TOKEN_ISSUE, ['gwen'], env)).stdout) as { accessToken: string }
    ).accessToken;
  }, 300_000);
  afterAll(async () => {
    await proxy?.close();
    await service?.stop('SIGKILL');
  });

  it('gives up after `timeout` on a server that does not answer', async () => {
    proxy.setMode('stall');
    try {
      const error = await client()
        .skills.list({ timeout: 300 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TimeoutError);
      expect(error).toMatchObject({ name: 'TimeoutError', timeoutMs: 300 });
    } finally {
      proxy.setMode('forward');
    }
    expect(await client().skills.list({ timeout: 30_000 })).toEqual(expect.any(Array));
  });

  it('rejects with the signal’s reason when aborted', async () => {
    proxy.setMode('stall');
    try {
      const controller = new AbortController();
      const pending = client()
        .knowledgeBases.list({ signal: controller.signal })
        .catch((e: unknown) => e);
      const reason = new Error('the user left the page');
      controller.abort(reason);
      expect(await pending).toBe(reason);
    } finally {
      proxy.setMode('forward');
    }
  });

  it('sends a GET again after a dropped connection, within `retries`', async () => {
    proxy.setMode('drop');
    const before = proxy.accepted;
    const listed = client().memories.list({}, { retries: 6 });
    // The first attempt was dropped: the network is back before the next one.
    await vi.waitFor(() => expect(proxy.accepted).toBeGreaterThan(before), { timeout: 10_000 });
    proxy.setMode('forward');
    expect(await listed).toMatchObject({ memories: [] });
  });

  it('iterates a paginated list with the call options', async () => {
    const memories = [];
    for await (const memory of client().memories.iterate({ limit: 5 }, { timeout: 30_000 })) {
      memories.push(memory);
    }
    expect(memories).toEqual([]);
  });

  it('never sends a POST twice after a network failure', async () => {
    proxy.setMode('drop');
    const sent: string[] = [];
    const counting = new AgentBackendClient({
      baseUrl: `http://127.0.0.1:${proxy.port}`,
      token,
      fetch: (input, init) => {
        sent.push(`${init?.method} ${String(input)}`);
        return fetch(input, init);
      },
    });
    try {
      const error = await counting.knowledgeBases
        .create({ name: 'once' }, { retries: 3 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      expect(sent).toEqual([`POST http://127.0.0.1:${proxy.port}/api/knowledge-bases`]);
    } finally {
      proxy.setMode('forward');
    }
    expect(await client().knowledgeBases.list()).toEqual([]);
  });

  it('throws the class of each refusal’s code, still an ApiError', async () => {
    const notFound = await client()
      .knowledgeBases.delete('kb_missing')
      .catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(notFound).toBeInstanceOf(ApiError);
    expect(notFound).toMatchObject({ status: 404, code: 'not_found', name: 'NotFoundError' });

    const invalid = await client()
      .knowledgeBases.create({ name: '' })
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(ValidationError);
    expect(invalid).toMatchObject({ status: 400, code: 'invalid_request' });

    const unauthorized = await client({ token: 'not-a-token' })
      .skills.list()
      .catch((e: unknown) => e);
    expect(unauthorized).toBeInstanceOf(UnauthorizedError);
    expect(unauthorized).toMatchObject({ status: 401, code: 'unauthorized' });
  });
});
