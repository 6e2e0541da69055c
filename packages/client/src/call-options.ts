/** Options every call takes as its last argument. */
export interface CallOptions {
  /** Aborts the call (and a stream being read): the call rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * Milliseconds to wait for the answer (a JSON answer's body included; a stream's first bytes,
   * not the whole stream) before the request is aborted with {@link TimeoutError}.
   */
  readonly timeout?: number;
  /**
   * Attempts after the first when the service could not take the request: 429 `rate_limited`
   * (after its `Retry-After`) and 503 `unavailable` on every call; on GET, PUT and DELETE also
   * a network failure, a timeout, and 502/504. A POST or PATCH is never sent twice after its
   * request may have reached the service. Backoff 200 ms × 2ⁿ, at most 5 s.
   */
  readonly retries?: number;
}

/** A JSON request of the client (its token, timeout, retries and typed errors). */
export type JsonRequest = <T>(
  method: string,
  path: string,
  options?: CallOptions & { body?: unknown },
) => Promise<T>;
