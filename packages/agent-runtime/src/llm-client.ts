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

/**
 * An OpenAI client for one run's model. The SDK's logging is off (it could print request
 * details); the API key lives only in this client and in the Authorization header it sends.
 * Rejects with an `AgentRunError` when the guard refuses the base URL or cannot resolve it.
 */
export async function createLlmClient<
  Model extends { readonly baseUrl: string; readonly apiKey: string },
>(config: Model, options: LlmClientOptions = {}): Promise<OpenAI> {
  const baseURL = config.baseUrl.replace(/\/+$/, '');
  if (options.guard) await options.guard.preflight(new URL(baseURL));
  const { default: OpenAI } = await loadOpenai();
  return new OpenAI({
    baseURL,
    apiKey: config.apiKey,
    timeout: options.timeoutMs ?? DEFAULT_LLM_TIMEOUT_MS,
    maxRetries: options.maxRetries ?? DEFAULT_LLM_MAX_RETRIES,
    logLevel: 'off',
    ...(options.guard ? { fetch: options.guard.fetch } : {}),
  });
}
