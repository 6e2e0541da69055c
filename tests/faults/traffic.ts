/**
 * The simulated clients of the fault suite: nodes (the node client library) on both gateways,
 * `POST /node/tools/call` traffic at a steady rate through both api replicas, SSE agent runs
 * that stream for a while, and chat-platform webhook deliveries. Every request is counted in a
 * {@link Tally}; side effects are counted where they happen (the node's tool, the chat
 * platform's replies), so lost and doubled effects show.
 */
import { NodeClient } from '@agent-backend/node-client';
import type { FakeLark, ScriptedModel, StreamPiece } from '@agent-backend/testing';
import { invoke } from '../agent-helpers.js';
import type { Cluster } from '../cluster.js';
import { larkMessageEvent, larkWebhookRequest } from '../lark-delivery.js';
import { sleep, type Outcome, type Tally } from './tally.js';

/** A node per user, half of them on each gateway, whose `effect` tool counts its calls by id. */
export interface Fleet {
  readonly users: string[];
  readonly nodes: NodeClient[];
  /** How often each call id reached a node. */
  readonly effects: Map<string, number>;
  close(): Promise<void>;
}

export async function startFleet(cluster: Cluster, users: string[]): Promise<Fleet> {
  const effects = new Map<string, number>();
  const nodes = users.map(
    (userId, i) =>
      new NodeClient({
        url: cluster.gateways[i % cluster.gateways.length]!.url,
        kind: 'desktop',
        userId,
        nodeId: `pc-${userId}`,
        getToken: () => cluster.token(userId),
        heartbeatMs: 2_000,
        reconnect: { initialDelayMs: 100, maxDelayMs: 1_000 },
        node: { maxConcurrentTasks: 64 },
        tools: {
          effect: {
            description: 'Records one side effect per call id',
            handler: (args) => {
              const id = String(args.id);
              effects.set(id, (effects.get(id) ?? 0) + 1);
              return `done ${id}`;
            },
          },
        },
      }),
  );
  await Promise.all(nodes.map((node) => node.start()));
  return {
    users,
    nodes,
    effects,
    close: async () => {
      await Promise.all(nodes.map((node) => node.close()));
    },
  };
}

/** Reads an error body's code (`{ error: { code } }`), or undefined. */
async function errorCode(res: Response): Promise<string | undefined> {
  const body = (await res.json().catch(() => undefined)) as
    { error?: { code?: unknown } | string } | undefined;
  const error = body?.error;
  if (error && typeof error === 'object' && typeof error.code === 'string') return error.code;
  return undefined;
}

/** The service's deadline of one node tool call, and the caller's own (a little longer). */
export const TOOL_TIMEOUT_MS = 4_000;
export const TOOL_CALLER_DEADLINE_MS = TOOL_TIMEOUT_MS + 6_000;

