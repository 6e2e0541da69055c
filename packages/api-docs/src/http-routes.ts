import {
  AddDocumentRequest,
  AgentEvent,
  AgentStreamEventId,
  ApprovalDecisionParams,
  ApprovalDecisionRequest,
  ApprovalDecisionResponse,
  ApprovalDecisionsParams,
  ApprovalDecisionsRequest,
  ApprovalDecisionsResponse,
  AuthErrorBody,
  ChatPlatform,
  ConfirmRunRequest,
  ConfirmRunResponse,
  CreateKnowledgeBaseRequest,
  DeleteMemoriesResponse,
  DetailErrorBody,
  EncryptedBody,
  EventCallbackEnvelope,
  HealthResponse,
  InvokeRequest,
  KnowledgeBase,
  KnowledgeBaseList,
  KnowledgeDocument,
  KnowledgeDocumentList,
  ListMemoriesQuery,
  ListNodesQuery,
  ListNodesResponse,
  McpValidateRequest,
  McpValidateResponse,
  MemoryList,
  MessageReceiveEvent,
  NodeToolCallRequest,
  NodeToolCallResponse,
  PreviewChunksRequest,
  PreviewChunksResponse,
  ReadinessResponse,
  RefreshRequest,
  RefreshResponse,
  ResumeStreamParams,
  ScheduledTaskDetails,
  SearchKnowledgeBasesRequest,
  SearchKnowledgeBasesResponse,
  SkillList,
  TaskSyncRequest,
  TaskSyncResponse,
  UploadSkillRequest,
  UploadSkillResponse,
  UrlVerificationBody,
  UrlVerificationResponse,
  WebhookAck,
  WebhookRefusal,
  WhoamiResponse,
  DevTokenRequest,
  DevTokenResponse,
  PlaygroundConfig,
  ScheduledTaskList,
} from '@agent-backend/protocol';
import type { RouteDoc } from './route-doc.js';

/** The tags, in the order the documents list them, with what each groups. */
export const HTTP_TAGS = {
  agent: 'Agent runs: invoke with an SSE stream of events, resume, human-in-the-loop decisions.',
  auth: 'Access tokens.',
  knowledge: 'Knowledge bases, their documents, search, and the chunking preview.',
  memories: "The caller's long-term memories.",
  skills: "The caller's skills catalog.",
  mcp: 'MCP server validation.',
  nodes: "The caller's devices (browser extensions, desktop apps) and their tools.",
  'scheduled tasks': 'Scheduled tasks: the internal sync from the web layer, and confirmations.',
  'chat platform': 'The Lark/Feishu event callback.',
  health: 'Liveness and readiness, on every role.',
  documents: 'These API documents and the page that shows them.',
  playground: 'The web playground (docs/playground.md), a client of this API like any other.',
  operations: "Operators' tools (docs/operations.md).",
} as const;

type Tag = keyof typeof HTTP_TAGS;
type TaggedRoute = RouteDoc & { readonly tag: Tag };

const sseStream = {
  description:
    'An SSE stream (`text/event-stream`). Each event is an `id: <run_id>:<seq>` line (send it ' +
    'back as `Last-Event-ID` to resume) and a `data: <AgentEvent JSON>` line; comment lines ' +
    '(`:`) keep the connection alive. The last event is `done`, or `error` when the run failed ' +
    'after the stream started.',
  events: AgentEvent,
} as const;

const decisionErrors = [
  'not_found',
  'decision_not_allowed',
  'approval_closed',
  'approval_orphaned',
] as const;

const idParameter = (name: string, description: string) =>
  ({ in: 'path', name, description }) as const;

/**
 * Every HTTP route of every role. Tests compare it with the routes and mounts the running roles
 * register (both ways), with the kind of each one's authentication hook, and with the body, path
 * and query schemas they declare, so a route cannot be added, removed, re-authenticated or
 * re-validated without its document following.
 */
