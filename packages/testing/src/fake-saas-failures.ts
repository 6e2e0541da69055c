import type { ServerResponse } from 'node:http';
import { sendJson } from './fake-http.js';
import { errorBody, type FakeSaasProvider } from './fake-saas-data.js';

/** A failure the next requests to a provider meet. */
export interface FakeSaasFailure {
  status: number;
  times: number;
  retryAfter?: number;
  /** GitHub's primary rate limit, reset this many seconds after the answer. */
  resetInSeconds?: number;
  /** GitHub's secondary rate limit. */
  secondary?: boolean;
  /** Google's per-user quota. */
  userRateLimit?: boolean;
}

/** Failures injected into the providers' APIs, and GitHub's rate-limit headers. */
export class FakeSaasFailures {
  private readonly failures = new Map<FakeSaasProvider, FakeSaasFailure>();
  private githubUsed = 0;
  private readonly githubReset = Math.floor(Date.now() / 1000) + 3600;

  set(provider: FakeSaasProvider, failure: FakeSaasFailure): void {
    this.failures.set(provider, failure);
  }

  /**
   * Every GitHub answer carries the primary rate limit's state (docs.github.com, "Rate limits for
   * the REST API"); `x-ratelimit-reset` is in epoch seconds.
   */
  githubHeaders(res: ServerResponse, path: string): void {
    this.githubUsed += 1;
    res.setHeader('x-ratelimit-limit', '5000');
    res.setHeader('x-ratelimit-remaining', String(Math.max(0, 5000 - this.githubUsed)));
    res.setHeader('x-ratelimit-used', String(this.githubUsed));
    res.setHeader('x-ratelimit-reset', String(this.githubReset));
    res.setHeader('x-ratelimit-resource', path.startsWith('/search/') ? 'search' : 'core');
  }

  /** Answers an injected failure of `provider`, if one is due; false when none is. */
  answer(provider: FakeSaasProvider, res: ServerResponse): boolean {
    const failure = this.failures.get(provider);
    if (failure && failure.times > 0) {
      failure.times -= 1;
      const headers: Record<string, string> =
        failure.retryAfter !== undefined ? { 'retry-after': String(failure.retryAfter) } : {};
      if (failure.resetInSeconds !== undefined) {
        headers['x-ratelimit-remaining'] = '0';
        headers['x-ratelimit-reset'] = String(
          Math.floor(Date.now() / 1000) + failure.resetInSeconds,
        );
        return sendJson(
          res,
          403,
          {
            message: 'API rate limit exceeded for user ID 1.',
            documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api',
          },
          headers,
        );
      }
      if (failure.userRateLimit) {
        const message = 'User Rate Limit Exceeded';
        return sendJson(res, 403, {
          error: {
            code: 403,
            message,
            errors: [{ domain: 'usageLimits', reason: 'userRateLimitExceeded', message }],
            status: 'PERMISSION_DENIED',
          },
        });
      }
      if (failure.secondary) {
        return sendJson(
          res,
          403,
          {
            message:
              'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
            documentation_url:
              'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
          },
          headers,
        );
      }
      return sendJson(
        res,
        failure.status,
        errorBody(provider, failure.status, `injected ${failure.status}`),
        headers,
      );
    }
    return false;
  }
}
