/**
 * What the providers' HTTP answers need read: bodies, rate limits and how long they ask to wait,
 * and model-supplied text made safe for a path or an error message.
 */

/** The wait before retrying a 429 that names no time (no `Retry-After`, no reset). */
export const DEFAULT_RATE_LIMIT_WAIT_MS = 1_000;

/** A call's failure the model can explain to the user; `content` never holds a token. */
export class SaasError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SaasError';
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export async function readBody(response: Response, text: boolean): Promise<unknown> {
  const raw = await response.text();
  if (text && response.ok) return raw;
  if (!raw) return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw.slice(0, 200);
  }
}

/** Why an answer is a rate limit, and how long it asks to wait (unknown: undefined). */
export interface RateLimit {
  readonly waitMs: number | undefined;
}

/**
 * A rate-limited answer: any 429; a 403 with `x-ratelimit-remaining: 0` (GitHub's primary
 * limit, until `x-ratelimit-reset`, epoch seconds) or with `Retry-After` or a "secondary rate
 * limit" message (GitHub's secondary limits; without a time GitHub asks for at least a minute);
 * Google's 403 whose `errors[].reason` is `userRateLimitExceeded` / `rateLimitExceeded`.
 * A 429 (or Google's 403) that names no time gets {@link DEFAULT_RATE_LIMIT_WAIT_MS}.
 */
export function rateLimit(response: Response, body: unknown): RateLimit | undefined {
  const { status, headers } = response;
  if (status !== 429 && status !== 403) return undefined;
  const retryAfter = retryAfterMs(headers.get('retry-after'));
  const exhausted = headers.get('x-ratelimit-remaining') === '0';
  const reset = Number(headers.get('x-ratelimit-reset'));
  const untilReset =
    exhausted && Number.isFinite(reset) && reset > 0
      ? Math.max(0, reset * 1000 - Date.now())
      : undefined;
  if (status === 429) return { waitMs: retryAfter ?? untilReset ?? DEFAULT_RATE_LIMIT_WAIT_MS };
  const message = isRecord(body) && typeof body.message === 'string' ? body.message : '';
  if (exhausted || retryAfter !== undefined || /secondary rate limit/i.test(message)) {
    return { waitMs: retryAfter ?? untilReset };
  }
  if (googleRateLimited(body)) return { waitMs: DEFAULT_RATE_LIMIT_WAIT_MS };
  return undefined;
}

/** Google's 403 "User rate limit exceeded": `error.errors[].reason` names a rate limit. */
function googleRateLimited(body: unknown): boolean {
  const error = isRecord(body) ? body.error : undefined;
  const errors = isRecord(error) && Array.isArray(error.errors) ? (error.errors as unknown[]) : [];
  return errors.some(
    (e) =>
      isRecord(e) && (e.reason === 'userRateLimitExceeded' || e.reason === 'rateLimitExceeded'),
  );
}

/** Waits for `promise` unless `signal` aborts first; the promise runs on either way. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  promise.catch(() => undefined);
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}

/**
 * One path segment from a model-supplied id: percent-encoded, so `/`, `?`, `#` or `..` in an id
 * cannot change which endpoint is asked. Ids that are only dots are refused.
 */
export function segment(id: string): string {
  if (/^\.+$/.test(id)) throw new SaasError(`"${id}" is not a valid id.`);
  return encodeURIComponent(id);
}

/** `Retry-After` in ms: seconds, or an HTTP date. */
export function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** Cuts a text for the model, saying so. */
export function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}\n[cut at ${max} characters]` : text;
}
