#!/usr/bin/env node
/**
 * Runs a simulated desktop app or browser extension against a gateway, so a person can try
 * node registration, tool calls and workflows by hand. One line per event on stderr; exits 0 on
 * SIGINT/SIGTERM after closing the connection, 1 when the server refuses the node for good,
 * 2 on bad arguments. See docs/clients.md.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { demoTools, demoWorkflows } from './demo-tools.js';
import { NodeClient } from './node-client.js';

const USAGE = `usage: simulate-node --kind desktop|extension --user <user_id>
                     [--token <access token> | --token-file <path> | --refresh-token-file <path>]
                     [--url ws://localhost:8000] [--api-url <http origin of POST /api/auth/refresh>]
                     [--node-id <id>] [--name <display name>] [--heartbeat-ms 20000] [--max-tasks 3]
Tokens may also come from the environment (kept out of ps and pnpm's banner):
  SIMULATE_NODE_REFRESH_TOKEN  a refresh token: the simulator gets and renews access tokens itself
  SIMULATE_NODE_TOKEN          an access token (valid one hour; not renewed)
--api-url defaults to --url with ws(s) as http(s).`;

function fail(message: string): never {
  process.stderr.write(`simulate-node: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function positiveInt(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) fail(`--${name} must be a positive integer`);
  return n;
}

let values;
try {
  ({ values } = parseArgs({
    options: {
      kind: { type: 'string' },
      url: { type: 'string', default: 'ws://localhost:8000' },
      user: { type: 'string' },
      token: { type: 'string' },
      'token-file': { type: 'string' },
      'refresh-token-file': { type: 'string' },
      'api-url': { type: 'string' },
      'node-id': { type: 'string' },
      name: { type: 'string' },
      'heartbeat-ms': { type: 'string' },
      'max-tasks': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  }));
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}
if (values.help) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(0);
}
const kind = values.kind;
if (kind !== 'desktop' && kind !== 'extension') fail('--kind must be desktop or extension');
if (!values.user) fail('--user is required');
const refreshToken =
  (values['refresh-token-file']
    ? readFileSync(values['refresh-token-file'], 'utf8').trim()
    : undefined) ?? process.env.SIMULATE_NODE_REFRESH_TOKEN?.trim();
const token =
  values.token ??
  (values['token-file'] ? readFileSync(values['token-file'], 'utf8').trim() : undefined) ??
  process.env.SIMULATE_NODE_TOKEN;
if (!token && !refreshToken) {
  fail(
    'a token is required (SIMULATE_NODE_REFRESH_TOKEN, --refresh-token-file, --token, ' +
      '--token-file or SIMULATE_NODE_TOKEN)',
  );
}
const apiUrl = values['api-url'] ?? values.url.replace(/^ws(s?):/, 'http$1:');

const log = (event: string, fields: Record<string, unknown> = {}) => {
  const parts = Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  process.stderr.write(
    `${new Date().toISOString()} ${event}${parts.length ? ` ${parts.join(' ')}` : ''}\n`,
  );
};

/** An access token's expiry (seconds), read from its payload; no verification needed here. */
function expiresAt(jwt: string): number {
  try {
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString());
    return typeof payload.exp === 'number' ? payload.exp : 0;
  } catch {
    return 0;
  }
}

let current: string | undefined;
/**
 * With a refresh token: an access token from `POST /api/auth/refresh`, renewed before each
 * connection attempt when it expires within a minute or the gateway refused it. A refused
 * refresh token, or no refresh route at the api URL (404), stops the simulator (exit 1):
 * retrying cannot help.
 */
