import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The five providers the fake serves. */
export type FakeSaasProvider = 'github' | 'gmail' | 'google_drive' | 'slack' | 'notion';

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

export interface FakeSaasData {
  issues: Array<{
    repo: string;
    number: number;
    title: string;
    body: string;
    state: string;
    comments: string[];
  }>;
  gmail: Array<{
    id: string;
    from: string;
    to: string;
    subject: string;
    text: string;
    sent?: boolean;
    draft?: boolean;
  }>;
  files: Array<{ id: string; name: string; mimeType: string; content: string }>;
  repos: Array<{ full_name: string; private: boolean; description: string }>;
  channels: Array<{ id: string; name: string; is_private: boolean }>;
  slack: Array<{ channel: string; user: string; text: string; ts: string }>;
  pages: Array<{ id: string; title: string; parent?: string; blocks: string[] }>;
}

/** Request bodies as the fakes read them: loosely typed JSON, checked by use. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type LooseJson = Record<string, any>;

export const FAKE_OAUTH_CLIENT = { id: 'fake-client-id', secret: 'fake-client-secret-value' };

async function readAll(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function json(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(value));
}

/** Google's canonical error `status` for an HTTP status (cloud.google.com/apis/design/errors). */
const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
};

/** Notion's error `code` for an HTTP status (developers.notion.com/reference/status-codes). */
const NOTION_CODE: Record<number, string> = {
  400: 'validation_error',
  401: 'unauthorized',
  403: 'restricted_resource',
  404: 'object_not_found',
  409: 'conflict_error',
  429: 'rate_limited',
  500: 'internal_server_error',
  502: 'internal_server_error',
  503: 'service_unavailable',
};

/** A page of `items` from an opaque cursor (the index of the first item), and the next one. */
function page<T>(items: T[], size: number, cursor: string | null | undefined) {
  const start = cursor ? Number(Buffer.from(cursor, 'base64url').toString()) || 0 : 0;
  const end = start + size;
  return {
    items: items.slice(start, end),
    next: end < items.length ? Buffer.from(String(end)).toString('base64url') : undefined,
  };
}

/** Each provider's error body, as its real API shapes it. */
function errorBody(provider: FakeSaasProvider, status: number, message: string): unknown {
  switch (provider) {
    case 'github':
      return { message, documentation_url: 'https://docs.github.com/rest' };
    case 'gmail':
    case 'google_drive':
      return { error: { code: status, message, status: GOOGLE_STATUS[status] ?? 'UNKNOWN' } };
    case 'notion':
      return { object: 'error', status, code: NOTION_CODE[status] ?? 'invalid_request', message };
    case 'slack':
      return { ok: false, error: status === 429 ? 'ratelimited' : message };
  }
}

/**
 * Fakes of GitHub, Gmail, Google Drive, Slack and Notion on one loopback server, each under its
 * own prefix, speaking their REST paths, bearer authentication, bodies, error bodies and
 * rate-limit headers, with their OAuth token endpoints (rotating refresh tokens: a used one is
 * dead, except Google's, which stays). In-memory data; every request recorded.
 */
