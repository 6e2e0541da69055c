import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request a fake search provider received. */
export interface SearchRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Record<string, string>;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
}

/** How the fake answers the next requests: results, an HTTP error, or nothing for a while. */
export type SearchBehaviour =
  | { readonly kind: 'results'; readonly results: ReadonlyArray<FakeResult> }
  | { readonly kind: 'status'; readonly status: number; readonly retryAfter?: number }
  | { readonly kind: 'hang'; readonly ms: number };

export interface FakeResult {
  readonly title: string;
  readonly url: string;
  readonly snippet: string;
  readonly date?: string;
}

/** One fake provider on loopback. */
export interface FakeSearchProvider {
  /** The origin to configure (`TAVILY_API_BASE_URL` / `BRAVE_SEARCH_API_BASE_URL`). */
  readonly url: string;
  readonly requests: SearchRequest[];
  /** Every later request gets this answer (default: three results about the query). */
  behave(behaviour: SearchBehaviour): void;
  close(): Promise<void>;
}

const defaultResults = (query: string): FakeResult[] => [
  {
    title: `About ${query}`,
    url: `https://example.org/${encodeURIComponent(query)}`,
    snippet: `All about ${query}.`,
    date: '2026-11-20',
  },
  {
    title: `${query} explained`,
    url: 'https://docs.example.com/explained',
    snippet: 'A longer explanation.',
  },
  // The same page as the first, with a fragment and a tracking parameter: deduplicated.
  {
    title: `About ${query} (again)`,
    url: `https://www.example.org/${encodeURIComponent(query)}/?utm_source=x#top`,
    snippet: 'Duplicate.',
  },
];

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function startFake(name: 'tavily' | 'brave', key: string): Promise<FakeSearchProvider> {
  const requests: SearchRequest[] = [];
  let behaviour: SearchBehaviour | undefined;
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const body = await readBody(req);
    requests.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
    });
    const send = (status: number, value: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(value));
    };
    // Each provider's path and authentication, as the real APIs check them.
    const authorized =
      name === 'tavily'
        ? req.headers.authorization === `Bearer ${key}`
        : req.headers['x-subscription-token'] === key;
    const rightPath =
      name === 'tavily'
        ? req.method === 'POST' && url.pathname === '/search'
        : req.method === 'GET' && url.pathname === '/res/v1/web/search';
    if (!rightPath) return send(404, { detail: { error: 'Not Found' } });
    if (!authorized) {
      return name === 'tavily'
        ? send(401, { detail: { error: 'Unauthorized: missing or invalid API key.' } })
        : send(401, {
            type: 'ErrorResponse',
            error: {
              code: 'SUBSCRIPTION_TOKEN_INVALID',
              status: 401,
              detail: 'The provided subscription token is invalid.',
            },
          });
    }
    const query =
      name === 'tavily'
        ? String((body as { query?: unknown })?.query ?? '')
        : (url.searchParams.get('q') ?? '');
    const current = behaviour ?? { kind: 'results', results: defaultResults(query) };
    if (current.kind === 'hang') {
      await new Promise((resolve) => setTimeout(resolve, current.ms));
      if (res.destroyed) return;
      return send(
        200,
        name === 'tavily'
          ? { query, results: [] }
          : { type: 'search', web: { type: 'search', results: [] } },
      );
    }
    if (current.kind === 'status') {
      const headers: Record<string, string> = current.retryAfter
        ? { 'retry-after': String(current.retryAfter) }
        : {};
      if (name === 'brave' && current.status === 429) {
        headers['x-ratelimit-limit'] = '1, 15000';
        headers['x-ratelimit-remaining'] = '0, 14000';
        headers['x-ratelimit-reset'] = '1, 1419704';
      }
      return name === 'tavily'
        ? send(
            current.status,
            { detail: { error: `fake tavily error ${current.status}` } },
            headers,
          )
        : send(
            current.status,
            {
              type: 'ErrorResponse',
              error: {
                code: current.status === 429 ? 'RATE_LIMITED' : 'ERROR',
                status: current.status,
                detail: 'fake brave error',
              },
            },
            headers,
          );
    }
    if (name === 'tavily') {
      return send(200, {
        query,
        response_time: 0.42,
        results: current.results.map((r, i) => ({
          title: r.title,
          url: r.url,
          content: r.snippet,
          score: 0.9 - i * 0.1,
          raw_content: null,
          ...(r.date ? { published_date: r.date } : {}),
        })),
      });
    }
    return send(200, {
      type: 'search',
      query: { original: query },
      web: {
        type: 'search',
        results: current.results.map((r) => ({
          type: 'search_result',
          title: r.title,
          url: r.url,
          description: `<strong>${r.snippet}</strong>`,
          ...(r.date ? { page_age: `${r.date}T00:00:00` } : {}),
        })),
      },
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    behave: (next) => {
      behaviour = next;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Fakes of Tavily (`POST /search`, bearer key, `{ results: [{ title, url, content,
 * published_date? }] }`) and Brave Search (`GET /res/v1/web/search`, `X-Subscription-Token`,
 * `{ web: { results: [{ title, url, description, page_age? }] } }`) on loopback, with their
 * error bodies, recording every request.
 */
export async function startFakeSearchProviders(keys: { tavily: string; brave: string }) {
  const [tavily, brave] = await Promise.all([
    startFake('tavily', keys.tavily),
    startFake('brave', keys.brave),
  ]);
  return {
    tavily,
    brave,
    close: () => Promise.all([tavily.close(), brave.close()]).then(() => undefined),
  };
}
