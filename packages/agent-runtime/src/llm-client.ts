import OpenAI from 'openai';
import { AgentRunError } from './errors.js';

/**
 * Checks a user-supplied model base URL before anything connects to it; rejects (with a message
 * safe to show the user) when it may not be reached. This is where the SSRF guard plugs in.
 */
export type BaseUrlCheck = (url: URL) => Promise<void>;

/** How a run's client talks to the provider; defaults are the documented ones. */
export interface LlmClientOptions {
  /** Time to the response headers of one model request, per attempt. @default 60_000 */
  timeoutMs?: number;
  /** Retries of a request that failed with 408/409/429/5xx or a connection error. @default 1 */
  maxRetries?: number;
  checkBaseUrl?: BaseUrlCheck;
  /** Replaces `fetch` (e.g. one that pins the resolved address, against DNS rebinding). */
  fetch?: typeof fetch;
}

/** @see LlmClientOptions.timeoutMs */
export const DEFAULT_LLM_TIMEOUT_MS = 60_000;
/** One retry, not the SDK's two: a user watches the stream, a twice-failed provider is reported. */
export const DEFAULT_LLM_MAX_RETRIES = 1;

/**
 * An OpenAI client for one run's model. The SDK's logging is off (it could print request
 * details); the API key lives only in this client and in the Authorization header it sends.
 */
export async function createLlmClient<
  Model extends { readonly baseUrl: string; readonly apiKey: string },
>(config: Model, options: LlmClientOptions = {}): Promise<OpenAI> {
  const baseURL = config.baseUrl.replace(/\/+$/, '');
  // ─── SSRF GUARD ──────────────────────────────────────────────────────────────────────────
  // The single place a user-supplied model base URL is checked before the service connects to
  // it. `checkBaseUrl` is wired by the api role (packages/url-guard); without it every http(s)
  // URL is reached, which is what development and the tests want.
  if (options.checkBaseUrl) {
    try {
      await options.checkBaseUrl(new URL(baseURL));
    } catch (error) {
      const reason = error instanceof Error ? `: ${error.message}` : '';
      throw new AgentRunError('llm_base_url_refused', `the model base URL is not allowed${reason}`);
    }
  }
  // ─────────────────────────────────────────────────────────────────────────────────────────
  return new OpenAI({
    baseURL,
    apiKey: config.apiKey,
    timeout: options.timeoutMs ?? DEFAULT_LLM_TIMEOUT_MS,
    maxRetries: options.maxRetries ?? DEFAULT_LLM_MAX_RETRIES,
    logLevel: 'off',
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