export const HTTP_ROUTES: readonly TaggedRoute[] = [
  // --- agent ---
  {
    method: 'POST',
    path: '/api/agent/invoke',
    roles: 'api',
    tag: 'agent',
    summary: 'Run the agent and stream its events',
    description:
      'Runs the agent on `message` and answers with the run as an SSE stream. The user is the ' +
      "access token's `sub`. A `session_id` names a session of this user only (another " +
      "user's session of the same id is a different one); ids starting with `chat:` or `task:` " +
      "are the service's own and refused (400 `session_id_reserved`). Failures known before " +
      'the stream starts are HTTP errors (409 `session_busy`: a run of the session is still ' +
      'going); later ones are an `error` event that ends the stream. Bodies up to 4 MiB.',
    auth: 'bearer',
    body: InvokeRequest,
    responses: { 200: sseStream },
    errors: ['session_id_reserved', 'session_busy'],
  },
  {
    method: 'GET',
    path: '/api/agent/sessions/:session_id/stream',
    roles: 'api',
    tag: 'agent',
    summary: "Resume the stream of a session's current run",
    description:
      'After a dropped connection, on any API replica: the events after `Last-Event-ID` (or ' +
      'all of the run when none is given), then the live events until the run ends. Only a ' +
      "session of the caller's own; `chat:` and `task:` ids are refused (400 " +
      '`session_id_reserved`).',
    auth: 'bearer',
    params: ResumeStreamParams,
    parameters: [
      {
        in: 'header',
        name: 'Last-Event-ID',
        description: 'The `id` of the last event received: `<run_id>:<seq>`.',
        schema: AgentStreamEventId,
      },
      {
        in: 'query',
        name: 'last_event_id',
        description: 'The same as `Last-Event-ID`, for clients that cannot set headers.',
        schema: AgentStreamEventId,
      },
    ],
    responses: { 200: sseStream },
    errors: ['session_id_reserved', 'not_found'],
  },
  {
    method: 'POST',
    path: '/api/agent/approvals/:request_id/decision',
    roles: 'api',
    tag: 'agent',
    summary: 'Decide on a tool call held for approval',
    description:
      'Approves, edits (the arguments are checked against the tool) or rejects the call of an ' +
      '`approval_request` event, on any API replica. See docs/hitl.md.',
    auth: 'bearer',
    params: ApprovalDecisionParams,
    body: ApprovalDecisionRequest,
    responses: { 200: { description: 'The decision is taken.', json: ApprovalDecisionResponse } },
    errors: decisionErrors,
  },
  {
    method: 'POST',
    path: '/api/agent/runs/:run_id/decisions',
    roles: 'api',
    tag: 'agent',
    summary: 'Decide on several held calls of one run at once',
    description:
      'All or nothing: every decision is checked before any is taken; the first refusal, in ' +
      'the order sent, is the answer, its `details` naming the entry (`index`, `request_id`).',
    auth: 'bearer',
    params: ApprovalDecisionsParams,
    body: ApprovalDecisionsRequest,
    responses: {
      200: {
        description: 'Every decision is taken, in the order sent.',
        json: ApprovalDecisionsResponse,
      },
    },
    errors: decisionErrors,
  },

  // --- auth ---
  {
    method: 'POST',
    path: '/api/auth/refresh',
    roles: 'api',
    tag: 'auth',
    summary: 'Exchange a refresh token for an access token',
    description: 'The refresh token is the credential; no Authorization header.',
    auth: 'none',
    body: RefreshRequest,
    responses: {
      200: { description: 'A new access token, valid for one hour.', json: RefreshResponse },
      401: {
        description:
          'The refresh token is unknown, expired or revoked (the flat `{ error }` body the specification fixes).',
        json: AuthErrorBody,
      },
    },
  },
  {
    method: 'GET',
    path: '/api/auth/whoami',
    roles: 'api',
    tag: 'auth',
    summary: 'The user of the access token',
    auth: 'bearer',
    responses: { 200: { description: "The token's user.", json: WhoamiResponse } },
  },

  // --- mcp ---
  {
    method: 'POST',
    path: '/api/tools/mcp/validate',
    roles: 'api',
    tag: 'mcp',
    summary: 'Connect to an MCP server and list its tools and prompts',
    description:
      'Private, loopback and metadata addresses are refused unless `MCP_ALLOW_PRIVATE_NETWORKS` ' +
      'is set; `stdio` runs only commands on `MCP_STDIO_ALLOWLIST`. Every failure to validate ' +
      'answers `{ detail }` (the shape the specification fixes for the timeout) with the kind of ' +
      'failure in the `X-Mcp-Error` header; a malformed body is the service-wide 400.',
    auth: 'bearer',
    body: McpValidateRequest,
    responses: {
      200: { description: 'Connected.', json: McpValidateResponse },
      400: mcpFailure('`invalid_config`: the server configuration cannot be used.'),
      403: mcpFailure(
        '`url_refused` (a private or metadata address) or `command_refused` (stdio command not allowed).',
      ),
      408: mcpFailure(
        '`timeout` or `aborted`: the server did not answer in time; `detail` names the server URL.',
      ),
      424: mcpFailure('`auth_rejected`: the MCP server refused the credentials.'),
      502: mcpFailure(
        '`dns_failed`, `unreachable`, `tls`, `redirect`, `not_mcp`, `handshake` or `process_failed`: the server could not be used.',
      ),
    },
  },

  // --- knowledge ---
  {
    method: 'POST',
    path: '/api/knowledge-base/preview-chunks',
    roles: 'api',
    tag: 'knowledge',
    summary: 'Show how a text would be split into chunks',
    description:
      'The splitter ingestion uses; nothing is stored. Bodies up to 10 MiB; a split of more than ' +
      '20,000 chunks (or twice the body in characters) is 413 `payload_too_large`.',
    auth: 'bearer',
    body: PreviewChunksRequest,
    responses: { 200: { description: 'The chunks.', json: PreviewChunksResponse } },
  },
  {
    method: 'POST',
    path: '/api/knowledge-bases/search',
    roles: 'api',
    tag: 'knowledge',
    summary: "Search the caller's knowledge bases",
    description: "Ids of other users' bases are searched as empty bases.",
    auth: 'bearer',
    body: SearchKnowledgeBasesRequest,
    responses: {
      200: { description: 'The hits, best first.', json: SearchKnowledgeBasesResponse },
    },
  },
  {
    method: 'POST',
    path: '/api/knowledge-bases',
    roles: 'api',
    tag: 'knowledge',
    summary: 'Create a knowledge base',
    auth: 'bearer',
    body: CreateKnowledgeBaseRequest,
    responses: { 201: { description: 'Created.', json: KnowledgeBase } },
  },
  {
    method: 'GET',
    path: '/api/knowledge-bases',
    roles: 'api',
    tag: 'knowledge',
    summary: "List the caller's knowledge bases",
    auth: 'bearer',
    responses: { 200: { description: 'Oldest first.', json: KnowledgeBaseList } },
  },
  {
    method: 'DELETE',
    path: '/api/knowledge-bases/:id',
    roles: 'api',
    tag: 'knowledge',
    summary: 'Delete a knowledge base and its documents',
    auth: 'bearer',
    parameters: [idParameter('id', 'The knowledge base.')],
    responses: { 204: { description: 'Deleted.' } },
    errors: ['not_found'],
  },
  {
    method: 'POST',
    path: '/api/knowledge-bases/:id/documents',
    roles: 'api',
    tag: 'knowledge',
    summary: 'Add a document (ingested in the background)',
    description:
      'Stored `pending` and queued; the worker chunks and indexes it (`ready`, or `failed` with ' +
      '`error`). Bodies up to 10 MiB.',
    auth: 'bearer',
    parameters: [idParameter('id', 'The knowledge base.')],
    body: AddDocumentRequest,
    responses: { 202: { description: 'Accepted, `pending`.', json: KnowledgeDocument } },
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/api/knowledge-bases/:id/documents',
    roles: 'api',
    tag: 'knowledge',
    summary: 'List the documents of a knowledge base',
    auth: 'bearer',
    parameters: [idParameter('id', 'The knowledge base.')],
    responses: { 200: { description: 'Oldest first.', json: KnowledgeDocumentList } },
    errors: ['not_found'],
  },
  {
    method: 'DELETE',
    path: '/api/knowledge-bases/:id/documents/:doc_id',
    roles: 'api',
    tag: 'knowledge',
    summary: 'Delete a document',
    auth: 'bearer',
    parameters: [idParameter('id', 'The knowledge base.'), idParameter('doc_id', 'The document.')],
    responses: { 204: { description: 'Deleted.' } },
    errors: ['not_found'],
  },

  // --- memories ---
  {
    method: 'GET',
    path: '/api/memories',
    roles: 'api',
    tag: 'memories',
    summary: "List the caller's memories, newest first",
    auth: 'bearer',
    query: ListMemoriesQuery,
    responses: { 200: { description: 'One page.', json: MemoryList } },
  },
  {
    method: 'DELETE',
    path: '/api/memories/:id',
    roles: 'api',
    tag: 'memories',
    summary: 'Delete one memory',
    auth: 'bearer',
    parameters: [idParameter('id', 'The memory.')],
    responses: { 204: { description: 'Deleted.' } },
    errors: ['not_found'],
  },
  {
    method: 'DELETE',
    path: '/api/memories',
    roles: 'api',
    tag: 'memories',
    summary: "Delete all of the caller's memories",
    auth: 'bearer',
    responses: { 200: { description: 'How many were deleted.', json: DeleteMemoriesResponse } },
  },

  // --- skills ---
  {
    method: 'GET',
    path: '/api/skills',
    roles: 'api',
    tag: 'skills',
    summary: "List the caller's skills catalog",
    description: "Shipped, operator and the caller's own skills (theirs shadow shared ones).",
    auth: 'bearer',
    responses: { 200: { description: 'The catalog.', json: SkillList } },
  },
  {
    method: 'POST',
    path: '/api/skills',
    roles: 'api',
    tag: 'skills',
    summary: "Add or replace one of the caller's skills",
    description:
      'A SKILL.md text, or a zip of the skill folder in base64 (at most 2 MiB). Every problem ' +
      'with the skill is a field error of a 400; 409 `conflict` when the caller has too many.',
    auth: 'bearer',
    body: UploadSkillRequest,
    responses: {
      200: { description: 'Replaced.', json: UploadSkillResponse },
      201: { description: 'Added.', json: UploadSkillResponse },
    },
    errors: ['conflict'],
  },
  {
    method: 'DELETE',
    path: '/api/skills/:name',
    roles: 'api',
    tag: 'skills',
    summary: "Delete one of the caller's skills",
    auth: 'bearer',
    parameters: [idParameter('name', 'The skill name.')],
    responses: { 204: { description: 'Deleted.' } },
    errors: ['not_found'],
  },

  // --- nodes ---
  {
    method: 'GET',
    path: '/node/devices',
    roles: 'api',
    tag: 'nodes',
    summary: "List the user's nodes",
    description: "`user_id` must be the access token's user (403 otherwise).",
    auth: 'bearer',
    query: ListNodesQuery,
    responses: { 200: { description: 'The nodes.', json: ListNodesResponse } },
    errors: ['forbidden'],
  },
  {
    method: 'POST',
    path: '/node/tools/call',
    roles: 'api',
    tag: 'nodes',
    summary: "Call a tool on one of the caller's nodes",
    description:
      "The node's own failures are 200 with `success: false`; not reaching the node is an " +
      'error: 404 `node_not_found`, 502 `node_disconnected` (dropped mid-call), 504 ' +
      '`node_timeout`.',
    auth: 'bearer',
    body: NodeToolCallRequest,
    responses: {
      200: { description: 'The tool ran (or failed on the node).', json: NodeToolCallResponse },
    },
    errors: ['node_not_found', 'node_disconnected', 'node_timeout'],
  },

  // --- scheduled tasks ---
  {
    method: 'POST',
    path: '/scheduled-task/sync',
    roles: 'api',
    tag: 'scheduled tasks',
    summary: 'Add, update or remove a scheduled task (internal)',
    description: 'Called by the web layer. An unusable schedule is a 400 with field errors.',
    auth: 'internal',
    body: TaskSyncRequest,
    responses: { 200: { description: 'Synced.', json: TaskSyncResponse } },
  },
  {
    method: 'GET',
    path: '/scheduled-task/:taskId',
    roles: 'api',
    tag: 'scheduled tasks',
    summary: 'A scheduled task, its status and recent occurrences (internal)',
    auth: 'internal',
    parameters: [idParameter('taskId', 'The task.')],
    responses: { 200: { description: 'The task.', json: ScheduledTaskDetails } },
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/api/scheduled-tasks',
    roles: 'api',
    tag: 'scheduled tasks',
    summary: "The caller's own scheduled tasks",
    description:
      "The token's user's tasks (removed ones left out), most recently changed first, at most " +
      '50, each with its 10 latest occurrences, newest first.',
    auth: 'bearer',
    responses: { 200: { description: 'The tasks.', json: ScheduledTaskList } },
  },
  {
    method: 'POST',
    path: '/scheduled-task/confirm',
    roles: 'api',
    tag: 'scheduled tasks',
    summary: 'Confirm or decline an occurrence that waits for the user',
    description:
      'The answer to a `scheduled_task_confirmation` WebSocket message. 404 when no occurrence ' +
      "of the task waits for this user (answered, expired, or another user's).",
    auth: 'bearer',
    body: ConfirmRunRequest,
    responses: { 200: { description: 'Answered.', json: ConfirmRunResponse } },
    errors: ['not_found'],
  },

  // --- chat platform ---
  {
    method: 'POST',
    path: '/channels/:platform/webhook',
    roles: 'api',
    tag: 'chat platform',
    summary: 'Receive a Lark/Feishu event',
    description:
      'Called by the platform. `url_verification` is answered with its challenge; ' +
      '`im.message.receive_v1` is deduplicated by event id, queued and acknowledged at once ' +
      '(a duplicate gets the same answer); other event types are acknowledged and ignored. ' +
      'With `LARK_ENCRYPT_KEY` set, bodies are `{ encrypt }` and every event but ' +
      '`url_verification` must carry a valid `X-Lark-Signature`; with ' +
      '`LARK_VERIFICATION_TOKEN` set, the token in the body must match.',
    auth: 'webhook',
    parameters: [
      { in: 'path', name: 'platform', description: 'The platform domain.', schema: ChatPlatform },
      {
        in: 'header',
        name: 'X-Lark-Signature',
        description:
          'sha256 of timestamp + nonce + encrypt key + raw body (required with an encrypt key).',
      },
      { in: 'header', name: 'X-Lark-Request-Timestamp', description: 'Seconds since the epoch.' },
      { in: 'header', name: 'X-Lark-Request-Nonce', description: 'The request nonce.' },
    ],
    rawBody: [UrlVerificationBody, EncryptedBody, MessageReceiveEvent, EventCallbackEnvelope],
    responses: {
      200: {
        description: 'The challenge of a `url_verification`, or the acknowledgement of an event.',
        json: [UrlVerificationResponse, WebhookAck],
      },
      400: {
        description: 'Not JSON, not decryptable, or not a valid event.',
        json: WebhookRefusal,
      },
      401: { description: 'Wrong signature or verification token.', json: WebhookRefusal },
      503: {
        description: 'The event could not be queued; the platform retries.',
        json: WebhookRefusal,
      },
    },
    errors: ['not_found'],
  },

  // --- health ---
  {
    method: 'GET',
    path: '/healthz',
    roles: 'every role',
    tag: 'health',
    summary: 'Liveness: the process answers',
    auth: 'none',
    responses: { 200: { description: 'Alive.', json: HealthResponse } },
  },
  {
    method: 'GET',
    path: '/readyz',
    roles: 'every role',
    tag: 'health',
    summary: 'Readiness: every dependency answers',
    auth: 'none',
    responses: {
      200: { description: 'Ready.', json: ReadinessResponse },
      503: {
        description: 'A dependency failed or did not answer within 2 s.',
        json: ReadinessResponse,
      },
    },
  },

  {
    method: 'GET',
    path: '/metrics',
    roles: 'every role',
    tag: 'health',
    summary: 'Prometheus metrics of this replica',
    description:
      'Off (404) with `METRICS_ENABLED=false`. With `METRICS_TOKEN` set it needs ' +
      '`Authorization: Bearer <METRICS_TOKEN>` (an operator credential, never a user token) and ' +
      'answers 401 otherwise. The metrics are listed in docs/operations.md.',
    auth: 'metrics',
    responses: {
      200: { description: 'The metrics.', text: 'Prometheus text exposition format 0.0.4' },
    },
    errors: ['unauthorized', 'not_found'],
  },

  // --- documents ---
  {
    method: 'GET',
    path: '/openapi.json',
    roles: 'api',
    tag: 'documents',
    summary: 'This document (OpenAPI 3.1)',
    auth: 'none',
    responses: { 200: { description: 'The OpenAPI document.', anyJson: true } },
  },
  {
    method: 'GET',
    path: '/asyncapi.json',
    roles: 'api',
    tag: 'documents',
    summary: 'The WebSocket protocol (AsyncAPI 3.0)',
    auth: 'none',
    responses: { 200: { description: 'The AsyncAPI document.', anyJson: true } },
  },
  {
    method: 'GET',
    path: '/docs',
    roles: 'api',
    tag: 'documents',
    summary: 'A page that shows both documents',
    description:
      'Self-contained: it loads nothing from outside the service. Served with a strict ' +
      'Content-Security-Policy (its one inline script and stylesheet allowed by hash) and no ' +
      "framing (`frame-ancestors 'none'`, `X-Frame-Options: DENY`).",
    auth: 'none',
    responses: { 200: { description: 'The page.', html: true } },
  },

  // --- playground ---
  {
    method: 'GET',
    path: '/',
    roles: 'api',
    tag: 'playground',
    summary: 'Redirect to the playground',
    description:
      'The playground itself is static files under `/playground/` (its page, script and ' +
      "stylesheet, and the client SDK's browser module at `/playground/sdk/`), served with a " +
      "strict Content-Security-Policy and no framing (`frame-ancestors 'none'`, " +
      '`X-Frame-Options: DENY`).',
    auth: 'none',
    responses: {
      302: { description: 'To `/playground/`.', headers: { Location: '`/playground/`' } },
    },
  },
  {
    method: 'GET',
    path: '/playground/config.json',
    roles: 'api',
    tag: 'playground',
    summary: 'What the playground offers on this service',
    auth: 'none',
    responses: { 200: { description: 'The settings.', json: PlaygroundConfig } },
  },
  ...(
    [
      ['/playground', 'The playground: its page and stylesheet'],
      ['/playground/js', "The playground's scripts"],
      ['/playground/sdk', "The client SDK's browser module, as the playground loads it"],
    ] as const
  ).map(([path, summary]): TaggedRoute => ({
    method: 'GET',
    path,
    mount: true,
    roles: 'api',
    tag: 'playground',
    summary,
    description:
      'Static files under this prefix (`x-mount`), with `Cache-Control: no-cache` and a strict ' +
      'Content-Security-Policy (nothing loaded from elsewhere). What is not there goes on to ' +
      'the routes, then 404.',
    auth: 'none',
    responses: { 200: { description: 'A file.', text: 'the file, by its extension' } },
    errors: ['not_found'],
  })),
  {
    method: 'GET',
    path: '/admin/queues',
    mount: true,
    roles: 'api',
    tag: 'operations',
    summary: 'The job queues dashboard (bull-board)',
    description:
      'Mounted only when the engine is BullMQ and `ADMIN_TOKEN` is set (otherwise 404): the ' +
      "service's queues, their jobs and outcomes, with bull-board's own pages and JSON API under " +
      'this prefix (`x-mount`). Needs `ADMIN_TOKEN` as a bearer token or as the password of ' +
      'basic authentication (a browser asks for it); a user access token is refused. Served ' +
      "with the service's Content-Security-Policy (scripts from the service only; inline styles " +
      "allowed, as bull-board renders them) and no framing (`frame-ancestors 'none'`, " +
      '`X-Frame-Options: DENY`). See docs/operations.md.',
    auth: 'admin',
    responses: { 200: { description: "The dashboard's page.", html: true } },
    errors: ['not_found'],
  },
  {
    method: 'POST',
    path: '/api/dev/tokens',
    roles: 'api',
    tag: 'playground',
    summary: 'Mint a token pair for any user (development only)',
    description:
      'Registered only when `DEV_TOKENS=true` (otherwise 404): anyone who reaches the service ' +
      'can then act as any user. For the playground and `pnpm demo`.',
    auth: 'none',
    body: DevTokenRequest,
    responses: { 200: { description: 'A token pair.', json: DevTokenResponse } },
  },
];

function mcpFailure(description: string) {
  return {
    description,
    json: DetailErrorBody,
    headers: { 'X-Mcp-Error': 'The kind of failure (`timeout`, `url_refused`, ...).' },
  };
}
