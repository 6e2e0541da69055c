import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeServer, listenOnLoopback, readBody, sendJson } from './fake-http.js';
import {
  errorBody,
  seedData,
  type FakeApiRequest,
  type FakeSaasData,
  type FakeSaasProvider,
  type LooseJson,
} from './fake-saas-data.js';
import { driveApi } from './fake-saas-drive.js';
import { FakeSaasFailures } from './fake-saas-failures.js';
import { githubApi } from './fake-saas-github.js';
import { gmailApi } from './fake-saas-gmail.js';
import { notionApi } from './fake-saas-notion.js';
import { FAKE_OAUTH_CLIENT, FakeSaasTokens } from './fake-saas-oauth.js';
import { slackApi } from './fake-saas-slack.js';

export { FAKE_OAUTH_CLIENT };
export type { FakeSaasData, FakeSaasProvider };

/** A request one of the fakes received (API or token endpoint). */
export interface SaasRecordedRequest {
  readonly provider: FakeSaasProvider | 'google';
  readonly method: string;
  readonly path: string;
  readonly query: Record<string, string>;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** The fakes, and the environment that points the service at them. */
export interface FakeSaas {
  readonly url: string;
  /** `*_API_BASE_URL`, `*_OAUTH_TOKEN_URL` and `*_CLIENT_ID` / `_SECRET` for the service. */
  readonly env: Record<string, string>;
  readonly requests: SaasRecordedRequest[];
  /** Token endpoint calls, by provider (`google` for Gmail and Drive). */
  refreshes(provider: FakeSaasProvider | 'google'): SaasRecordedRequest[];
  /** Makes `token` a valid access token of `provider` (and `refresh` its refresh token). */
  grant(provider: FakeSaasProvider, token: string, refresh?: string): void;
  /**
   * The next API requests to `provider` answer this status with the provider's error body
   * (Google's `status`, Notion's `code`, Slack's `ratelimited` on 429), with `Retry-After` when
   * given.
   */
  failNext(provider: FakeSaasProvider, status: number, times?: number, retryAfter?: number): void;
  /**
   * GitHub's primary rate limit: the next requests answer 403 "API rate limit exceeded" with
   * `x-ratelimit-remaining: 0` and `x-ratelimit-reset` this many seconds from now.
   */
  exhaustGitHubRateLimit(resetInSeconds: number, times?: number): void;
  /**
   * GitHub's secondary rate limit: the next requests answer 403 "You have exceeded a secondary
   * rate limit", with `Retry-After` when given (GitHub sends it only sometimes).
   */
  githubSecondaryLimit(times?: number, retryAfter?: number): void;
  /**
   * Google's per-user quota: the next requests to Gmail or Drive answer 403 "User Rate Limit
   * Exceeded" with `errors[].reason: "userRateLimitExceeded"` (domain `usageLimits`).
   */
  googleUserRateLimit(provider: 'gmail' | 'google_drive', times?: number): void;
  /** Slows the token endpoint (to make concurrent refreshes overlap). */
  slowRefresh(ms: number): void;
  /** What the fakes store (issues, messages, drafts, files, pages), to check writes. */
  readonly data: FakeSaasData;
  close(): Promise<void>;
}

/** The URL prefix each provider is served under (`google` holds Google's token endpoint). */
const PREFIXES: Record<string, FakeSaasProvider | 'google'> = {
  github: 'github',
  gmail: 'gmail',
  drive: 'google_drive',
  slack: 'slack',
  notion: 'notion',
  google: 'google',
};

/** Each provider's API routes; `false` when none matched. */
const APIS: Record<FakeSaasProvider, (request: FakeApiRequest) => boolean> = {
  github: githubApi,
  gmail: gmailApi,
  google_drive: driveApi,
  slack: slackApi,
  notion: notionApi,
};

/**
 * Fakes of GitHub, Gmail, Google Drive, Slack and Notion on one loopback server, each under its
 * own prefix, speaking their REST paths, bearer authentication, bodies, error bodies and
 * rate-limit headers, with their OAuth token endpoints (rotating refresh tokens: a used one is
 * dead, except Google's, which stays). In-memory data; every request recorded.
 */
export async function startFakeSaas(): Promise<FakeSaas> {
  const requests: SaasRecordedRequest[] = [];
  const tokens = new FakeSaasTokens();
  const failures = new FakeSaasFailures();
  const data = seedData();

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const [, prefix, ...rest] = url.pathname.split('/');
    const path = `/${rest.join('/')}`;
    const body = (await readBody(req)).toString('utf8');
    const provider = PREFIXES[prefix ?? ''];
    if (!provider) return sendJson(res, 404, { message: 'Not Found' });
    requests.push({
      provider,
      method: req.method ?? 'GET',
      path,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
    });
    if (await tokens.answer(prefix, path, req, res, body)) return;
    if (provider === 'google') return sendJson(res, 404, { error: 'not_found' });

    // API requests: injected failures, then authentication.
    if (provider === 'github') failures.githubHeaders(res, path);
    if (failures.answer(provider, res)) return;
    const token = req.headers.authorization?.replace(/^Bearer /, '') ?? '';
    if (!tokens.authorizes(token, provider)) {
      return provider === 'slack'
        ? sendJson(res, 200, { ok: false, error: 'invalid_auth' })
        : sendJson(
            res,
            401,
            errorBody(
              provider,
              401,
              provider === 'github'
                ? 'Bad credentials'
                : 'Request had invalid authentication credentials.',
            ),
          );
    }
    const parsed = (
      body && req.headers['content-type']?.startsWith('application/json') ? JSON.parse(body) : {}
    ) as LooseJson;
    const route = `${req.method} ${path}`;
    const q = url.searchParams;
    if (APIS[provider]({ req, res, url, path, route, q, parsed, body, data })) return;
    return sendJson(res, 404, errorBody(provider, 404, `no route ${route}`));
  });
  await listenOnLoopback(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = (name: string) => ({
    [`${name}_CLIENT_ID`]: FAKE_OAUTH_CLIENT.id,
    [`${name}_CLIENT_SECRET`]: FAKE_OAUTH_CLIENT.secret,
  });
  return {
    url,
    env: {
      GITHUB_API_BASE_URL: `${url}/github`,
      GITHUB_OAUTH_TOKEN_URL: `${url}/github/login/oauth/access_token`,
      GMAIL_API_BASE_URL: `${url}/gmail`,
      GOOGLE_DRIVE_API_BASE_URL: `${url}/drive`,
      GOOGLE_OAUTH_TOKEN_URL: `${url}/google/token`,
      SLACK_API_BASE_URL: `${url}/slack/api`,
      SLACK_OAUTH_TOKEN_URL: `${url}/slack/api/oauth.v2.access`,
      NOTION_API_BASE_URL: `${url}/notion`,
      NOTION_OAUTH_TOKEN_URL: `${url}/notion/v1/oauth/token`,
      ...client('GITHUB'),
      ...client('GOOGLE'),
      ...client('SLACK'),
      ...client('NOTION'),
    },
    requests,
    refreshes: (p) =>
      requests.filter((r) => r.provider === p && /token|access_token|oauth/.test(r.path)),
    grant: (provider, token, refreshToken) => tokens.grant(provider, token, refreshToken),
    failNext(provider, status, times = 1, retryAfter) {
      failures.set(provider, {
        status,
        times,
        ...(retryAfter !== undefined ? { retryAfter } : {}),
      });
    },
    exhaustGitHubRateLimit(resetInSeconds, times = 1) {
      failures.set('github', { status: 403, times, resetInSeconds });
    },
    googleUserRateLimit(provider, times = 1) {
      failures.set(provider, { status: 403, times, userRateLimit: true });
    },
    githubSecondaryLimit(times = 1, retryAfter) {
      failures.set('github', {
        status: 403,
        times,
        secondary: true,
        ...(retryAfter !== undefined ? { retryAfter } : {}),
      });
    },
    slowRefresh(ms) {
      tokens.delayMs = ms;
    },
    data,
    close: () => closeServer(server),
  };
}
