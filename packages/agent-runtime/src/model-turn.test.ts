import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_METRICS, type AgentMetrics } from '@agent-backend/metrics';
import {
  startScriptedModel,
  textReply,
  toolCallsReply,
  type ScriptedModel,
  type ScriptStep,
} from '@agent-backend/testing';
import { createUrlGuard } from '@agent-backend/url-guard';
import { AgentRunError } from './errors.js';
import { createLlmClient } from './llm-client.js';
import { streamModelTurn, TurnAbortedError, type ModelTurn } from './model-turn.js';
import { ModelUrlGuard } from './model-url-guard.js';

const API_KEY = 'sk-unit-secret-0a1b2c3d4e';
let model: ScriptedModel;
/**
 * The same behaviour is asserted through the platform `fetch` and through the guarded one the
 * api role gives user-supplied base URLs (private networks allowed here: every server of this
 * file is on loopback; the policy itself is tested in `model-url-guard.test.ts`).
 */
const guarded = new ModelUrlGuard(createUrlGuard({ allowPrivateNetworks: true }));
let guard: ModelUrlGuard | undefined;
beforeAll(async () => {
  model = await startScriptedModel();
});
afterAll(async () => {
  guarded.close();
  await model.close();
});

let counter = 0;
async function turn(
  steps: ScriptStep[],
  options: {
    baseUrl?: string;
    signal?: AbortSignal;
    idleTimeoutMs?: number;
    timeoutMs?: number;
    metrics?: AgentMetrics;
    after?: Promise<void>;
  } = {},
): Promise<{ turn: ModelTurn; text: string[]; name: string }> {
  const name = `turn-${++counter}`;
  model.script(name, steps);
  const client = await createLlmClient(
    {
      baseUrl: options.baseUrl ?? model.baseUrl,
      apiKey: API_KEY,
      modelName: name,
      temperature: 0.2,
    },
    { maxRetries: 1, timeoutMs: options.timeoutMs ?? 5_000, ...(guard ? { guard } : {}) },
  );
  const text: string[] = [];
  const result = await streamModelTurn({
    client,
    model: name,
    temperature: 0.2,
    messages: [{ role: 'user', content: 'hi' }],
    tools: [],
    signal: options.signal ?? new AbortController().signal,
    idleTimeoutMs: options.idleTimeoutMs ?? 5_000,
    apiKey: API_KEY,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.after ? { after: options.after } : {}),
    onText: (piece) => text.push(piece),
  });
  return { turn: result, text, name };
}

async function failure(promise: Promise<unknown>): Promise<AgentRunError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the turn to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AgentRunError);
  const run = error as AgentRunError;
  expect(run.message).not.toContain(API_KEY);
  return run;
}

