import type OpenAI from 'openai';
import type { ModelUrlGuard } from './model-url-guard.js';
import { loadOpenai } from './openai-sdk.js';

/** How a run's client talks to the provider; defaults are the documented ones. */
export interface LlmClientOptions {
  /** Time to the response headers of one model request, per attempt. @default 60_000 */
  timeoutMs?: number;
  /** Retries of a request that failed with 408/409/429/5xx or a connection error. @default 1 */
  maxRetries?: number;
  /**
   * The SSRF guard for a user-supplied base URL: checked before the client is built, and every
   * request of the client goes through its guarded fetch. Absent: the platform `fetch`, for
   * operator-configured URLs (`DEFAULT_LLM_BASE_URL`) and package tests.
   */
  guard?: ModelUrlGuard;
}

/** @see LlmClientOptions.timeoutMs */
export const DEFAULT_LLM_TIMEOUT_MS = 60_000;
/** One retry, not the SDK's two: a user watches the stream, a twice-failed provider is reported. */
export const DEFAULT_LLM_MAX_RETRIES = 1;

/** Clients kept for reuse (see {@link createLlmClient}); the least recently used goes first. */
export const LLM_CLIENTS_KEPT = 64;

/** The clients made, per guard ({@link UNGUARDED} for none), by their settings. */
const clients = new WeakMap<object, Map<string, OpenAI>>();
const UNGUARDED = {};

/**
 * An OpenAI client for a run's model. The SDK's logging is off (it could print request
 * details); the API key lives only in this client and in the Authorization header it sends.
 * Rejects with an `AgentRunError` when the guard refuses the base URL or cannot resolve it
 * (checked on every call). A client of the same base URL, key, settings and guard is reused
 * across runs (the last {@link LLM_CLIENTS_KEPT}): building one costs a share of a short run's
 * CPU before its model request. Connections are pooled by the guard's fetch either way.
 */
export async function createLlmClient<
  Model extends { readonly baseUrl: string; readonly apiKey: string },
>(config: Model, options: LlmClientOptions = {}): Promise<OpenAI> {
  const baseURL = config.baseUrl.replace(/\/+$/, '');
  if (options.guard) await options.guard.preflight(new URL(baseURL));
  const timeout = options.timeoutMs ?? DEFAULT_LLM_TIMEOUT_MS;
  const maxRetries = options.maxRetries ?? DEFAULT_LLM_MAX_RETRIES;
  const owner = options.guard ?? UNGUARDED;
  let kept = clients.get(owner);
  if (!kept) clients.set(owner, (kept = new Map()));
  const key = JSON.stringify([baseURL, config.apiKey, timeout, maxRetries]);
  const found = kept.get(key);
  if (found) {
    kept.delete(key);
    kept.set(key, found);
    return found;
  }
  const { default: OpenAI } = await loadOpenai();
  const client = new OpenAI({
    baseURL,
    apiKey: config.apiKey,
    timeout,
    maxRetries,
    logLevel: 'off',
    ...(options.guard ? { fetch: options.guard.fetch } : {}),
  });
  kept.set(key, client);
  if (kept.size > LLM_CLIENTS_KEPT) kept.delete(kept.keys().next().value!);
  return client;
}
