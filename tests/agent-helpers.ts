/**
 * Helpers of the agent integration tests: access tokens signed with the test keys, and a real
 * SSE client over `fetch` that parses `id:` / `data:` lines and `:` comments as they arrive.
 */
import jwt from 'jsonwebtoken';
import pg from 'pg';
import {
  createTestSchema,
  startScriptedModel,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type ScriptedModel,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { keyFiles, requireBuild } from './helpers.js';

export async function accessToken(privateKeyPem: string, userId: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return Promise.resolve(
    jwt.sign({ sub: userId, iat: now, exp: now + 3600 }, privateKeyPem, { algorithm: 'RS256' }),
  );
}

export interface SseEvent {
  readonly id: string | undefined;
  /** The parsed `data:` JSON. */
  readonly data: { type: string; [key: string]: unknown };
}

/** An open SSE response, read as it arrives. */
export interface SseClient {
  readonly response: Response;
  readonly events: SseEvent[];
  /** When each of `events` arrived (`performance.now()`), index for index. */
  readonly arrivals: number[];
  /** Comment lines seen (`keepalive` for `: keepalive`). */
  readonly comments: string[];
  /** Resolves when the server ended the stream, with every event. */
  readonly ended: Promise<SseEvent[]>;
  /** Resolves once an event matching `predicate` arrived. */
  waitFor(predicate: (event: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Drops the connection (a client going away). */
  close(): void;
}

/** Reads an SSE response incrementally; rejects `ended` only on a network error. */
export function readSse(response: Response, controller: AbortController): SseClient {
  const events: SseEvent[] = [];
  const arrivals: number[] = [];
  const comments: string[] = [];
  const listeners = new Set<() => void>();
  const ended = (async () => {
    // Error answers (400, 401, 404, 409) are JSON: leave their body to the test.
    const isStream = response.headers.get('content-type')?.startsWith('text/event-stream');
    if (!response.body || !isStream) return events;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let boundary: number;
        while ((boundary = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          let id: string | undefined;
          let data: string | undefined;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data = line.slice(6);
          }
          if (data !== undefined) {
            events.push({ id, data: JSON.parse(data) as SseEvent['data'] });
            arrivals.push(performance.now());
          }
          for (const listener of [...listeners]) listener();
        }
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
    for (const listener of [...listeners]) listener();
    return events;
  })();
  let finished = false;
  void ended.finally(() => (finished = true)).catch(() => undefined);
  return {
    response,
    events,
    arrivals,
    comments,
    ended,
    waitFor(predicate, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(predicate);
          if (found) {
            cleanup();
            resolve(found);
          } else if (finished) {
            cleanup();
            reject(new Error(`stream ended without the event; got ${JSON.stringify(events)}`));
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for an event; got ${JSON.stringify(events)}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
    close: () => controller.abort(),
  };
}

/** `POST /api/agent/invoke`; the body is sent as given. */
export async function invoke(
  baseUrl: string,
  token: string | undefined,
  body: unknown,
): Promise<SseClient> {
  // Tests about other things ask for no sandbox unless they say: the default `sandbox_mode`
  // follows the service's configuration (cloud when it has a cloud provider).
  if (body && typeof body === 'object' && !Array.isArray(body) && !('sandbox_mode' in body)) {
    body = { ...body, sandbox_mode: 'none' };
  }
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/api/agent/invoke`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  return readSse(response, controller);
}

/** `GET /api/agent/sessions/:id/stream`, with `Last-Event-ID` when given. */
export async function resume(
  baseUrl: string,
  token: string,
  sessionId: string,
  lastEventId?: string,
): Promise<SseClient> {
  const controller = new AbortController();
  const response = await fetch(
    `${baseUrl}/api/agent/sessions/${encodeURIComponent(sessionId)}/stream`,
    {
      headers: {
        authorization: `Bearer ${token}`,
        ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
      },
      signal: controller.signal,
    },
  );
  return readSse(response, controller);
}

/** Two API replicas on the test Redis and a fresh PostgreSQL schema, and a scripted model. */
export interface AgentCluster {
  readonly api: ServiceProcess[];
  readonly model: ScriptedModel;
  readonly keys: ReturnType<typeof keyFiles>;
  /** The environment every replica shares (to start another role on the same engines). */
  readonly env: Readonly<Record<string, string>>;
  token(userId: string): Promise<string>;
  /** Every log line of every replica so far. */
  logs(): string;
  /** Runs SQL on the cluster's PostgreSQL schema (to check what the service recorded). */
  sql<R extends Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
  /** The status of a run as stored (`agent_runs.status`); undefined when no row exists. */
  runStatus(runId: string): Promise<string | undefined>;
  /** Starts one more API replica on the same engines (stopped with the cluster). */
  startReplica(id: string): Promise<ServiceProcess>;
  stop(): Promise<void>;
}

export const API_ENTRY = 'apps/api/dist/main.js';

export async function startAgentCluster(env: Record<string, string> = {}): Promise<AgentCluster> {
  requireBuild(API_ENTRY);
  const keys = keyFiles();
  const schema: TestSchema = await createTestSchema('agent');
  const model = await startScriptedModel();
  const shared = {
    REDIS_URL: testRedisUrl(),
    DATABASE_URL: testDatabaseUrl(),
    DATABASE_SCHEMA: schema.schema,
    REDIS_KEY_PREFIX: uniquePrefix('agent'),
    JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
    JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
    LOG_LEVEL: 'debug',
    // The scripted model listens on loopback, which the SSRF guard refuses by default.
    MCP_ALLOW_PRIVATE_NETWORKS: 'true',
    ...env,
  };
  const api = await Promise.all(
    ['api-1', 'api-2'].map((id) =>
      startServiceProcess({ entry: API_ENTRY, env: { ...shared, INSTANCE_ID: id } }),
    ),
  );
  const extra: ServiceProcess[] = [];
  return {
    api,
    model,
    env: shared,
    keys,
    token: (userId) => accessToken(keys.privateKey, userId),
    logs: () => [...api, ...extra].flatMap((s) => [...s.stdout, ...s.stderr]).join('\n'),
    async sql<R extends Record<string, unknown>>(text: string, params: unknown[] = []) {
      const client = new pg.Client({
        connectionString: testDatabaseUrl(),
        options: `-c search_path=${schema.schema}`,
      });
      await client.connect();
      try {
        return (await client.query(text, params)).rows as R[];
      } finally {
        await client.end();
      }
    },
    async runStatus(this: AgentCluster, runId) {
      const rows = await this.sql<{ status: string }>(
        'SELECT status FROM agent_runs WHERE run_id = $1',
        [runId],
      );
      return rows[0]?.status;
    },
    async startReplica(id) {
      const replica = await startServiceProcess({
        entry: API_ENTRY,
        env: { ...shared, INSTANCE_ID: id },
      });
      extra.push(replica);
      return replica;
    },
    async stop() {
      await Promise.all([...api, ...extra].map((s) => s.stop('SIGKILL')));
      await model.close();
      await schema.drop();
    },
  };
}
