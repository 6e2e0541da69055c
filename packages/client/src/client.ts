import type {
  ApprovalDecisionItem,
  ApprovalDecisionRequest,
  ApprovalDecisionResponse,
  ApprovalDecisionsResponse,
  DeleteMemoriesResponse,
  InvokeRequestInput,
  ListNodesResponse,
  Memory,
  MemoryList,
  NodeToolCallResponse,
  NodeType,
  ScheduledTaskList,
  ScheduledTaskDetails,
  SkillList,
  UploadSkillRequest,
  UploadSkillResponse,
} from '@agent-backend/protocol';
import { BrowserWebClient, type BrowserWebClientOptions } from './browser-web-client.js';
import { AgentRun, type ResumeOptions } from './agent-run.js';
import { apiError, RateLimitedError, ServiceUnavailableError, TimeoutError } from './errors.js';
import type { CallOptions, JsonRequest } from './call-options.js';
import { sessionsApi, runsApi, usageApi } from './conversations.js';
import { knowledgeBasesApi } from './knowledge.js';
import { paginate } from './paginate.js';
import { backoff, sleep } from './retry.js';

export type { CallOptions } from './call-options.js';

/** How the client authenticates (docs/clients.md). */
export interface ClientOptions {
  /** The service's origin, e.g. `https://agents.example.com` (no trailing path needed). */
  readonly baseUrl: string;
  /** The access token, or a function answering the current one (called before each request). */
  readonly token?: string | (() => string | Promise<string>);
  /**
   * Called when a request answers 401: answer a new access token (refresh it) and the request is
   * sent once more with it, or `undefined` to give up (the 401 is thrown).
   */
  readonly onUnauthorized?: () => string | undefined | Promise<string | undefined>;
  /** @default globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** Every call's {@link CallOptions.timeout} unless the call gives its own. @default none */
  readonly timeout?: number;
  /** Every call's {@link CallOptions.retries} unless the call gives its own. @default 0 */
  readonly retries?: number;
  /** How an interrupted agent stream is resumed. */
  readonly resume?: ResumeOptions;
}

interface RequestOptions extends CallOptions {
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /** A stream: the timeout covers the answer's headers only, the body is read by the caller. */
  readonly stream?: boolean;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);

/**
 * The service's HTTP API for browsers and Node.js (fetch only): agent runs streamed as typed
 * events and resumed on their own after a dropped connection, HITL decisions, the user's nodes,
 * knowledge bases, memories and skills. One instance per user (token).
 */
