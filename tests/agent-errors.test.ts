import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply, type ScriptStep } from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';

const API_KEY = 'sk-provider-error-key-7e2d91';

/** Provider failures become an `error` event with a stable code; nothing crashes or leaks the key. */
describe('agent invoke: provider failures', () => {
  let cluster: AgentCluster;
  let alice: string;
  let silent: Server;
  let silentPort: number;
  let closedPort: number;

  beforeAll(async () => {
    cluster = await startAgentCluster({
      AGENT_LLM_MAX_RETRIES: '1',
      AGENT_LLM_TIMEOUT_MS: '700',
      AGENT_LLM_IDLE_TIMEOUT_MS: '700',
    });
    alice = await cluster.token('alice');
    silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentPort = (silent.address() as { port: number }).port;
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    closedPort = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
  });
  afterAll(async () => {
    silent?.close();
    await cluster?.stop();
  });

  async function failWith(steps: ScriptStep[], baseUrl?: string) {
    const name = `e-${Math.random().toString(36).slice(2, 8)}`;
    cluster.model.script(name, steps);
    const stream = await invoke(cluster.api[0]!.url, alice, {
      message: 'hello',
      llm_config: { baseUrl: baseUrl ?? cluster.model.baseUrl, apiKey: API_KEY, modelName: name },
    });
    expect(stream.response.status).toBe(200);
    const events = await stream.ended;
    expect(events[0]!.data.type).toBe('session');
    const last = events.at(-1)!.data as { type: string; code: string; message: string };
    expect(last.type).toBe('error');
    expect(events.some((e) => e.data.type === 'done')).toBe(false);
    expect(JSON.stringify(events)).not.toContain(API_KEY);
    return { error: last, requests: cluster.model.requests(name) };
  }

  const retry = { 'retry-after-ms': '10' };

  it.each([
    [
      '401, quoting the key',
      'llm_auth_failed',
      1,
      [{ kind: 'error', status: 401, message: `Incorrect API key provided: ${API_KEY}` }],
    ],
    [
      '429 twice',
      'llm_rate_limited',
      2,
      [1, 2].map(() => ({
        kind: 'error',
        status: 429,
        message: 'Rate limit reached',
        headers: retry,
      })),
    ],
    [
      '500 twice',
      'llm_unavailable',
      2,
      [1, 2].map(() => ({ kind: 'error', status: 500, message: 'internal', headers: retry })),
    ],
    [
      '400 (unknown model)',
      'llm_request_rejected',
      1,
      [{ kind: 'error', status: 400, message: 'The model does not exist' }],
    ],
    [
      'a malformed stream',
      'llm_bad_response',
      1,
      [{ kind: 'stream', pieces: [{ text: 'ok' }, { raw: 'data: {"choices": [\n\n' }] }],
    ],
    [
      'a connection dropped mid-answer',
      'llm_unavailable',
      1,
      [{ kind: 'drop', pieces: [{ text: 'Hal' }] }],
    ],
    [
      'a stream that stalls',
      'llm_timeout',
      1,
      [{ kind: 'stream', pieces: [{ text: 'Hal' }, { waitMs: 5_000 }, { finish: 'stop' }] }],
    ],
  ] as Array<[string, string, number, ScriptStep[]]>)(
    '%s → %s',
    async (_name, code, attempts, steps) => {
      const { error, requests } = await failWith(steps);
      expect(error.code).toBe(code);
      expect(error.message.length).toBeGreaterThan(0);
      expect(requests).toHaveLength(attempts);
    },
  );

  it('quotes the provider message without the key', async () => {
    const { error } = await failWith([
      { kind: 'error', status: 401, message: `Incorrect API key provided: ${API_KEY}` },
    ]);
    expect(error.message).toBe(
      'the model provider rejected the API key (HTTP 401): Incorrect API key provided: [REDACTED]',
    );
  });

  it('reports a base URL that refuses connections, and one that never answers', async () => {
    const refused = await failWith([], `http://127.0.0.1:${closedPort}/v1`);
    expect(refused.error.code).toBe('llm_connect_failed');
    expect(refused.error.message).toContain('the connection was refused');
    const hanging = await failWith([], `http://127.0.0.1:${silentPort}/v1`);
    expect(hanging.error.code).toBe('llm_timeout');
  });

  it('keeps serving after every failure and never logs the API key', async () => {
    cluster.model.script('e-after', [textReply('Still alive.')]);
    const events = await (
      await invoke(cluster.api[0]!.url, alice, {
        message: 'ok?',
        llm_config: { baseUrl: cluster.model.baseUrl, apiKey: API_KEY, modelName: 'e-after' },
      })
    ).ended;
    expect(events.at(-1)!.data.type).toBe('done');
    const logs = cluster.logs();
    expect(logs).toContain('"code":"llm_auth_failed"');
    expect(logs).not.toContain(API_KEY);
    expect(logs).not.toContain('provider-error-key');
  });
});