/** One `POST /node/tools/call` with a unique effect id, counted under `kind`. */
export async function callEffect(
  tally: Tally,
  cluster: Cluster,
  fleet: Fleet,
  index: number,
  kind = 'tool calls',
): Promise<Outcome | 'hung'> {
  const userId = fleet.users[index % fleet.users.length]!;
  const id = `${tally.fault}-${kind}-${index}-${Math.random().toString(36).slice(2, 8)}`;
  const api = cluster.apis[index % cluster.apis.length]!;
  const token = await cluster.token(userId);
  const outcome = await tally.track(kind, TOOL_CALLER_DEADLINE_MS, async (signal) => {
    const res = await fetch(`${api.url}/node/tools/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        node_type: 'desktop',
        tool_name: 'effect',
        arguments: { id },
        timeout_ms: TOOL_TIMEOUT_MS,
      }),
      signal,
    });
    if (res.status === 200) {
      const body = (await res.json()) as {
        success: boolean;
        text?: string;
        error?: { code?: string };
      };
      if (body.success && body.text === `done ${id}`) return { kind: 'succeeded' };
      return body.success
        ? { kind: 'unclear', detail: `200 with text ${JSON.stringify(body.text)}` }
        : { kind: 'failed', code: `tool_error:${body.error?.code ?? 'is_error'}` };
    }
    const code = await errorCode(res);
    return code ? { kind: 'failed', code } : { kind: 'unclear', detail: `HTTP ${res.status}` };
  });
  // Effects: a success the node never saw is lost; any id the node saw twice is doubled.
  const seen = fleet.effects.get(id) ?? 0;
  const counts = tally.counts(kind);
  if (outcome !== 'hung' && outcome.kind === 'succeeded' && seen === 0) counts.lost++;
  if (seen > 1) counts.doubled++;
  return outcome;
}

/**
 * Tool calls at `perSecond` until `signal` aborts; resolves once every call has ended. Calls
 * whose answer comes after the fault ended and that succeed mark recovery through `onSuccess`.
 */
export async function toolCallTraffic(
  tally: Tally,
  cluster: Cluster,
  fleet: Fleet,
  perSecond: number,
  stop: AbortSignal,
  onOutcome?: (outcome: Outcome | 'hung', startedAt: number) => void,
): Promise<void> {
  const inFlight = new Set<Promise<unknown>>();
  const interval = 1000 / perSecond;
  let index = 0;
  const started = Date.now();
  while (!stop.aborted) {
    const at = Date.now();
    const call = callEffect(tally, cluster, fleet, index++).then((o) => onOutcome?.(o, at));
    inFlight.add(call);
    void call.finally(() => inFlight.delete(call));
    const next = started + index * interval;
    await sleep(Math.max(0, next - Date.now()));
  }
  // Double-counting of late effects: check again once every call ended.
  await Promise.all(inFlight);
}

/** Text streamed slowly over `durationMs` in `parts` pieces, then `stop`. */
export function slowText(text: string, durationMs: number, parts = 12): StreamPiece[] {
  const pieces: StreamPiece[] = [];
  for (let i = 0; i < parts; i++) {
    pieces.push({ text: `${text} ${i}. ` }, { waitMs: Math.round(durationMs / parts) });
  }
  return [...pieces, { finish: 'stop' }];
}

export interface SseRunResult {
  readonly outcome: Outcome | 'hung';
  readonly sessionId: string | undefined;
}

/**
 * One SSE agent run whose scripted answer streams for `durationMs`, counted under `kind`:
 * `done` succeeded, an `error` event failed with its code, anything else is unclear.
 */
export async function sseRun(
  tally: Tally,
  cluster: Cluster,
  model: ScriptedModel,
  index: number,
  options: { durationMs: number; deadlineMs: number; kind?: string; sessionId?: string },
): Promise<SseRunResult> {
  const userId = `sse-${index % 10}`;
  const modelName = `${tally.fault}-run-${index}-${Math.random().toString(36).slice(2, 8)}`;
  model.script(modelName, [
    { kind: 'stream', pieces: slowText(`answer ${index}`, options.durationMs) },
  ]);
  const api = cluster.apis[index % cluster.apis.length]!;
  const token = await cluster.token(userId);
  let sessionId = options.sessionId;
  const outcome = await tally.track(
    options.kind ?? 'sse runs',
    options.deadlineMs,
    async (signal) => {
      const stream = await invoke(api.url, token, {
        message: `question ${index}`,
        ...(sessionId ? { session_id: sessionId } : {}),
        llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-faults', modelName },
        mode: 'ask',
      });
      signal.addEventListener('abort', () => stream.close());
      if (stream.response.status !== 200) {
        const code = await errorCode(stream.response);
        return code
          ? { kind: 'failed', code }
          : { kind: 'unclear', detail: `HTTP ${stream.response.status}` };
      }
      const events = await stream.ended;
      const session = events.find((e) => e.data.type === 'session');
      if (session) sessionId = String(session.data.session_id);
      const last = events.at(-1)?.data;
      if (last?.type === 'done') return { kind: 'succeeded' };
      if (last?.type === 'error') return { kind: 'failed', code: String(last.code) };
      return {
        kind: 'unclear',
        detail: `stream ended after ${events.length} events without done or error`,
      };
    },
  );
  return { outcome, sessionId };
}

/** The chat-platform settings of a cluster that receives webhook deliveries. */
export const LARK = {
  appId: 'cli_faults',
  secret: 'lark-secret',
  encryptKey: 'enc-key',
  token: 'vt',
} as const;

export function larkEnv(lark: FakeLark, model: ScriptedModel, modelName: string) {
  return {
    LARK_APP_ID: LARK.appId,
    LARK_APP_SECRET: LARK.secret,
    LARK_API_BASE_URL: lark.url,
    LARK_ENCRYPT_KEY: LARK.encryptKey,
    LARK_VERIFICATION_TOKEN: LARK.token,
    DEFAULT_LLM_BASE_URL: model.baseUrl,
    DEFAULT_LLM_MODEL: modelName,
    DEFAULT_LLM_API_KEY: 'sk-faults-default',
  };
}

/** An encrypted, signed `im.message.receive_v1` delivery, as the platform sends it. */
export function larkDelivery(eventId: string, chatId: string, text: string) {
  const event = larkMessageEvent(LARK, { eventId, chatId, text, openId: 'ou_faults' });
  return { messageId: event.event.message.message_id, ...larkWebhookRequest(LARK, event) };
}

/**
 * Delivers a chat message like the platform does: until it is acknowledged with 200 (the
 * platform retries other answers), each attempt counted under `webhook deliveries`.
 * Resolves with the message id once acknowledged, or undefined if never within `giveUpMs`.
 */
export async function deliverUntilAcked(
  tally: Tally,
  cluster: Cluster,
  eventId: string,
  chatId: string,
  giveUpMs: number,
): Promise<string | undefined> {
  const started = Date.now();
  for (let attempt = 0; Date.now() - started < giveUpMs; attempt++) {
    const delivery = larkDelivery(eventId, chatId, `message ${eventId}`);
    const api = cluster.apis[attempt % cluster.apis.length]!;
    const outcome = await tally.track('webhook deliveries', 10_000, async (signal) => {
      const res = await fetch(`${api.url}/channels/feishu/webhook`, {
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
        signal,
      });
      const body = (await res.json().catch(() => undefined)) as
        { code?: unknown; msg?: unknown; error?: { code?: string } } | undefined;
      if (res.status === 200) return { kind: 'succeeded' };
      const code = body?.error?.code ?? (typeof body?.msg === 'string' ? body.msg : undefined);
      return code
        ? { kind: 'failed', code: `${res.status} ${code}` }
        : { kind: 'unclear', detail: `HTTP ${res.status}` };
    });
    if (outcome !== 'hung' && outcome.kind === 'succeeded') return delivery.messageId;
    await sleep(500);
  }
  return undefined;
}
