import {
  classifyOutboundFailure,
  GuardedFetch,
  PRIVATE_CATEGORIES,
  type FetchLike,
  type UrlGuard,
} from '@agent-backend/url-guard';
import { AgentRunError, RUN_ERROR_CODES, type RunErrorCode } from './errors.js';

/**
 * What the guarded fetch throws for a failure it recognised; the openai SDK keeps it as the
 * `cause` of its `APIConnectionError`, and `toRunError` takes the run error from it. The message
 * is deliberately plain: the SDK reads "timed out" anywhere in a fetch error's text as its own
 * timeout and drops the error, which would turn `ETIMEDOUT` or a host named `timeout.example`
 * into `llm_timeout`.
 */
export class ModelConnectError extends Error {
  constructor(readonly runError: AgentRunError) {
    super('the request to the model base URL failed');
    this.name = 'ModelConnectError';
  }
}

/**
 * The way to a user-supplied model base URL (`llm_config.baseUrl`): every request of the openai
 * client goes through one `GuardedFetch` on `guard`, so each connection is vetted where it is
 * made (the resolved address is the connected one, the socket's address is checked again), and
 * redirects are refused before their target is contacted (an OpenAI-compatible API has no reason
 * to redirect, and following one is how an allowed host hands the request to a refused one).
 * One instance serves every run of a process; `close` drops its pooled connections.
 *
 * Failures become run errors that say which of four things happened: refused by the policy
 * (`llm_base_url_refused`, naming `LLM_ALLOWED_ORIGINS` where it would help), a redirect
 * (`llm_redirect_refused`), a name that does not resolve (`llm_dns_failed`), no connection
 * (`llm_connect_failed`) or a failed TLS handshake (`llm_tls_failed`).
 */
export class ModelUrlGuard {
  readonly #guard: UrlGuard;
  readonly #guarded: GuardedFetch;
  /** The `fetch` for the openai client. */
  readonly fetch: FetchLike;

  constructor(guard: UrlGuard) {
    this.#guard = guard;
    this.#guarded = new GuardedFetch(guard);
    this.fetch = async (input, init) => {
      try {
        return await this.#guarded.fetch(input, { ...init, redirect: 'error' });
      } catch (error) {
        const url = URL.parse(input instanceof Request ? input.url : String(input));
        const failure = url && modelUrlFailure(error, url);
        throw failure ? new ModelConnectError(failure) : error;
      }
    };
  }

  /**
   * Checks the base URL and resolves its host before the client is built, so a refusal or a
   * name that does not resolve ends the run at once rather than after the SDK's retry. The
   * connection itself is checked again by the fetch (a name may resolve differently then).
   * Throws an {@link AgentRunError}.
   */
  async preflight(baseUrl: URL): Promise<void> {
    try {
      await this.#guard.forUrl(this.#guard.check(baseUrl)).resolve();
    } catch (error) {
      throw modelUrlFailure(error, baseUrl) ?? error;
    }
  }

  /** Drops pooled connections; requests in flight fail. */
  close(): void {
    this.#guarded.close();
  }
}

function fail(code: RunErrorCode, detail: string): AgentRunError {
  return new AgentRunError(code, `${RUN_ERROR_CODES[code]}${detail}`);
}

/**
 * The run error for a network or policy failure on the way to `url`, or `undefined` when
 * `error` is neither (an abort, a bug). Host names and origins in the message were written by
 * the user; paths and queries are left out (they may carry tokens). Without `url` the message
 * names no host (the platform `fetch` path, where only the error is known).
 */
export function modelUrlFailure(error: unknown, url?: URL): AgentRunError | undefined {
  const where = (host: string | undefined, description: string) =>
    host ? ` (${host}: ${description})` : ` (${description})`;
  const failure = classifyOutboundFailure(error);
  switch (failure?.kind) {
    case undefined:
      return undefined;
    case 'refused': {
      const { refusal } = failure;
      const hint = PRIVATE_CATEGORIES.has(refusal.reason as never)
        ? `; the operator can allow this model server with LLM_ALLOWED_ORIGINS=${url?.origin ?? '<origin>'}`
        : refusal.reason === 'metadata'
          ? '; cloud metadata addresses are never allowed'
          : '';
      return fail('llm_base_url_refused', `: ${refusal.message}${hint}`);
    }
    case 'redirect': {
      const { status, location } = failure.redirect;
      return fail(
        'llm_redirect_refused',
        ` (HTTP ${status} to ${location}); use the final URL as baseUrl`,
      );
    }
    case 'dns':
      return fail('llm_dns_failed', where(url?.hostname, failure.description));
    case 'connect':
      return fail('llm_connect_failed', where(url?.host, failure.description));
    case 'tls':
      return fail('llm_tls_failed', where(url?.host, failure.description));
  }
}
