/**
 * OpenTelemetry traces across replicas. An api and a gateway replica (separate
 * processes on Redis and PostgreSQL) export to a fake OTLP/HTTP collector on loopback; a tool
 * call through `POST /node/tools/call` with a W3C `traceparent` must come back as one trace:
 * the api's HTTP span, its node-rpc client span, and the gateway replica's span around the
 * node's JSON-RPC call, each the child of the one before, across Redis.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startFakeLark,
  startScriptedModel,
  textReply,
  type FakeLark,
  toolCallsReply,
  type ScriptedModel,
} from '@agent-backend/testing';
import { invoke } from './agent-helpers.js';
import { startCluster, type Cluster } from './cluster.js';
import { json, post } from './helpers.js';
import { larkMessageEvent, larkWebhookRequest } from './lark-delivery.js';
import { connectClockDevice, eventually, type TestSocket } from './ws-client.js';

interface CollectedSpan {
  service: string;
  instance: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

interface OtlpAttribute {
  key: string;
  value: Record<string, unknown>;
}

/**
 * The collector: `POST /v1/traces`. An OTLP/HTTP JSON body is read, its spans kept in order; a
 * protobuf body (the default protocol) is kept as received.
 */
async function startFakeCollector(): Promise<{
  url: string;
  spans: CollectedSpan[];
  contentTypes: string[];
  protobufBodies: Buffer[];
  close(): Promise<void>;
}> {
  const spans: CollectedSpan[] = [];
  const contentTypes: string[] = [];
  const protobufBodies: Buffer[] = [];
  const value = (attrs: OtlpAttribute[] | undefined, key: string) =>
    Object.values(attrs?.find((a) => a.key === key)?.value ?? {})[0];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      contentTypes.push(String(req.headers['content-type']));
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      if (req.headers['content-type'] === 'application/x-protobuf') {
        protobufBodies.push(body);
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        return;
      }
      const payload = JSON.parse(body.toString('utf8')) as {
        resourceSpans: Array<{
          resource: { attributes: OtlpAttribute[] };
          scopeSpans: Array<{
            spans: Array<
              Omit<CollectedSpan, 'attributes' | 'service' | 'instance'> & {
                attributes?: OtlpAttribute[];
              }
            >;
          }>;
        }>;
      };
      for (const rs of payload.resourceSpans) {
        const service = String(value(rs.resource.attributes, 'service.name'));
        const instance = String(value(rs.resource.attributes, 'service.instance.id'));
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            spans.push({
              service,
              instance,
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind,
              attributes: Object.fromEntries(
                (s.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]),
              ),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    protobufBodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

type Collector = Awaited<ReturnType<typeof startFakeCollector>>;

/**
 * A collector, one api and one gateway replica exporting to it (not with `tracing: false`), with
 * `env` on top, and alice's desktop node on the gateway, answering every `tools/call` with the
 * time.
 */
async function startTracedPair(env: Record<string, string>, { tracing = true } = {}) {
  const collector = await startFakeCollector();
  const cluster = await startCluster({
    gateways: 1,
    apis: 1,
    env: {
      ...(tracing ? { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url } : {}),
      OTEL_BSP_SCHEDULE_DELAY: '100',
      // JSON, so the collector can read the spans (the default, protobuf, is tested on its own).
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      ...env,
    },
  });
  const alice = await cluster.token('alice');
  const device = await connectClockDevice(
    cluster.wsUrl(0, '/ws/desktop', { client_id: 'desktop_alice', node_id: 'mac', token: alice }),
  );
  return { collector, cluster, alice, device };
}

async function stopTracedPair(pair: {
  collector?: Collector;
  cluster?: Cluster;
  device?: TestSocket;
}) {
  pair.device?.ws.terminate();
  await pair.cluster?.stop();
  await pair.collector?.close();
}

/**
 * {@link startTracedPair} for the describe block it is called in: started before its tests,
 * stopped after them; the fields are there once the tests run.
 */
function useTracedPair(env: Record<string, string>, options?: { tracing?: boolean }) {
  const pair = {} as Awaited<ReturnType<typeof startTracedPair>>;
  beforeAll(async () => {
    Object.assign(pair, await startTracedPair(env, options));
  }, 120_000);
  afterAll(() => stopTracedPair(pair));
  return pair;
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const toolCall = { node_type: 'desktop', tool_name: 'read_clock', arguments: {} };

describe('OpenTelemetry traces across an api and a gateway replica', () => {
  let collector: Collector;
  let cluster: Cluster;
  let device: TestSocket;
  let alice: string;
  let model: ScriptedModel;

  beforeAll(async () => {
    model = await startScriptedModel();
    ({ collector, cluster, alice, device } = await startTracedPair({
      MCP_ALLOW_PRIVATE_NETWORKS: 'true',
    }));
  }, 120_000);
  afterAll(async () => {
    await stopTracedPair({ collector, cluster, device });
    await model?.close();
  });

  it('follows a node tool call from the api replica through Redis to the gateway and back', async () => {
    const res = await post(`${cluster.apis[0]!.url}/node/tools/call?secret=s3cr3t`, toolCall, {
      authorization: `Bearer ${alice}`,
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ success: true, text: '09:30' });

    const ofTrace = () => collector.spans.filter((s) => s.traceId === TRACE_ID);
    await eventually(
      async () => ofTrace().some((s) => s.service === 'agent-backend-gateway'),
      10_000,
    );
    await eventually(
      async () => ofTrace().some((s) => s.kind === 2 && s.service.endsWith('api')),
      10_000,
    );
    expect(collector.contentTypes[0]).toMatch(/^application\/json/);

    const spans = ofTrace();
    const http = spans.find((s) => s.name === 'POST /node/tools/call')!;
    expect(http).toMatchObject({
      service: 'agent-backend-api',
      instance: 'api-1',
      parentSpanId: CALLER_SPAN,
      kind: 2, // server
      attributes: { 'http.route': '/node/tools/call', 'http.response.status_code': 200 },
    });
    const rpc = spans.find((s) => s.name === 'node-rpc tools/call')!;
    expect(rpc).toMatchObject({
      service: 'agent-backend-api',
      parentSpanId: http.spanId,
      kind: 3, // client
      attributes: { 'agent_backend.tool.name': 'read_clock' },
    });
    const gateway = spans.find((s) => s.name === 'gateway tools/call')!;
    expect(gateway).toMatchObject({
      service: 'agent-backend-gateway',
      instance: 'gateway-1',
      parentSpanId: rpc.spanId,
    });
    // Route templates only: no query string, no token, anywhere in what was exported.
    const exported = JSON.stringify(collector.spans);
    expect(exported).not.toContain('s3cr3t');
    expect(exported).not.toContain(alice);

    // The api's log line of that request carries the trace and its span.
    const line = cluster.apis[0]!.stdout.find(
      (l) => l.includes('"msg":"request"') && l.includes('/node/tools/call'),
    );
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ trace_id: TRACE_ID, span_id: http.spanId });
  });

  it('starts a new trace for a request without traceparent', async () => {
    const res = await post(`${cluster.apis[0]!.url}/node/tools/call`, toolCall, {
      authorization: `Bearer ${alice}`,
    });
    expect(res.status).toBe(200);
    const fresh = () =>
      collector.spans.find((s) => s.name === 'gateway tools/call' && s.traceId !== TRACE_ID);
    const http = await eventually(async () => {
      const gateway = fresh();
      return collector.spans.find(
        (s) => s.traceId === gateway?.traceId && s.name === 'POST /node/tools/call',
      );
    }, 10_000);
    expect(http.parentSpanId).toBe('');
  });

  it("follows a caller's decision not to sample on the api and the gateway replica", async () => {
    const UNSAMPLED = 'c'.repeat(31) + '3';
    const SAMPLED = 'd'.repeat(31) + '4';
    for (const [traceId, flags] of [
      [UNSAMPLED, '00'],
      [SAMPLED, '01'],
    ] as const) {
      const res = await post(`${cluster.apis[0]!.url}/node/tools/call`, toolCall, {
        authorization: `Bearer ${alice}`,
        traceparent: `00-${traceId}-${CALLER_SPAN}-${flags}`,
      });
      expect(res.status).toBe(200);
    }
    // Spans are exported in the order they ended: once the second call's are in, the first's
    // would be. The gateway must not start a trace of its own for the first call either.
    await eventually(
      async () =>
        collector.spans.some((s) => s.traceId === SAMPLED && s.name === 'gateway tools/call') &&
        collector.spans.some((s) => s.traceId === SAMPLED && s.name === 'POST /node/tools/call'),
      10_000,
    );
    expect(collector.spans.filter((s) => s.traceId === UNSAMPLED)).toEqual([]);
    expect(
      collector.spans.filter((s) => s.name === 'gateway tools/call' && s.parentSpanId === ''),
    ).toEqual([]);
  });

  it('puts an agent run, its model requests and its node tool call in one trace', async () => {
    model.script('m-tool', [
      toolCallsReply([{ id: 'call_1', name: 'read_clock', args: {} }]),
      textReply('It is 09:30.'),
    ]);
    const stream = await invoke(cluster.apis[0]!.url, alice, {
      message: 'What time is it on my mac?',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-model-key-secret', modelName: 'm-tool' },
    });
    const events = (await stream.ended).map((e) => e.data);
    expect(events.at(-1)).toMatchObject({ type: 'done' });

    const named = (name: string) => collector.spans.find((s) => s.name === name);
    await eventually(async () => named('agent run') && named('chat m-tool'), 10_000);
    const run = named('agent run')!;
    await eventually(
      async () =>
        collector.spans.some((s) => s.traceId === run.traceId && s.name === 'gateway tools/call'),
      10_000,
    );
    const inRun = collector.spans.filter((s) => s.traceId === run.traceId);
    const http = inRun.find(
      (s) => s.name === 'POST /agent/invoke' || (s.kind === 2 && s.service.endsWith('api')),
    );
    expect(http).toBeDefined();
    expect(run.parentSpanId).toBe(http!.spanId);
    const turns = inRun.filter((s) => s.name === 'chat m-tool');
    expect(turns).toHaveLength(2);
    for (const turn of turns) expect(turn.parentSpanId).toBe(run.spanId);
    const tool = inRun.find((s) => s.name === 'execute_tool read_clock')!;
    expect(tool.parentSpanId).toBe(run.spanId);
    const rpc = inRun.find((s) => s.name === 'node-rpc tools/call')!;
    expect(rpc.parentSpanId).toBe(tool.spanId);
    const gateway = inRun.find((s) => s.name === 'gateway tools/call')!;
    expect(gateway).toMatchObject({ service: 'agent-backend-gateway', parentSpanId: rpc.spanId });
    expect(JSON.stringify(collector.spans)).not.toContain('sk-model-key-secret');
  });
});

describe('sampling: OTEL_TRACES_SAMPLER=parentbased_traceidratio, OTEL_TRACES_SAMPLER_ARG=0', () => {
  const pair = useTracedPair({
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: '0',
  });

  it('exports no span of a request that starts a trace, and all of one whose caller sampled it', async () => {
    const UNSAMPLED = 'b'.repeat(31) + '2';
    for (const traceparent of [undefined, `00-${UNSAMPLED}-${CALLER_SPAN}-00`]) {
      const res = await post(`${pair.cluster.apis[0]!.url}/node/tools/call`, toolCall, {
        authorization: `Bearer ${pair.alice}`,
        ...(traceparent ? { traceparent } : {}),
      });
      expect(res.status).toBe(200);
    }
    // A sampled caller: its trace is recorded on both replicas, across the bus, at ratio 0.
    // Each replica exports in the order its spans ended, so once this trace's spans are in,
    // any span of the requests above would be too.
    const res = await post(`${pair.cluster.apis[0]!.url}/node/tools/call`, toolCall, {
      authorization: `Bearer ${pair.alice}`,
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
    });
    expect(res.status).toBe(200);
    const named = (name: string) =>
      pair.collector.spans.find((s) => s.traceId === TRACE_ID && s.name === name);
    await eventually(
      async () => named('gateway tools/call') && named('POST /node/tools/call'),
      10_000,
    );
    const http = named('POST /node/tools/call')!;
    const rpc = named('node-rpc tools/call')!;
    expect(http.parentSpanId).toBe(CALLER_SPAN);
    expect(rpc.parentSpanId).toBe(http.spanId);
    expect(named('gateway tools/call')!.parentSpanId).toBe(rpc.spanId);
    expect(pair.collector.spans.filter((s) => s.traceId !== TRACE_ID)).toEqual([]);

    // Not exported, but still followed in the logs: the request lines carry their trace ids.
    const lines = pair.cluster.apis[0]!.stdout.filter(
      (l) => l.includes('"msg":"request"') && l.includes('/node/tools/call'),
    );
    expect(lines.some((l) => l.includes(`"trace_id":"${UNSAMPLED}"`))).toBe(true);
  });
});

describe('jobs on the worker continue the trace of the request that queued them', () => {
  const SECRET = 'internal-secret-for-tests';
  const MODEL = 'scheduled-model';
  const LARK = { appId: 'cli_test', encryptKey: 'enc-key-for-tests', token: 'verification-token' };
  let collector: Collector;
  let model: ScriptedModel;
  let lark: FakeLark;
  let cluster: Cluster;

  beforeAll(async () => {
    collector = await startFakeCollector();
    model = await startScriptedModel();
    lark = await startFakeLark({ appId: LARK.appId, appSecret: 'lark-secret' });
    cluster = await startCluster({
      gateways: 0,
      apis: 1,
      workers: 1,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        INTERNAL_API_SECRET: SECRET,
        DEFAULT_LLM_BASE_URL: model.baseUrl,
        DEFAULT_LLM_API_KEY: 'sk-test-default',
        DEFAULT_LLM_MODEL: MODEL,
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        LARK_APP_ID: LARK.appId,
        LARK_APP_SECRET: 'lark-secret',
        LARK_API_BASE_URL: lark.url,
        LARK_ENCRYPT_KEY: LARK.encryptKey,
        LARK_VERIFICATION_TOKEN: LARK.token,
      },
    });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await collector?.close();
    await model?.close();
    await lark?.close();
  });

  /** The span named `name` on the worker in trace `traceId`, once exported. */
  const workerSpan = (traceId: string, name: string) =>
    eventually(
      async () =>
        collector.spans.find(
          (s) => s.traceId === traceId && s.name === name && s.service.endsWith('worker'),
        ),
      30_000,
    );

  it('has the worker span and the run span in the trace of POST /scheduled-task/sync', async () => {
    model.script(MODEL, [textReply('All good.')]);
    const at = new Date(Math.ceil((Date.now() + 2_000) / 1000) * 1000).toISOString();
    const task = {
      id: 'traced-1',
      user_id: 'alice',
      title: 'Report',
      prompt: 'Write the report',
      run_mode: 'auto',
      connector: 'none',
      scheduled_date: at.slice(0, 10),
      scheduled_time: at.slice(11, 19),
    };
    const traceId = 'a'.repeat(31) + '1';
    const synced = await json(
      await post(
        `${cluster.apis[0]!.url}/scheduled-task/sync`,
        { action: 'add', task_id: 'traced-1', task },
        { 'x-internal-secret': SECRET, traceparent: `00-${traceId}-${CALLER_SPAN}-01` },
      ),
    );
    expect(synced.status).toBe(200);
    const run = await eventually(
      async () =>
        collector.spans.find(
          (s) => s.traceId === traceId && s.name === 'agent run' && s.service.endsWith('worker'),
        ),
      30_000,
    );
    const spans = collector.spans.filter((s) => s.traceId === traceId);
    const http = spans.find((s) => s.name === 'POST /scheduled-task/sync')!;
    expect(http.parentSpanId).toBe(CALLER_SPAN);
    // The job's span ends after the run inside it, so it may come in a later export.
    const job = await workerSpan(traceId, 'scheduled-task due');
    expect(job).toMatchObject({ service: 'agent-backend-worker', parentSpanId: http.spanId });
    expect(run.parentSpanId).toBe(job.spanId);
    const chat = await eventually(
      async () => collector.spans.find((s) => s.traceId === traceId && s.name === `chat ${MODEL}`),
      10_000,
    );
    expect(chat.parentSpanId).toBe(run.spanId);
  });

  it('has the ingestion span of a knowledge document in the trace of the request that added it', async () => {
    const token = await cluster.token('alice');
    const auth = { authorization: `Bearer ${token}` };
    const base = await json(
      await post(`${cluster.apis[0]!.url}/api/knowledge-bases`, { name: 'Traced' }, auth),
    );
    const traceId = 'b'.repeat(31) + '2';
    const added = await post(
      `${cluster.apis[0]!.url}/api/knowledge-bases/${(base.body as { id: string }).id}/documents`,
      { name: 'notes.txt', content: 'The deploy runs at noon on Tuesdays.' },
      { ...auth, traceparent: `00-${traceId}-${CALLER_SPAN}-01` },
    );
    expect(added.status).toBe(202);
    const job = await workerSpan(traceId, 'kb-ingest');
    const http = collector.spans.find(
      (s) => s.traceId === traceId && s.name === 'POST /api/knowledge-bases/:id/documents',
    )!;
    expect(http.parentSpanId).toBe(CALLER_SPAN);
    expect(job.parentSpanId).toBe(http.spanId);
    // The worker's log line of the ingestion carries the trace and the job's span.
    const line = cluster.workers[0]!.stdout.find(
      (l) => l.includes('"msg":"knowledge document ingested"') && l.includes(traceId),
    );
    expect(JSON.parse(line!)).toMatchObject({ trace_id: traceId, span_id: job.spanId });
  });

  it('has the answer to a chat message in the trace of the webhook request', async () => {
    model.script(MODEL, [textReply('Hello from the worker.')]);
    const traceId = 'c'.repeat(31) + '3';
    const request = larkWebhookRequest(
      LARK,
      larkMessageEvent(LARK, { eventId: `ev-traced-${Date.now()}`, chatId: 'oc_t', text: 'Hi' }),
    );
    const res = await fetch(`${cluster.apis[0]!.url}/channels/feishu/webhook`, {
      method: 'POST',
      body: request.body,
      headers: { ...request.headers, traceparent: `00-${traceId}-${CALLER_SPAN}-01` },
    });
    expect(res.status).toBe(200);
    const job = await workerSpan(traceId, 'chat-message');
    const http = collector.spans.find(
      (s) => s.traceId === traceId && s.name === 'POST /channels/:platform/webhook',
    )!;
    expect(http.parentSpanId).toBe(CALLER_SPAN);
    expect(job.parentSpanId).toBe(http.spanId);
    // The agent's run answering the message is a child of the job's span.
    const run = await workerSpan(traceId, 'agent run');
    expect(run.parentSpanId).toBe(job.spanId);
  });
});

describe('the default OTLP protocol', () => {
  const pair = useTracedPair({ OTEL_EXPORTER_OTLP_PROTOCOL: '' });

  it('exports OTLP/HTTP protobuf from both replicas', async () => {
    const res = await post(`${pair.cluster.apis[0]!.url}/node/tools/call`, toolCall, {
      authorization: `Bearer ${pair.alice}`,
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
    });
    expect(res.status).toBe(200);
    // Protobuf carries the trace id as its 16 bytes and the service names as strings.
    const traceId = Buffer.from(TRACE_ID, 'hex');
    const exported = (service: string) =>
      pair.collector.protobufBodies.some(
        (body) => body.includes(traceId) && body.includes(Buffer.from(service)),
      );
    await eventually(
      async () => exported('agent-backend-api') && exported('agent-backend-gateway'),
      10_000,
    );
    expect(new Set(pair.collector.contentTypes)).toEqual(new Set(['application/x-protobuf']));
    expect(pair.collector.spans).toHaveLength(0);
  });
});

describe('tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  const pair = useTracedPair({}, { tracing: false });

  it('exports nothing and writes no trace ids', async () => {
    const res = await post(`${pair.cluster.apis[0]!.url}/node/tools/call`, toolCall, {
      authorization: `Bearer ${pair.alice}`,
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
    });
    expect(res.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(pair.collector.spans).toHaveLength(0);
    const logs = [...pair.cluster.apis[0]!.stdout, ...pair.cluster.gateways[0]!.stdout].join('\n');
    expect(logs).toContain('"msg":"request"');
    expect(logs).not.toContain('trace_id');
    expect(logs).not.toContain(TRACE_ID);
  });
});
