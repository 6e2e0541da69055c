import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { GuardedFetch, type UrlGuard } from '@agent-backend/url-guard';
import type { McpTransportType } from '@agent-backend/protocol';
import { classifyFailure, type FailureContext } from './classify-error.js';
import { McpConnection } from './connection.js';
import {
  buildHeaders,
  createHttpTransport,
  tracingFetch,
  type HttpTrace,
} from './http-transport.js';
import { displayUrl, secretsOf } from './redact.js';
import type { StdioPolicy } from './stdio-policy.js';
import { StdioProcessTransport, type SpawnFn } from './stdio-transport.js';
import { loadMcpSdk } from './mcp-sdk.js';

/** An MCP server as requests describe it (spec 2.3 `mcp` tool entry, 4.4 validation body). */
export interface McpServerConfig {
  name: string;
  /** http(s) URL, or the command line for `stdio`. */
  base_url: string;
  transport_type: McpTransportType;
  api_key?: string | undefined;
  headers?: Record<string, string> | undefined;
}

/** What the operator allows; built once per process from the configuration. */
export interface McpPolicy {
  /** Vets every URL, resolved address and redirect hop. */
  readonly urlGuard: UrlGuard;
  /** Which stdio command lines may run. */
  readonly stdio: StdioPolicy;
  /** Process spawner for stdio, injectable so tests can prove nothing was spawned. @default child_process.spawn */
  readonly spawn?: SpawnFn;
}

export interface ConnectOptions {
  /** Gives up when it fires (a client disconnecting, a run being cancelled). */
  signal?: AbortSignal;
  /** Deadline for connecting and the MCP `initialize` handshake. @default 15_000 */
  timeoutMs?: number;
  /**
   * Largest HTTP response body accepted from the server, so a hostile one cannot fill memory
   * (stdio messages are bounded by the SDK's 10 MiB line buffer). @default 16 MiB
   */
  maxResponseBytes?: number;
}

/** Client identity sent in `initialize`. */
const CLIENT_INFO = { name: 'agent-backend', version: '0.1.0' };
/** How long `close` waits for an HTTP session's DELETE before dropping the connection. */
const TERMINATE_TIMEOUT_MS = 1_000;

/**
 * Connects to an MCP server and completes the `initialize` handshake, within the policy: stdio
 * commands must be on the allowlist (checked before anything is spawned), http(s) URLs go through
 * the SSRF guard on every connection. Resolves with an open {@link McpConnection} (the caller
 * must `close` it); rejects with an `McpConnectError` whose `detail` is safe to show.
 */
export async function connectMcp(
  config: McpServerConfig,
  policy: McpPolicy,
  options: ConnectOptions = {},
): Promise<McpConnection> {
  const { Client } = await loadMcpSdk();
  const timeoutMs = options.timeoutMs ?? 15_000;
  const secrets = secretsOf(config);
  const trace: HttpTrace = {};
  let guarded: GuardedFetch | undefined;
  let stdio: StdioProcessTransport | undefined;
  let target = config.base_url;
  let transport: Transport;

  if (config.transport_type === 'stdio') {
    const argv = policy.stdio.allow(config.base_url);
    target = `stdio command "${argv[0]}"`;
    stdio = new StdioProcessTransport({ argv, spawn: policy.spawn });
    transport = stdio;
  } else {
    target = displayUrl(config.base_url);
    const headers = buildHeaders(config);
    let url: URL;
    try {
      url = policy.urlGuard.check(config.base_url);
    } catch (error) {
      throw classifyFailure(error, {
        ...baseContext(),
        deadlineExpired: false,
        callerAborted: false,
      });
    }
    guarded = new GuardedFetch(policy.urlGuard, {
      maxResponseBytes: options.maxResponseBytes ?? 16 * 1024 * 1024,
    });
    transport = createHttpTransport(
      config.transport_type,
      url,
      headers,
      tracingFetch(guarded.fetch, trace),
    );
  }

  function baseContext(): Omit<FailureContext, 'deadlineExpired' | 'callerAborted'> {
    return { target, timeoutMs, fetchError: guarded?.lastError, trace, stdio, secrets };
  }

  const client = new Client(CLIENT_INFO, { capabilities: {} });
  // Errors also reach the request that failed; the handler only keeps the SDK from logging them.
  client.onerror = () => {};
  let closed: Promise<void> | undefined;
  const release = () =>
    (closed ??= (async () => {
      const http = transport as { terminateSession?: () => Promise<void> };
      if (http.terminateSession) {
        await Promise.race([http.terminateSession().catch(() => {}), sleep(TERMINATE_TIMEOUT_MS)]);
      }
      await client.close().catch(() => {});
      await stdio?.close();
      guarded?.close();
    })());
  const classify = (error: unknown, ctx: Partial<FailureContext>) =>
    classifyFailure(error, {
      ...baseContext(),
      deadlineExpired: false,
      callerAborted: false,
      ...ctx,
    });

  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  try {
    await abortable(client.connect(transport, { signal, timeout: timeoutMs }), signal);
    return new McpConnection(client, classify, release);
  } catch (error) {
    await release();
    throw classify(error, {
      deadlineExpired: deadline.aborted,
      callerAborted: options.signal?.aborted ?? false,
    });
  }
}

/**
 * Rejects as soon as `signal` fires. `Client.connect` only honours the signal for its requests;
 * an SSE transport still waiting for its event stream would otherwise hang past the deadline.
 */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