export class AgentBackendClient {
  private readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private token: string | (() => string | Promise<string>) | undefined;
  private userId: Promise<string> | undefined;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.token = options.token;
  }

  /**
   * Starts a run (`POST /api/agent/invoke`) and yields its events. When the connection drops
   * before `done` or `error`, the stream is resumed where it stopped
   * (`GET /api/agent/sessions/:id/stream` with `Last-Event-ID`), on whichever replica answers;
   * no event is yielded twice.
   */
  invoke(request: InvokeRequestInput, options: CallOptions = {}): AgentRun {
    return new AgentRun(
      (lastEventId, sessionId) =>
        lastEventId && sessionId
          ? this.send('GET', `/api/agent/sessions/${encodeURIComponent(sessionId)}/stream`, {
              ...options,
              headers: { 'last-event-id': lastEventId, accept: 'text/event-stream' },
              stream: true,
            })
          : this.send('POST', '/api/agent/invoke', {
              ...options,
              body: request,
              headers: { accept: 'text/event-stream' },
              stream: true,
            }),
      this.options.resume,
      options.signal,
    );
  }

  /** Follows a session's latest run from `lastEventId` (or its start). */
  resume(sessionId: string, lastEventId?: string, options: CallOptions = {}): AgentRun {
    return new AgentRun(
      (after) =>
        this.send('GET', `/api/agent/sessions/${encodeURIComponent(sessionId)}/stream`, {
          ...options,
          headers: {
            accept: 'text/event-stream',
            ...((after ?? lastEventId) ? { 'last-event-id': (after ?? lastEventId)! } : {}),
          },
          stream: true,
        }),
      this.options.resume,
      options.signal,
    );
  }

  /** Decides one held tool call (`approval_request.request_id`). */
  decide(
    requestId: string,
    decision: ApprovalDecisionRequest,
    options?: CallOptions,
  ): Promise<ApprovalDecisionResponse> {
    return this.json('POST', `/api/agent/approvals/${encodeURIComponent(requestId)}/decision`, {
      ...options,
      body: decision,
    });
  }

  /** Decides several held calls of one run at once. */
  decideAll(
    runId: string,
    decisions: ApprovalDecisionItem[],
    options?: CallOptions,
  ): Promise<ApprovalDecisionsResponse> {
    return this.json('POST', `/api/agent/runs/${encodeURIComponent(runId)}/decisions`, {
      ...options,
      body: { decisions },
    });
  }

  /**
   * Opens the user's web connection to the gateway (`/ws/web`, a {@link BrowserWebClient}) with
   * this client's token and `onUnauthorized`. `url` defaults to `baseUrl` (the all-in-one, or a
   * load balancer that routes `/ws/` to the gateway); `userId` must be the token's user.
   */
  webSocket(
    options: Omit<BrowserWebClientOptions, 'url' | 'token' | 'onUnauthorized'> & { url?: string },
  ): BrowserWebClient {
    const { onUnauthorized } = this.options;
    return new BrowserWebClient({
      ...options,
      url: options.url ?? this.baseUrl,
      token: async () => (await this.currentToken()) ?? '',
      ...(onUnauthorized
        ? {
            onUnauthorized: async () => {
              const fresh = await onUnauthorized();
              if (fresh && typeof this.token !== 'function') this.token = fresh;
              return fresh;
            },
          }
        : {}),
    });
  }

  /** The user id of the token (`GET /api/auth/whoami`), asked once (a failure is not kept). */
  whoami(options?: CallOptions): Promise<string> {
    this.userId ??= this.json<{ user_id: string }>('GET', '/api/auth/whoami', options).then(
      (r) => r.user_id,
      (error: unknown) => {
        this.userId = undefined;
        throw error;
      },
    );
    return this.userId;
  }

  readonly nodes = {
    /** The user's nodes (`GET /node/devices`). */
    list: async (
      query: { node_type?: NodeType; online_only?: boolean } = {},
      options?: CallOptions,
    ): Promise<ListNodesResponse> => {
      const params = new URLSearchParams({ user_id: await this.whoami(options) });
      if (query.node_type) params.set('node_type', query.node_type);
      if (query.online_only !== undefined) params.set('online_only', String(query.online_only));
      return this.json('GET', `/node/devices?${params}`, options);
    },
    /** Calls a tool on one of the user's nodes (`POST /node/tools/call`). */
    callTool: (
      call: {
        node_type: NodeType;
        tool_name: string;
        arguments?: Record<string, unknown>;
        node_id?: string;
        session_id?: string;
        timeout_ms?: number;
      },
      options?: CallOptions,
    ): Promise<NodeToolCallResponse> =>
      this.json('POST', '/node/tools/call', { ...options, body: call }),
  };

  /** A JSON request for the API groups below (token, timeout, retries, typed errors). */
  private readonly request: JsonRequest = <T>(
    method: string,
    path: string,
    options?: CallOptions & { body?: unknown },
  ) => this.json<T>(method, path, options);

  readonly knowledgeBases = knowledgeBasesApi(this.request);
  readonly sessions = sessionsApi(this.request);
  readonly runs = runsApi(this.request);
  readonly usage = usageApi(this.request);

  readonly memories = {
    /** A page of the user's memories, newest first; `cursor` is the previous `next_cursor`. */
    list: (
      query: { q?: string; cursor?: string; limit?: number } = {},
      options?: CallOptions,
    ): Promise<MemoryList> => {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(query)) {
        if (value !== undefined) params.set(key, String(value));
      }
      const search = params.size > 0 ? `?${params}` : '';
      return this.json('GET', `/api/memories${search}`, options);
    },
    /** Every memory of the user (matching `q`), newest first, page after page as the loop asks. */
    iterate: (
      query: { q?: string; limit?: number } = {},
      options?: CallOptions,
    ): AsyncIterable<Memory> =>
      paginate(async (cursor) => {
        const page = await this.memories.list({ ...query, ...(cursor ? { cursor } : {}) }, options);
        return { items: page.memories, nextCursor: page.next_cursor };
      }),
    delete: (id: string, options?: CallOptions): Promise<void> =>
      this.json('DELETE', `/api/memories/${encodeURIComponent(id)}`, options),
    clear: (options?: CallOptions): Promise<DeleteMemoriesResponse> =>
      this.json('DELETE', '/api/memories', options),
  };

  readonly skills = {
    list: async (options?: CallOptions): Promise<SkillList['skills']> =>
      (await this.json<SkillList>('GET', '/api/skills', options)).skills,
    upload: (skill: UploadSkillRequest, options?: CallOptions): Promise<UploadSkillResponse> =>
      this.json('POST', '/api/skills', { ...options, body: skill }),
    delete: (name: string, options?: CallOptions): Promise<void> =>
      this.json('DELETE', `/api/skills/${encodeURIComponent(name)}`, options),
  };

  readonly scheduledTasks = {
    /** The user's scheduled tasks with their latest occurrences (`GET /api/scheduled-tasks`). */
    list: async (options?: CallOptions): Promise<ScheduledTaskDetails[]> =>
      (await this.json<ScheduledTaskList>('GET', '/api/scheduled-tasks', options)).tasks,
    /** Answers a `scheduled_task_confirmation` (`POST /scheduled-task/confirm`). */
    confirm: (
      taskId: string,
      scheduledAt: string,
      confirm: boolean,
      options?: CallOptions,
    ): Promise<{ success: boolean; status: string }> =>
      this.json('POST', '/scheduled-task/confirm', {
        ...options,
        body: { task_id: taskId, scheduled_at: scheduledAt, confirm },
      }),
  };

  /** A JSON request; the parsed answer (`undefined` for 204). */
  private async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.send(method, path, options);
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  /**
   * Sends with the token (once more with a fresh one after a 401), within the call's timeout,
   * again after a refusal {@link CallOptions.retries} allows; throws {@link ApiError} (by code).
   */
  private async send(method: string, path: string, options: RequestOptions): Promise<Response> {
    const retries = options.retries ?? this.options.retries ?? 0;
    const idempotent = IDEMPOTENT.has(method);
    for (let attempt = 0; ; attempt += 1) {
      let response: Response;
      try {
        response = await this.sendOnce(method, path, options);
      } catch (error) {
        // A network failure or a timeout: the request may have been handled; only an
        // idempotent one is sent again.
        if (options.signal?.aborted || !idempotent || attempt >= retries) throw error;
        await sleep(backoff(attempt), options.signal);
        continue;
      }
      if (response.ok) return response;
      const error = await apiError(response);
      const refused =
        error instanceof RateLimitedError ||
        (error instanceof ServiceUnavailableError && error.code === 'unavailable') ||
        (idempotent && (response.status === 502 || response.status === 504));
      if (!refused || attempt >= retries) throw error;
      const wait = error instanceof RateLimitedError ? error.retryAfterMs : undefined;
      await sleep(wait ?? backoff(attempt), options.signal);
    }
  }

  /** One attempt: the answer (a JSON one read whole) within the timeout, or its failure. */
  private async sendOnce(method: string, path: string, options: RequestOptions): Promise<Response> {
    const timeoutMs = options.timeout ?? this.options.timeout;
    const timer = timeoutMs === undefined ? undefined : new AbortController();
    const timeout = timer && setTimeout(() => timer.abort(new TimeoutError(timeoutMs!)), timeoutMs);
    const signals = [options.signal, timer?.signal].filter((s): s is AbortSignal => !!s);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    const attempt = async (token: string | undefined) =>
      this.fetchImpl(`${this.baseUrl}${path}`, {
        method,
        headers: {
          ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...options.headers,
        },
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        ...(signal ? { signal } : {}),
      });
    try {
      let response = await attempt(await this.currentToken());
      if (response.status === 401 && this.options.onUnauthorized) {
        await response.body?.cancel();
        const fresh = await this.options.onUnauthorized();
        if (fresh) {
          // Later requests use it too, unless the caller supplies tokens by function.
          if (typeof this.token !== 'function') this.token = fresh;
          response = await attempt(fresh);
        }
      }
      if (options.stream && response.ok) return response;
      // Read whole while the timeout still runs: a body that stalls is a timeout too.
      const body = [204, 205, 304].includes(response.status) ? null : await response.arrayBuffer();
      return new Response(body, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    } catch (error) {
      if (timer?.signal.aborted && !options.signal?.aborted) throw timer.signal.reason as Error;
      throw error;
    } finally {
      clearTimeout(timeout);
    }
  }

  private async currentToken(): Promise<string | undefined> {
    return typeof this.token === 'function' ? this.token() : this.token;
  }
}
