/**
 * Stable codes of the `error` event that ends a failed run. Clients switch on the code; the
 * message is for people and never contains the API key or other secrets of the request.
 */
export const RUN_ERROR_CODES = {
  /** The provider refused the API key (401) or the key may not use the model (403). */
  llm_auth_failed: 'the model provider rejected the API key',
  /** The provider answered 429 after the retries. */
  llm_rate_limited: 'the model provider is rate limiting this key',
  /** 5xx after the retries, or the connection lost mid-answer. */
  llm_unavailable: 'the model provider is unavailable',
  /** No response headers within the request timeout, or the stream went silent too long. */
  llm_timeout: 'the model provider did not answer in time',
  /** Any other 4xx: unknown model, bad parameters, request too large for the model. */
  llm_request_rejected: 'the model provider rejected the request',
  /** The answer is not an OpenAI-compatible stream: bad JSON, broken tool calls, nothing. */
  llm_bad_response: 'the model provider sent a malformed answer',
  /** The SSRF guard's policy refused the base URL or an address it resolves to. */
  llm_base_url_refused: 'the model base URL is not allowed on this server',
  /** The base URL answered with a redirect; redirects are never followed for model requests. */
  llm_redirect_refused: 'the model base URL answered with a redirect, which is not followed',
  /** The base URL's host name does not resolve (or the resolver failed). */
  llm_dns_failed: 'the host name of the model base URL does not resolve',
  /** No connection: refused, reset or closed before an answer, no route, connect timed out. */
  llm_connect_failed: 'could not connect to the model base URL',
  /** The TLS handshake with the base URL failed (certificate, protocol). */
  llm_tls_failed: 'the TLS connection to the model base URL failed',
  /** The run used its step budget (model requests) without finishing. */
  max_steps_exceeded: 'the run reached its maximum number of steps',
  /** The user's daily token budget ran out during the run (after the model request that crossed it). */
  budget_exceeded: "the user's daily token budget is used up",
  /** No client stayed attached to the run (disconnect plus grace period), or it was cancelled. */
  run_aborted: 'the run was cancelled',
  /** The replica running it is shutting down; the conversation so far is saved. */
  server_shutdown: 'the service is restarting',
  /**
   * The replica running the run stopped sending events (it crashed) and no other replica or
   * worker took it over (`AGENT_TAKEOVER=false`, or a run stored before takeovers); seen on resume.
   */
  run_lost: 'the run stopped unexpectedly',
  /** A `local` run's `working_directory` is not inside the user's directory (or does not exist). */
  working_directory_refused: 'the working directory is not one this user may use',
  /** The database or Redis could not be reached (down, restarting, stalled); retry shortly. */
  unavailable: 'the database or Redis is unavailable; retry shortly',
  /** A bug; details are in the service log. */
  internal_error: 'the run failed unexpectedly',
} as const;
export type RunErrorCode = keyof typeof RUN_ERROR_CODES;

/** A run failure that becomes the stream's `error` event with a stable code. */
export class AgentRunError extends Error {
  constructor(
    readonly code: RunErrorCode,
    message: string = RUN_ERROR_CODES[code],
  ) {
    super(message);
    this.name = 'AgentRunError';
  }
}

/** Another run of the session is in progress (on any replica); the request is refused, not queued. */
export class SessionBusyError extends Error {
  readonly code = 'session_busy';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} has a run in progress; retry when it has finished`);
    this.name = 'SessionBusyError';
  }
}

/**
 * The run suspended: its turn waits for approvals, stored with its state; whoever decides them
 * last resumes it (on any replica or a worker). Not a failure: the stream ends with `suspended`.
 */
export class RunSuspendedError extends Error {
  constructor() {
    super('the run suspended while tool calls wait for approval');
    this.name = 'RunSuspendedError';
  }
}

/**
 * The abort reason that makes a run let go without ending (a worker's drain ran out): events
 * and stores stop at once (what it did so far is stored and in the run log), its session lease
 * is released, and the run stays `running` for another process to take over from its last
 * step, as after a crash (`RunResult.status` `handed_over`).
 */
export class RunHandOver extends Error {
  constructor() {
    super('the run is handed over to another process');
    this.name = 'RunHandOver';
  }
}

/** Whether `signal` aborted to hand its run over (see {@link RunHandOver}). */
export const handingOver = (signal: AbortSignal): boolean =>
  signal.aborted && signal.reason instanceof RunHandOver;