export async function startFakeSaas(): Promise<FakeSaas> {
  const requests: SaasRecordedRequest[] = [];
  const access = new Map<string, FakeSaasProvider>();
  const refresh = new Map<string, FakeSaasProvider>();
  const failures = new Map<
    FakeSaasProvider,
    {
      status: number;
      times: number;
      retryAfter?: number;
      resetInSeconds?: number;
      secondary?: boolean;
      userRateLimit?: boolean;
    }
  >();
  let githubUsed = 0;
  const githubReset = Math.floor(Date.now() / 1000) + 3600;
  let refreshDelay = 0;
  let issued = 0;
  const data: FakeSaasData = {
    issues: [
      {
        repo: 'acme/widgets',
        number: 7,
        title: 'Crash on empty input',
        body: 'Steps: send an empty form.',
        state: 'open',
        comments: [],
      },
    ],
    gmail: [
      {
        id: 'msg-1',
        from: 'ana@example.com',
        to: 'me@example.com',
        subject: 'Quarterly report',
        text: 'The report is attached.',
      },
      {
        id: 'msg-2',
        from: 'bo@example.com',
        to: 'me@example.com',
        subject: 'Re: Quarterly report',
        text: 'Thanks for the report.',
      },
    ],
    files: [
      {
        id: 'doc-1',
        name: 'Roadmap',
        mimeType: 'application/vnd.google-apps.document',
        content: 'Q1: ship search.',
      },
      {
        id: 'doc-2',
        name: 'Roadmap 2027',
        mimeType: 'application/vnd.google-apps.document',
        content: 'Later.',
      },
    ],
    repos: [
      { full_name: 'acme/widgets', private: false, description: 'Widgets' },
      { full_name: 'acme/gadgets', private: true, description: 'Gadgets' },
      { full_name: 'ana/dotfiles', private: false, description: '' },
    ],
    channels: [
      { id: 'C01', name: 'general', is_private: false },
      { id: 'C02', name: 'random', is_private: false },
      { id: 'C03', name: 'deploys', is_private: true },
    ],
    slack: [{ channel: 'C01', user: 'U1', text: 'deploy at 5pm', ts: '1700000000.000100' }],
    pages: [
      { id: 'page-1', title: 'Team notes', blocks: ['First note.'] },
      {
        id: 'page-2',
        title: 'Long list',
        blocks: Array.from({ length: 150 }, (_, i) => `Item ${i + 1}.`),
      },
    ],
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const [, prefix, ...rest] = url.pathname.split('/');
    const path = `/${rest.join('/')}`;
    const body = await readAll(req);
    const prefixes: Record<string, FakeSaasProvider | 'google'> = {
      github: 'github',
      gmail: 'gmail',
      drive: 'google_drive',
      slack: 'slack',
      notion: 'notion',
      google: 'google',
    };
    const provider = prefixes[prefix ?? ''];
    if (!provider) return json(res, 404, { message: 'Not Found' });
    requests.push({
      provider,
      method: req.method ?? 'GET',
      path,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
    });

    // Token endpoints.
    const tokenPaths: Record<string, FakeSaasProvider | 'google'> = {
      'github /login/oauth/access_token': 'github',
      'google /token': 'google',
      'slack /api/oauth.v2.access': 'slack',
      'notion /v1/oauth/token': 'notion',
    };
    const tokenFor = tokenPaths[`${prefix} ${path}`];
    if (tokenFor) {
      if (refreshDelay) await new Promise((r) => setTimeout(r, refreshDelay));
      const fields: Record<string, string> =
        tokenFor === 'notion'
          ? (JSON.parse(body || '{}') as Record<string, string>)
          : Object.fromEntries(new URLSearchParams(body));
      const basic = req.headers.authorization?.startsWith('Basic ')
        ? Buffer.from(req.headers.authorization.slice(6), 'base64').toString().split(':')
        : [fields.client_id, fields.client_secret];
      if (basic[0] !== FAKE_OAUTH_CLIENT.id || basic[1] !== FAKE_OAUTH_CLIENT.secret) {
        return json(res, 401, { error: 'invalid_client' });
      }
      const owner = refresh.get(fields.refresh_token ?? '');
      const expected = tokenFor === 'google' ? ['gmail', 'google_drive'] : [tokenFor];
      if (fields.grant_type !== 'refresh_token' || !owner || !expected.includes(owner)) {
        // GitHub answers its token endpoint's errors with 200 and an `error` field; Slack with
        // 200 and `ok: false`; Google and Notion with 400 `invalid_grant`.
        if (tokenFor === 'github') {
          return json(res, 200, {
            error: 'bad_refresh_token',
            error_description: 'The refresh token passed is incorrect or expired.',
            error_uri:
              'https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors',
          });
        }
        return tokenFor === 'slack'
          ? json(res, 200, { ok: false, error: 'invalid_refresh_token' })
          : json(res, 400, {
              error: 'invalid_grant',
              error_description: 'The refresh token is invalid or was already used.',
            });
      }
      issued += 1;
      const newAccess = `${owner}-access-${issued}`;
      access.set(newAccess, owner);
      const answer: Record<string, unknown> = {
        access_token: newAccess,
        token_type: 'Bearer',
        expires_in: 3600,
      };
      if (tokenFor !== 'google') {
        // Rotation: the used refresh token dies, a new one is issued.
        refresh.delete(fields.refresh_token!);
        const newRefresh = `${owner}-refresh-${issued}`;
        refresh.set(newRefresh, owner);
        answer.refresh_token = newRefresh;
      }
      return json(res, 200, tokenFor === 'slack' ? { ok: true, ...answer } : answer);
    }
    if (provider === 'google') return json(res, 404, { error: 'not_found' });

    // API requests: injected failures, then authentication.
    if (provider === 'github') {
      // Every GitHub answer carries the primary rate limit's state (docs.github.com, "Rate
      // limits for the REST API"); `x-ratelimit-reset` is in epoch seconds.
      githubUsed += 1;
      res.setHeader('x-ratelimit-limit', '5000');
      res.setHeader('x-ratelimit-remaining', String(Math.max(0, 5000 - githubUsed)));
      res.setHeader('x-ratelimit-used', String(githubUsed));
      res.setHeader('x-ratelimit-reset', String(githubReset));
      res.setHeader('x-ratelimit-resource', path.startsWith('/search/') ? 'search' : 'core');
    }
    const failure = failures.get(provider);
    if (failure && failure.times > 0) {
      failure.times -= 1;
      const headers: Record<string, string> =
        failure.retryAfter !== undefined ? { 'retry-after': String(failure.retryAfter) } : {};
      if (failure.resetInSeconds !== undefined) {
        headers['x-ratelimit-remaining'] = '0';
        headers['x-ratelimit-reset'] = String(
          Math.floor(Date.now() / 1000) + failure.resetInSeconds,
        );
        return json(
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
        return json(res, 403, {
          error: {
            code: 403,
            message,
            errors: [{ domain: 'usageLimits', reason: 'userRateLimitExceeded', message }],
            status: 'PERMISSION_DENIED',
          },
        });
      }
      if (failure.secondary) {
        return json(
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
      return json(
        res,
        failure.status,
        errorBody(provider, failure.status, `injected ${failure.status}`),
        headers,
      );
    }
    const token = req.headers.authorization?.replace(/^Bearer /, '') ?? '';
    if (access.get(token) !== provider) {
      return provider === 'slack'
        ? json(res, 200, { ok: false, error: 'invalid_auth' })
        : json(
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
    const q = url.searchParams;
    const route = `${req.method} ${path}`;
    switch (provider) {
      case 'github': {
        if (route === 'GET /search/issues') {
          const terms = (q.get('q') ?? '')
            .toLowerCase()
            .split(/\s+/)
            .filter((t) => !t.includes(':'));
          const items = data.issues.filter((i) =>
            terms.every((t) => `${i.title} ${i.body}`.toLowerCase().includes(t)),
          );
          return json(res, 200, {
            total_count: items.length,
            incomplete_results: false,
            items: items.map((i) => ghIssue(i)),
          });
        }
        if (route === 'GET /user/repos') {
          const perPage = Math.min(100, Number(q.get('per_page') ?? 30));
          const number = Math.max(1, Number(q.get('page') ?? 1));
          const last = Math.max(1, Math.ceil(data.repos.length / perPage));
          const headers: Record<string, string> = {};
          if (number < last) {
            // GitHub's pagination: a Link header with the next and last pages' URLs.
            const at = (n: number) => {
              const next = new URL(url.href);
              next.searchParams.set('page', String(n));
              return `<https://api.github.com/user/repos${next.search}>`;
            };
            headers.link = `${at(number + 1)}; rel="next", ${at(last)}; rel="last"`;
          }
          return json(
            res,
            200,
            data.repos.slice((number - 1) * perPage, number * perPage).map((r) => ({
              ...r,
              html_url: `https://github.com/${r.full_name}`,
            })),
            headers,
          );
        }
        let m = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)$/.exec(path);
        if (m && req.method === 'GET') {
          const issue = data.issues.find((i) => i.repo === m![1] && i.number === Number(m![2]));
          return issue
            ? json(res, 200, ghIssue(issue))
            : json(res, 404, errorBody('github', 404, 'Not Found'));
        }
        m = /^\/repos\/([^/]+\/[^/]+)\/issues$/.exec(path);
        if (m && req.method === 'POST') {
          const issue = {
            repo: m[1]!,
            number: data.issues.length + 100,
            title: String(parsed.title),
            body: String(parsed.body ?? ''),
            state: 'open',
            comments: [],
          };
          data.issues.push(issue);
          return json(res, 201, ghIssue(issue));
        }
        m = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(path);
        if (m && req.method === 'POST') {
          const issue = data.issues.find((i) => i.repo === m![1] && i.number === Number(m![2]));
          if (!issue) return json(res, 404, errorBody('github', 404, 'Not Found'));
          issue.comments.push(String(parsed.body));
          return json(res, 201, {
            id: issue.comments.length,
            html_url: `https://github.com/${issue.repo}/issues/${issue.number}#issuecomment-${issue.comments.length}`,
          });
        }
        break;
      }
      case 'gmail': {
        if (route === 'GET /gmail/v1/users/me/messages') {
          const text = (q.get('q') ?? '').toLowerCase();
          const found = data.gmail.filter(
            (m) => !m.draft && `${m.subject} ${m.text} ${m.from}`.toLowerCase().includes(text),
          );
          const { items, next } = page(
            found,
            Math.min(500, Number(q.get('maxResults') ?? 100)),
            q.get('pageToken'),
          );
          return json(res, 200, {
            ...(items.length ? { messages: items.map((m) => ({ id: m.id, threadId: m.id })) } : {}),
            ...(next ? { nextPageToken: next } : {}),
            resultSizeEstimate: found.length,
          });
        }
        const m = /^\/gmail\/v1\/users\/me\/messages\/([\w-]+)$/.exec(path);
        if (m && req.method === 'GET') {
          const msg = data.gmail.find((x) => x.id === m[1]);
          if (!msg)
            return json(res, 404, errorBody('gmail', 404, 'Requested entity was not found.'));
          const headers = [
            { name: 'From', value: msg.from },
            { name: 'To', value: msg.to },
            { name: 'Subject', value: msg.subject },
            { name: 'Date', value: 'Mon, 23 Nov 2026 10:00:00 +0000' },
          ];
          return json(res, 200, {
            id: msg.id,
            threadId: msg.id,
            snippet: msg.text.slice(0, 100),
            payload: {
              mimeType: 'multipart/alternative',
              headers:
                q.get('format') === 'metadata'
                  ? headers.filter((h) => h.name === 'Subject')
                  : headers,
              parts: [
                {
                  mimeType: 'text/plain',
                  body: { data: Buffer.from(msg.text).toString('base64url') },
                },
                {
                  mimeType: 'text/html',
                  body: { data: Buffer.from(`<p>${msg.text}</p>`).toString('base64url') },
                },
              ],
            },
          });
        }
        if (
          route === 'POST /gmail/v1/users/me/drafts' ||
          route === 'POST /gmail/v1/users/me/messages/send'
        ) {
          const raw = Buffer.from(
            String(route.endsWith('send') ? parsed.raw : parsed.message?.raw),
            'base64url',
          ).toString('utf8');
          const [head, ...text] = raw.split('\r\n\r\n');
          const field = (name: string) =>
            new RegExp(`^${name}: (.*)$`, 'mi').exec(head ?? '')?.[1] ?? '';
          const subjectMatch = /=\?UTF-8\?B\?(.*)\?=/.exec(field('Subject'));
          const id = `msg-${data.gmail.length + 1}`;
          const draft = !route.endsWith('send');
          data.gmail.push({
            id,
            from: 'me@example.com',
            to: field('To'),
            subject: subjectMatch
              ? Buffer.from(subjectMatch[1]!, 'base64').toString()
              : field('Subject'),
            text: text.join('\r\n\r\n'),
            draft,
            sent: !draft,
          });
          return json(
            res,
            200,
            draft
              ? { id: `draft-${id}`, message: { id } }
              : { id, threadId: id, labelIds: ['SENT'] },
          );
        }
        break;
      }
      case 'google_drive': {
        const file = (f: FakeSaasData['files'][number]) => ({
          id: f.id,
          name: f.name,
          mimeType: f.mimeType,
          webViewLink: `https://docs.google.com/document/d/${f.id}`,
          modifiedTime: '2026-11-20T10:00:00Z',
        });
        if (route === 'GET /drive/v3/files') {
          const term =
            /contains '((?:[^'\\]|\\.)*)'/.exec(q.get('q') ?? '')?.[1]?.toLowerCase() ?? '';
          const { items, next } = page(
            data.files.filter((f) => `${f.name} ${f.content}`.toLowerCase().includes(term)),
            Math.min(1000, Number(q.get('pageSize') ?? 100)),
            q.get('pageToken'),
          );
          return json(res, 200, {
            kind: 'drive#fileList',
            ...(next ? { nextPageToken: next } : {}),
            files: items.map(file),
          });
        }
        const m = /^\/drive\/v3\/files\/([\w-]+)(\/export)?$/.exec(path);
        if (m && req.method === 'GET') {
          const f = data.files.find((x) => x.id === m[1]);
          if (!f) return json(res, 404, errorBody('google_drive', 404, `File not found: ${m[1]}.`));
          if (m[2] || q.get('alt') === 'media') {
            res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
            return res.end(f.content);
          }
          return json(res, 200, file(f));
        }
        if (route === 'POST /upload/drive/v3/files' && q.get('uploadType') === 'multipart') {
          const boundary = /boundary=([^;]+)/.exec(req.headers['content-type'] ?? '')?.[1];
          const parts = body
            .split(`--${boundary}`)
            .slice(1, -1)
            .map((p) => p.split('\r\n\r\n').slice(1).join('\r\n\r\n').replace(/\r\n$/, ''));
          const meta = JSON.parse(parts[0]!) as { name: string; mimeType: string };
          const created = {
            id: `file-${data.files.length + 1}`,
            name: meta.name,
            mimeType: meta.mimeType,
            content: parts[1] ?? '',
          };
          data.files.push(created);
          return json(res, 200, file(created));
        }
        break;
      }
      case 'slack': {
        if (route === 'GET /api/conversations.list') {
          // Slack may answer fewer than `limit` channels with a cursor for more (it filters after
          // paging); here at most two a page.
          const { items, next } = page(
            data.channels,
            Math.min(2, Number(q.get('limit') ?? 100)),
            q.get('cursor'),
          );
          return json(res, 200, {
            ok: true,
            channels: items,
            response_metadata: { next_cursor: next ?? '' },
          });
        }
        if (route === 'GET /api/conversations.history') {
          const channel = q.get('channel') ?? '';
          if (!data.channels.some((c) => c.id === channel))
            return json(res, 200, { ok: false, error: 'channel_not_found' });
          const { items, next } = page(
            data.slack.filter((s) => s.channel === channel).reverse(),
            Math.min(999, Number(q.get('limit') ?? 100)),
            q.get('cursor'),
          );
          return json(res, 200, {
            ok: true,
            messages: items,
            has_more: next !== undefined,
            ...(next ? { response_metadata: { next_cursor: next } } : {}),
          });
        }
        if (route === 'GET /api/auth.test') {
          return json(res, 200, {
            ok: true,
            url: 'https://acme.slack.com/',
            team: 'Acme',
            user: 'bot',
            team_id: 'T01',
            user_id: 'UBOT',
          });
        }
        if (route === 'GET /api/chat.getPermalink') {
          const channel = q.get('channel') ?? '';
          const ts = q.get('message_ts') ?? '';
          if (!data.slack.some((s) => s.channel === channel && s.ts === ts))
            return json(res, 200, { ok: false, error: 'message_not_found' });
          return json(res, 200, {
            ok: true,
            channel,
            permalink: `https://acme.slack.com/archives/${channel}/p${ts.replace('.', '')}`,
          });
        }
        if (route === 'GET /api/search.messages') {
          const term = (q.get('query') ?? '').toLowerCase();
          const all = data.slack.filter((s) => s.text.toLowerCase().includes(term));
          const count = Math.min(100, Number(q.get('count') ?? 20));
          const number = Math.max(1, Number(q.get('page') ?? 1));
          const matches = all.slice((number - 1) * count, number * count);
          const pages = Math.max(1, Math.ceil(all.length / count));
          return json(res, 200, {
            ok: true,
            query: q.get('query'),
            messages: {
              total: all.length,
              paging: { count, total: all.length, page: number, pages },
              pagination: {
                total_count: all.length,
                page: number,
                per_page: count,
                page_count: pages,
                first: (number - 1) * count + 1,
                last: (number - 1) * count + matches.length,
              },
              matches: matches.map((s) => ({
                ...s,
                username: 'ana',
                channel: { id: s.channel, name: 'general' },
                permalink: `https://acme.slack.com/archives/${s.channel}/p${s.ts.replace('.', '')}`,
              })),
            },
          });
        }
        if (route === 'POST /api/chat.postMessage') {
          const ts = `${1_700_000_100 + data.slack.length}.000200`;
          data.slack.push({
            channel: String(parsed.channel),
            user: 'UBOT',
            text: String(parsed.text),
            ts,
          });
          return json(res, 200, {
            ok: true,
            channel: parsed.channel,
            ts,
            message: { text: parsed.text },
          });
        }
        break;
      }
      case 'notion': {
        if (req.headers['notion-version'] !== '2022-06-28')
          return json(res, 400, errorBody('notion', 400, 'Notion-Version header missing'));
        const notionPage = (p: FakeSaasData['pages'][number]) => ({
          object: 'page',
          id: p.id,
          url: `https://www.notion.so/${p.id}`,
          properties: { Name: { type: 'title', title: [{ plain_text: p.title }] } },
        });
        if (route === 'POST /v1/search') {
          const term = String(parsed.query ?? '').toLowerCase();
          const { items, next } = page(
            data.pages.filter((p) => p.title.toLowerCase().includes(term)),
            Math.min(100, Number(parsed.page_size ?? 100)),
            parsed.start_cursor as string | undefined,
          );
          return json(res, 200, {
            object: 'list',
            results: items.map(notionPage),
            next_cursor: next ?? null,
            has_more: next !== undefined,
            type: 'page_or_database',
          });
        }
        let m = /^\/v1\/pages\/([\w-]+)$/.exec(path);
        if (m && req.method === 'GET') {
          const p = data.pages.find((x) => x.id === m![1]);
          return p
            ? json(res, 200, notionPage(p))
            : json(res, 404, errorBody('notion', 404, `Could not find page with ID: ${m[1]}.`));
        }
        m = /^\/v1\/blocks\/([\w-]+)\/children$/.exec(path);
        if (m) {
          const p = data.pages.find((x) => x.id === m![1]);
          if (!p)
            return json(
              res,
              404,
              errorBody('notion', 404, `Could not find block with ID: ${m[1]}.`),
            );
          const block = (text: string, i: number) => ({
            object: 'block',
            id: `${p.id}-b${i}`,
            type: 'paragraph',
            paragraph: { rich_text: [{ plain_text: text }] },
          });
          if (req.method === 'PATCH') {
            const first = p.blocks.length;
            for (const child of parsed.children as Array<{
              paragraph: { rich_text: Array<{ text: { content: string } }> };
            }>) {
              p.blocks.push(child.paragraph.rich_text.map((t) => t.text.content).join(''));
            }
            // The append answers the appended blocks (a list), not the page.
            return json(res, 200, {
              object: 'list',
              results: p.blocks.slice(first).map((text, i) => block(text, first + i)),
              next_cursor: null,
              has_more: false,
              type: 'block',
              block: {},
            });
          }
          const { items, next } = page(
            p.blocks.map(block),
            Math.min(100, Number(q.get('page_size') ?? 100)),
            q.get('start_cursor'),
          );
          return json(res, 200, {
            object: 'list',
            results: items,
            next_cursor: next ?? null,
            has_more: next !== undefined,
            type: 'block',
            block: {},
          });
        }
        if (route === 'POST /v1/pages') {
          const created = {
            id: `page-${data.pages.length + 1}`,
            title: String(parsed.properties?.title?.title?.[0]?.text?.content ?? ''),
            parent: String(parsed.parent?.page_id),
            blocks: (
              (parsed.children ?? []) as Array<{
                paragraph: { rich_text: Array<{ text: { content: string } }> };
              }>
            ).map((b) => b.paragraph.rich_text[0]!.text.content),
          };
          data.pages.push(created);
          return json(res, 200, notionPage(created));
        }
        break;
      }
    }
    return json(res, 404, errorBody(provider, 404, `no route ${route}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
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
    grant(provider, token, refreshToken) {
      access.set(token, provider);
      if (refreshToken) refresh.set(refreshToken, provider);
    },
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
      refreshDelay = ms;
    },
    data,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function ghIssue(i: FakeSaasData['issues'][number]) {
  return {
    number: i.number,
    title: i.title,
    state: i.state,
    body: i.body,
    comments: i.comments.length,
    html_url: `https://github.com/${i.repo}/issues/${i.number}`,
    repository_url: `https://api.github.com/repos/${i.repo}`,
    user: { login: 'ana' },
  };
}