describe.each([
  ['the platform fetch', undefined],
  ['the guarded fetch', guarded],
])('streamModelTurn with the real openai client over %s', (_name, transport) => {
  beforeAll(() => {
    guard = transport;
  });

  it('asks for usage and reports it with the time to the first chunk', async () => {
    const reported: { firstToken: number[]; tokens: Array<[string, number, number]> } = {
      firstToken: [],
      tokens: [],
    };
    const metrics: AgentMetrics = {
      ...NO_METRICS.agent,
      firstToken: (seconds) => reported.firstToken.push(seconds),
      tokens: (model, prompt, completion) => reported.tokens.push([model, prompt, completion]),
    };
    const { turn: result, name } = await turn([textReply('Four words of answer.', 2)], {
      metrics,
    });
    expect(result.content).toBe('Four words of answer.');
    expect(model.requests(name)[0]!.body.stream_options).toEqual({ include_usage: true });
    expect(reported.firstToken).toHaveLength(1);
    expect(reported.firstToken[0]).toBeGreaterThanOrEqual(0);
    // The scripted model counts characters: the answer has 21.
    // By the request's model name.
    expect(reported.tokens).toEqual([[name, expect.any(Number), 21]]);
    expect(reported.tokens[0]![1]).toBeGreaterThan(0);
  });

  it('holds its text until the previous step is stored, a write slower than the idle timeout included', async () => {
    let stored!: () => void;
    const after = new Promise<void>((resolve) => (stored = resolve));
    const answered = turn([textReply('Stored first.', 3)], { idleTimeoutMs: 200, after });
    await model.waitForRequests(`turn-${counter}`, 1);
    // The model answers at once; the write takes longer than the idle timeout.
    await new Promise((resolve) => setTimeout(resolve, 600));
    stored();
    const { turn: result, text } = await answered;
    expect(text.join('')).toBe('Stored first.');
    expect(result.finishReason).toBe('stop');
  });

  it("fails with the previous step's write error when that write fails", async () => {
    const refused = new Error('write refused');
    const after = Promise.reject(refused);
    after.catch(() => undefined);
    await expect(turn([textReply('Never shown.', 2)], { after })).rejects.toBe(refused);
  });

  it('forwards text chunks as they arrive and reports the finish reason', async () => {
    const { turn: result, text } = await turn([textReply('The weather is fine.', 4)]);
    expect(text.length).toBe(4);
    expect(text.join('')).toBe('The weather is fine.');
    expect(result).toEqual({
      content: 'The weather is fine.',
      toolCalls: [],
      finishReason: 'stop',
      // What the provider reported: the scripted model counts characters, of the request's
      // messages (prompt) and of the answer (completion).
      tokens: JSON.stringify([{ role: 'user', content: 'hi' }]).length + 20,
    });
  });

  it('reassembles several tool calls whose arguments are split across chunks', async () => {
    const args = { city: 'Paris', days: [1, 2, 3], note: 'ünïcödé "quoted"' };
    for (const interleave of [false, true]) {
      const { turn: result } = await turn([
        toolCallsReply(
          [
            { id: 'call_1', name: 'get_weather', args },
            { id: 'call_2', name: 'get_time', args: { tz: 'Europe/Paris' } },
          ],
          { parts: 7, interleave, text: 'Let me check. ' },
        ),
      ]);
      expect(result.content).toBe('Let me check. ');
      expect(result.finishReason).toBe('tool_calls');
      expect(result.toolCalls).toEqual([
        { id: 'call_1', name: 'get_weather', arguments: JSON.stringify(args) },
        { id: 'call_2', name: 'get_time', arguments: '{"tz":"Europe/Paris"}' },
      ]);
    }
  });

  it('sends the API key only as the bearer token, to the configured base URL', async () => {
    const { name } = await turn([textReply('ok')]);
    const [request] = model.requests(name);
    expect(request!.path).toBe('/v1/chat/completions');
    expect(request!.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(JSON.stringify(request!.body)).not.toContain(API_KEY);
  });

  it('maps 401 to llm_auth_failed without echoing the key the provider quoted', async () => {
    const error = await failure(
      turn([{ kind: 'error', status: 401, message: `Incorrect API key provided: ${API_KEY}` }]),
    );
    expect(error.code).toBe('llm_auth_failed');
    expect(error.message).toContain('HTTP 401');
    expect(error.message).toContain('Incorrect API key provided: [REDACTED]');
  });

  it('retries 429 and 5xx once, then maps them', async () => {
    const limited: ScriptStep = {
      kind: 'error',
      status: 429,
      message: 'slow down',
      headers: { 'retry-after-ms': '10' },
    };
    const rate = await failure(turn([limited, limited]));
    expect(rate.code).toBe('llm_rate_limited');
    expect(model.requests(`turn-${counter}`)).toHaveLength(2);

    const down: ScriptStep = {
      kind: 'error',
      status: 503,
      message: 'overloaded',
      headers: { 'retry-after-ms': '10' },
    };
    const unavailable = await failure(turn([down, down]));
    expect(unavailable.code).toBe('llm_unavailable');
    expect(unavailable.message).toContain('HTTP 503');

    const recovered = await turn([down, textReply('second try')]);
    expect(recovered.turn.content).toBe('second try');
  });

  it('maps other 4xx to llm_request_rejected', async () => {
    const error = await failure(turn([{ kind: 'error', status: 404, message: 'model not found' }]));
    expect(error.code).toBe('llm_request_rejected');
    expect(error.message).toContain('model not found');
  });

  it('maps malformed streams to llm_bad_response', async () => {
    const garbage = await failure(
      turn([{ kind: 'stream', pieces: [{ text: 'partial' }, { raw: 'data: {not json\n\n' }] }]),
    );
    expect(garbage.code).toBe('llm_bad_response');
    const inStream = await failure(
      turn([{ kind: 'stream', pieces: [{ raw: 'data: {"error":{"message":"boom"}}\n\n' }] }]),
    );
    expect(inStream.code).toBe('llm_bad_response');
    const empty = await failure(turn([{ kind: 'stream', pieces: [] }]));
    expect(empty.code).toBe('llm_bad_response');
    const nameless = await failure(
      turn([
        {
          kind: 'stream',
          pieces: [{ toolCall: { index: 0, id: 'c1', arguments: '{}' } }, { finish: 'tool_calls' }],
        },
      ]),
    );
    expect(nameless.code).toBe('llm_bad_response');
  });

  it('maps a connection dropped mid-answer to llm_unavailable', async () => {
    const error = await failure(turn([{ kind: 'drop', pieces: [{ text: 'Hel' }] }]));
    expect(error.code).toBe('llm_unavailable');
  });

  it('maps a base URL that refuses connections to llm_connect_failed', async () => {
    const closed = await freePort();
    const error = await failure(turn([], { baseUrl: `http://127.0.0.1:${closed}/v1` }));
    expect(error.code).toBe('llm_connect_failed');
    expect(error.message).toContain('the connection was refused');
  });

  it('maps a base URL that accepts but never answers to llm_timeout', async () => {
    const silent: Server = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as { port: number }).port;
      const error = await failure(
        turn([], { baseUrl: `http://127.0.0.1:${port}/v1`, timeoutMs: 300 }),
      );
      expect(error.code).toBe('llm_timeout');
    } finally {
      silent.close();
    }
  });

  it('fails with llm_timeout when the answer stalls mid-stream', async () => {
    const error = await failure(
      turn([{ kind: 'stream', pieces: [{ text: 'Hel' }, { waitMs: 2_000 }, { text: 'lo' }] }], {
        idleTimeoutMs: 200,
      }),
    );
    expect(error.code).toBe('llm_timeout');
  });

  it('aborts the HTTP request when the run is aborted, so no more tokens are generated', async () => {
    const controller = new AbortController();
    const name = `turn-${counter + 1}`;
    const pending = turn(
      [{ kind: 'stream', pieces: [{ text: 'Hel' }, { waitMs: 10_000 }, { text: 'lo' }] }],
      {
        signal: controller.signal,
      },
    );
    const [request] = await model.waitForRequests(name, 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(TurnAbortedError);
    await model.waitForAbort(request!);
    expect(request!.aborted).toBe(true);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
