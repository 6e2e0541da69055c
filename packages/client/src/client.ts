import type {
  AddDocumentRequestInput,
  AgentEvent,
  ApprovalDecisionItem,
  ApprovalDecisionRequest,
  ApprovalDecisionResponse,
  ApprovalDecisionsResponse,
  ChunkPreviewItem,
  DeleteMemoriesResponse,
  InvokeRequestInput,
  KnowledgeBase,
  KnowledgeBaseList,
  KnowledgeDocument,
  KnowledgeDocumentList,
  KnowledgeSearchHit,
  ListNodesResponse,
  MemoryList,
  NodeToolCallResponse,
  NodeType,
  PreviewChunksRequestInput,
  RefreshResponse,
  ScheduledTaskList,
  ScheduledTaskDetails,
  SkillList,
  UploadSkillRequest,
  UploadSkillResponse,
} from '@agent-backend/protocol';
import { BrowserWebClient, type BrowserWebClientOptions } from './browser-web-client.js';
import { parseSse } from './sse.js';

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
  /** How an interrupted agent stream is resumed. */
  readonly resume?: {
    /** Reconnections in a row without an event in between. @default 5 */
    readonly maxAttempts?: number;
    /** Wait before the n-th attempt: `n × delayMs`. @default 500 */
    readonly delayMs?: number;
  };
}

/** An answer of the service that is not a success, with its documented error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The stream of a run ended without `done` or `error`, and could not be resumed. */
export class StreamInterruptedError extends Error {
  constructor(
    message: string,
    readonly lastEventId: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StreamInterruptedError';
  }
}

