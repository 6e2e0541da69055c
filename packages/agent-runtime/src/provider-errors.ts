import type { APIError } from 'openai';
import { classifyOutboundFailure, errorChain } from '@agent-backend/url-guard';
import { AgentRunError, RUN_ERROR_CODES, type RunErrorCode } from './errors.js';
import { ModelConnectError, modelUrlFailure } from './model-url-guard.js';
import { loadedOpenai, type OpenaiSdk } from './openai-sdk.js';

/** Longest provider message quoted in an error event. */
const MAX_PROVIDER_MESSAGE = 300;

/**
 * Removes secrets from text that came from the provider before it reaches a client or a log:
 * the run's API key wherever it appears (a hostile or careless server may echo it), and
 * anything shaped like a provider key or bearer token.
 */
export function scrubSecrets(text: string, apiKey: string): string {
  let out = text;
  if (apiKey.length > 0) out = out.split(apiKey).join('[REDACTED]');
  return out
    .replace(/\b(sk|pk|rk)-[A-Za-z0-9_*.-]{6,}/g, '[REDACTED]')
    .replace(/\bBearer\s+[A-Za-z0-9._~+/=-]+/gi, 'Bearer [REDACTED]');
}

function providerMessage(error: APIError, apiKey: string): string {
  const body = error.error as { message?: unknown } | undefined;
  const raw = typeof body?.message === 'string' ? body.message : '';
  const clean = scrubSecrets(raw, apiKey).replace(/\s+/g, ' ').trim();
  if (!clean) return '';
  return `: ${clean.length > MAX_PROVIDER_MESSAGE ? `${clean.slice(0, MAX_PROVIDER_MESSAGE)}…` : clean}`;
}

function fail(code: RunErrorCode, detail: string): AgentRunError {
  return new AgentRunError(code, `${RUN_ERROR_CODES[code]}${detail}`);
}

/** The run error of an error of the SDK's own classes; undefined for any other error. */
function sdkRunError(sdk: OpenaiSdk, error: unknown, apiKey: string): AgentRunError | undefined {
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = sdk;
  if (error instanceof APIUserAbortError) return new AgentRunError('run_aborted');
  if (error instanceof APIConnectionTimeoutError) return fail('llm_timeout', '');
  if (error instanceof APIConnectionError) {
    // The platform fetch (operator-configured base URLs): the same classes from the cause.
    return modelUrlFailure(error.cause) ?? fail('llm_connect_failed', '');
  }
  if (error instanceof APIError) {
    const status = error.status;
    const detail = providerMessage(error, apiKey);
    if (status === undefined) return fail('llm_bad_response', ` (error in the stream)${detail}`);
    const code: RunErrorCode =
      status === 401 || status === 403
        ? 'llm_auth_failed'
        : status === 429
          ? 'llm_rate_limited'
          : status === 408
            ? 'llm_timeout'
            : status >= 500
              ? 'llm_unavailable'
              : 'llm_request_rejected';
    return fail(code, ` (HTTP ${status})${detail}`);
  }
  return undefined;
}

/**
 * Maps whatever the openai client threw (or the stream broke with) to a run error with a stable
 * code. The HTTP status is kept in the message; the provider's own message is quoted after
 * removing secrets. Aborts are not mapped here: the caller knows why it aborted.
 */
export function toRunError(error: unknown, apiKey: string): AgentRunError {
  if (error instanceof AgentRunError) return error;
  // A failure the guarded fetch classified (policy, redirect, DNS, connect, TLS), wrapped by the SDK.
  const connect = errorChain(error).find((e) => e instanceof ModelConnectError);
  if (connect) return connect.runError;
  // The SDK not loaded: no client was made, so the error is none of its classes.
  const sdk = loadedOpenai();
  const fromSdk = sdk && sdkRunError(sdk, error, apiKey);
  if (fromSdk) return fromSdk;
  if (error instanceof SyntaxError)
    return fail('llm_bad_response', ' (invalid JSON in the stream)');
  // undici reports a connection lost mid-body as TypeError('terminated'); node:http (the
  // guarded fetch) as an `aborted` error with code ECONNRESET.
  if (error instanceof TypeError || classifyOutboundFailure(error)?.kind === 'connect')
    return fail('llm_unavailable', ' (connection lost mid-answer)');
  return new AgentRunError('internal_error');
}