async function freshToken(reason: string): Promise<string> {
  if (current && reason !== 'unauthorized' && expiresAt(current) - 60 > Date.now() / 1000) {
    return current;
  }
  const url = new URL('/api/auth/refresh', apiUrl);
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ refreshToken }),
  });
  if (response.status === 401) {
    log('refresh_refused', { message: 'the refresh token is invalid or expired' });
    process.exitCode = 1;
    void client.close();
    throw new Error('the refresh token is invalid or expired');
  }
  if (response.status === 404 || response.status === 405) {
    // Not the api role at that origin (a gateway-only port, a proxy without the route): every
    // retry would get the same answer.
    const message =
      `POST ${url.href} answered ${response.status}: no token refresh there; ` +
      `pass --api-url <http origin of the api role> (default: --url with ws(s) as http(s))`;
    log('refresh_not_found', { url: url.href, status: response.status });
    process.stderr.write(`simulate-node: ${message}\n`);
    process.exitCode = 1;
    void client.close();
    throw new Error(message);
  }
  if (!response.ok) throw new Error(`token refresh at ${url.href} answered ${response.status}`);
  current = ((await response.json()) as { accessToken: string }).accessToken;
  log('token_refreshed', { expires_at: new Date(expiresAt(current) * 1000).toISOString() });
  return current;
}

const client = new NodeClient({
  url: values.url,
  kind,
  userId: values.user,
  ...(refreshToken ? { getToken: ({ reason }) => freshToken(reason) } : { token: token! }),
  ...(values['node-id'] ? { nodeId: values['node-id'] } : {}),
  node: {
    name: values.name ?? `Simulated ${kind}`,
    appVersion: 'simulate-node/0.1.0',
    capabilities: kind === 'extension' ? ['tools', 'workflows'] : ['tools'],
    maxConcurrentTasks: positiveInt(values['max-tasks'], 'max-tasks', 3),
  },
  tools: demoTools(),
  ...(kind === 'extension' ? { workflows: demoWorkflows() } : {}),
  heartbeatMs: positiveInt(values['heartbeat-ms'], 'heartbeat-ms', 20_000),
});

client.on('connecting', (e) => log('connecting', { attempt: e.attempt, url: e.url }));
client.on('connected', () => log('connected', { node_id: client.nodeId }));
client.on('registered', (m) => log('registered', { node_id: m.node_id, kind }));
client.on('heartbeat', (e) =>
  log('heartbeat', { status: e.status, current_tasks: e.currentTasks }),
);
client.on('toolCall', (e) =>
  log('tool_call', { id: e.id, name: e.name, arguments: e.arguments, session_id: e.sessionId }),
);
client.on('toolResult', (e) =>
  log('tool_result', {
    id: e.id,
    name: e.name,
    ok: e.ok,
    error_code: e.errorCode,
    message: e.message,
    ms: e.durationMs,
  }),
);
client.on('workflowRun', (e) =>
  log('workflow_run', { task_id: e.taskId, workflow_id: e.workflowId, variables: e.variables }),
);
client.on('workflowDone', (e) =>
  log('workflow_done', { task_id: e.taskId, success: e.success, error: e.error }),
);
client.on('message', (m) => {
  if (m.type === 'get_workflows') log('get_workflows');
});
client.on('disconnected', (e) =>
  log('disconnected', {
    code: e.code,
    reason: e.reason || undefined,
    http_status: e.httpStatus,
    reconnect_in_ms: e.delayMs,
  }),
);
client.on('error', (e) => log('error', { code: e.code, message: e.message }));
client.on('stopped', ({ error }) => {
  log('stopped', { code: error.code, message: error.message });
  if (error.code !== 'closed') process.exitCode = 1;
  process.off('SIGINT', stop);
  process.off('SIGTERM', stop);
});

let stopping = false;
function stop(signal: NodeJS.Signals): void {
  if (stopping) return;
  stopping = true;
  log('stopping', { signal });
  // Exits by draining the event loop, not process.exit(): a handle left open would show as a hang
  // here before it shows in an embedding application. The watchdog names it instead of hanging.
  setTimeout(() => {
    log('exit_forced', { reason: 'handles still open 5 s after close' });
    process.exit(1);
  }, 5_000).unref();
  void client.close().then(() => log('closed'));
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

// A start that ends in `stopped` is already logged there.
client.start().catch(() => {});