interface RequestOptions {
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly signal?: AbortSignal;
}

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
  invoke(request: InvokeRequestInput, options: { signal?: AbortSignal } = {}): AgentRun {
    return new AgentRun(
      (lastEventId, sessionId) =>
        lastEventId && sessionId
          ? this.send('GET', `/api/agent/sessions/${encodeURIComponent(sessionId)}/stream`, {
              headers: { 'last-event-id': lastEventId, accept: 'text/event-stream' },
              signal: options.signal,
            })
          : this.send('POST', '/api/agent/invoke', {
              body: request,
              headers: { accept: 'text/event-stream' },
              signal: options.signal,
            }),
      this.options.resume,
      options.signal,
    );
  }

  /** Follows a session's latest run from `lastEventId` (or its start). */
  resume(
    sessionId: string,
    lastEventId?: string,
    options: { signal?: AbortSignal } = {},
  ): AgentRun {
    return new AgentRun(
      (after) =>
        this.send('GET', `/api/agent/sessions/${encodeURIComponent(sessionId)}/stream`, {
          headers: {
            accept: 'text/event-stream',
            ...((after ?? lastEventId) ? { 'last-event-id': (after ?? lastEventId)! } : {}),
          },
          signal: options.signal,
        }),
      this.options.resume,
      options.signal,
    );
  }

  /** Decides one held tool call (`approval_request.request_id`). */
  decide(requestId: string, decision: ApprovalDecisionRequest): Promise<ApprovalDecisionResponse> {
    return this.json('POST', `/api/agent/approvals/${encodeURIComponent(requestId)}/decision`, {
      body: decision,
    });
  }

  /** Decides several held calls of one run at once. */
  decideAll(runId: string, decisions: ApprovalDecisionItem[]): Promise<ApprovalDecisionsResponse> {
    return this.json('POST', `/api/agent/runs/${encodeURIComponent(runId)}/decisions`, {
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

  /** The user id of the token (`GET /api/auth/whoami`), asked once. */
  whoami(): Promise<string> {
    this.userId ??= this.json<{ user_id: string }>('GET', '/api/auth/whoami').then(
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
    ): Promise<ListNodesResponse> => {
      const params = new URLSearchParams({ user_id: await this.whoami() });
      if (query.node_type) params.set('node_type', query.node_type);
      if (query.online_only !== undefined) params.set('online_only', String(query.online_only));
      return this.json('GET', `/node/devices?${params}`);
    },
    /** Calls a tool on one of the user's nodes (`POST /node/tools/call`). */
    callTool: (call: {
      node_type: NodeType;
      tool_name: string;
      arguments?: Record<string, unknown>;
      node_id?: string;
      session_id?: string;
      timeout_ms?: number;
    }): Promise<NodeToolCallResponse> => this.json('POST', '/node/tools/call', { body: call }),
  };

  readonly knowledgeBases = {
    list: async (): Promise<KnowledgeBase[]> =>
      (await this.json<KnowledgeBaseList>('GET', '/api/knowledge-bases')).knowledge_bases,
    create: (base: { name: string; description?: string }): Promise<KnowledgeBase> =>
      this.json('POST', '/api/knowledge-bases', { body: base }),
    delete: (id: string): Promise<void> =>
      this.json('DELETE', `/api/knowledge-bases/${encodeURIComponent(id)}`),
    documents: async (id: string): Promise<KnowledgeDocument[]> =>
      (
        await this.json<KnowledgeDocumentList>(
          'GET',
          `/api/knowledge-bases/${encodeURIComponent(id)}/documents`,
        )
      ).documents,
    addDocument: (id: string, document: AddDocumentRequestInput): Promise<KnowledgeDocument> =>
      this.json('POST', `/api/knowledge-bases/${encodeURIComponent(id)}/documents`, {
        body: document,
      }),
    deleteDocument: (id: string, documentId: string): Promise<void> =>
      this.json(
        'DELETE',
        `/api/knowledge-bases/${encodeURIComponent(id)}/documents/${encodeURIComponent(documentId)}`,
      ),
    search: async (
      query: string,
      knowledgeBaseIds: string[],
      limit?: number,
    ): Promise<KnowledgeSearchHit[]> =>
      (
        await this.json<{ results: KnowledgeSearchHit[] }>('POST', '/api/knowledge-bases/search', {
          body: { query, knowledge_base_ids: knowledgeBaseIds, ...(limit ? { limit } : {}) },
        })
      ).results,
    previewChunks: async (request: PreviewChunksRequestInput): Promise<ChunkPreviewItem[]> =>
      (
        await this.json<{ chunks: ChunkPreviewItem[] }>(
          'POST',
          '/api/knowledge-base/preview-chunks',
          { body: request },
        )
      ).chunks,
  };

  readonly memories = {
    /** A page of the user's memories, newest first; `cursor` is the previous `next_cursor`. */
    list: (query: { q?: string; cursor?: string; limit?: number } = {}): Promise<MemoryList> => {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(query)) {
        if (value !== undefined) params.set(key, String(value));
      }
      const search = params.size > 0 ? `?${params}` : '';
      return this.json('GET', `/api/memories${search}`);
    },
    delete: (id: string): Promise<void> =>
      this.json('DELETE', `/api/memories/${encodeURIComponent(id)}`),
    clear: (): Promise<DeleteMemoriesResponse> => this.json('DELETE', '/api/memories'),
  };

  readonly skills = {
    list: async (): Promise<SkillList['skills']> =>
      (await this.json<SkillList>('GET', '/api/skills')).skills,
    upload: (skill: UploadSkillRequest): Promise<UploadSkillResponse> =>
      this.json('POST', '/api/skills', { body: skill }),
    delete: (name: string): Promise<void> =>
      this.json('DELETE', `/api/skills/${encodeURIComponent(name)}`),
  };

  readonly scheduledTasks = {
    /** The user's scheduled tasks with their latest occurrences (`GET /api/scheduled-tasks`). */
    list: async (): Promise<ScheduledTaskDetails[]> =>
      (await this.json<ScheduledTaskList>('GET', '/api/scheduled-tasks')).tasks,
    /** Answers a `scheduled_task_confirmation` (`POST /scheduled-task/confirm`). */
    confirm: (
      taskId: string,
      scheduledAt: string,
      confirm: boolean,
    ): Promise<{ success: boolean; status: string }> =>
      this.json('POST', '/scheduled-task/confirm', {
        body: { task_id: taskId, scheduled_at: scheduledAt, confirm },
      }),
  };

  /** A JSON request; the parsed answer (`undefined` for 204). */
  private async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.send(method, path, options);
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  /** Sends with the token; once more with a fresh one after a 401; throws {@link ApiError}. */
  private async send(method: string, path: string, options: RequestOptions): Promise<Response> {
    const attempt = async (token: string | undefined) =>
      this.fetchImpl(`${this.baseUrl}${path}`, {
        method,
        headers: {
          ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...options.headers,
        },
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
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
    if (!response.ok) throw await apiError(response);
    return response;
  }

  private async currentToken(): Promise<string | undefined> {
    return typeof this.token === 'function' ? this.token() : this.token;
  }
}

/**
 * Access tokens from a refresh token (`POST /api/auth/refresh`): the first request gets one,
 * a 401 gets a new one. Spread it into {@link ClientOptions}.
 */
export function refreshTokenAuth(options: {
  baseUrl: string;
  refreshToken: string;
  fetch?: typeof fetch;
}): Pick<ClientOptions, 'token' | 'onUnauthorized'> {
  const fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  let current: Promise<string> | undefined;
  const refresh = () => {
    current = (async () => {
      const response = await fetchImpl(`${options.baseUrl.replace(/\/+$/, '')}/api/auth/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refreshToken: options.refreshToken }),
      });
      if (!response.ok) throw await apiError(response);
      return ((await response.json()) as RefreshResponse).accessToken;
    })();
    current.catch(() => (current = undefined));
    return current;
  };
  return {
    token: () => current ?? refresh(),
    onUnauthorized: () => refresh(),
  };
}

/**
 * A run's events as an async iterable (`for await (const event of run)`), resumed after a
 * dropped connection. `sessionId`, `runId` and `lastEventId` are known once the events carrying
 * them arrived.
 */
export class AgentRun implements AsyncIterable<AgentEvent> {
  sessionId: string | undefined;
  runId: string | undefined;
  lastEventId: string | undefined;
  private started = false;

  constructor(
    private readonly open: (lastEventId?: string, sessionId?: string) => Promise<Response>,
    private readonly resume: ClientOptions['resume'],
    private readonly signal: AbortSignal | undefined,
  ) {}

  /** Every event until the run ends. */
  async events(): Promise<AgentEvent[]> {
    const all: AgentEvent[] = [];
    for await (const event of this) all.push(event);
    return all;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<AgentEvent> {
    if (this.started) throw new Error('a run is iterated once');
    this.started = true;
    const maxAttempts = this.resume?.maxAttempts ?? 5;
    const delayMs = this.resume?.delayMs ?? 500;
    let response = await this.open();
    let attempts = 0;
    for (;;) {
      let failure: unknown;
      try {
        for await (const message of parseSse(response.body!)) {
          if (message.id) this.lastEventId = message.id;
          const event = JSON.parse(message.data) as AgentEvent;
          if (event.type === 'session') {
            this.sessionId = event.session_id;
            this.runId = event.run_id;
          }
          attempts = 0;
          yield event;
          if (event.type === 'done' || event.type === 'error') return;
        }
      } catch (error) {
        if (this.signal?.aborted) throw error;
        failure = error;
      }
      // The connection ended before the run did: resume where it stopped.
      if (!this.sessionId || attempts >= maxAttempts) {
        throw new StreamInterruptedError(
          this.sessionId
            ? `the stream of session ${this.sessionId} was interrupted ${attempts} times in a row`
            : 'the stream ended before the run was known',
          this.lastEventId,
          { cause: failure },
        );
      }
      attempts += 1;
      await sleep(attempts * delayMs, this.signal);
      try {
        response = await this.open(this.lastEventId, this.sessionId);
      } catch (error) {
        // A replica restarting answers 503 or not at all: try again. A 4xx (the stream is no
        // longer available, the session is not the user's) is final.
        if (this.signal?.aborted || (error instanceof ApiError && error.status < 500)) throw error;
        response = new Response('');
      }
    }
  }
}

async function apiError(response: Response): Promise<ApiError> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  const error = (body as { error?: unknown } | undefined)?.error;
  if (error && typeof error === 'object') {
    const { code, message, details } = error as {
      code?: string;
      message?: string;
      details?: unknown;
    };
    return new ApiError(
      response.status,
      code ?? 'unknown',
      message ?? response.statusText,
      details,
    );
  }
  // The refresh endpoint's body is `{ error: "<message>" }` (fixed by the spec).
  const message = typeof error === 'string' ? error : response.statusText;
  return new ApiError(
    response.status,
    response.status === 401 ? 'unauthorized' : 'unknown',
    message,
  );
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
