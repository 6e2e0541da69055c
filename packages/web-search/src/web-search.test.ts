import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createMemoryEphemeralStore,
  createRedisEphemeralStore,
  type EphemeralStore,
} from '@agent-backend/ephemeral';
import { redisTestKeys, startFakeSearchProviders, testRedisUrl } from '@agent-backend/testing';
import type { ToolContext } from '@agent-backend/agent-runtime';
import { braveProvider } from './brave.js';
import { tavilyProvider } from './tavily.js';
import { webSearchTool } from './tool.js';
import { WebSearch, WebSearchFailedError, type WebSearchSettings } from './web-search.js';

const KEYS = { tavily: 'tvly-test-key-123', brave: 'brave-test-key-456' };
const redis = redisTestKeys('websearch', { beforeAll, afterAll });

describe('web search over Tavily and Brave', () => {
  let fakes: Awaited<ReturnType<typeof startFakeSearchProviders>>;
  const stores: EphemeralStore[] = [];
  beforeAll(async () => {
    fakes = await startFakeSearchProviders(KEYS);
  });
  afterAll(async () => {
    await fakes.close();
    await Promise.all(stores.map((s) => s.close()));
  });
  afterEach(() => {
    fakes.tavily.requests.length = 0;
    fakes.brave.requests.length = 0;
    fakes.tavily.behave({ kind: 'results', results: [] });
    fakes.brave.behave({ kind: 'results', results: [] });
  });

  const settings: WebSearchSettings = {
    timeoutMs: 1_000,
    cacheTtlMs: 0,
    breakerFailures: 3,
    breakerCooldownMs: 60_000,
  };
  const search = (overrides: Partial<WebSearchSettings> = {}, store?: EphemeralStore) => {
    const ephemeral = store ?? createMemoryEphemeralStore();
    stores.push(ephemeral);
    return new WebSearch(
      [
        tavilyProvider({ apiKey: KEYS.tavily, baseUrl: fakes.tavily.url }),
        braveProvider({ apiKey: KEYS.brave, baseUrl: fakes.brave.url }),
      ],
      ephemeral,
      { ...settings, ...overrides },
    );
  };
  const results = [
    {
      title: 'Node.js 24',
      url: 'https://nodejs.org/en/blog/24',
      snippet: 'Node 24 is LTS.',
      date: '2026-10-28',
    },
    {
      title: 'Node.js 24 again',
      url: 'https://www.nodejs.org/en/blog/24/#intro',
      snippet: 'Same page.',
    },
    {
      title: 'Release notes',
      url: 'https://github.com/nodejs/node/releases',
      snippet: 'All releases.',
    },
  ];

  it('asks Tavily as its API expects and deduplicates by URL', async () => {
    fakes.tavily.behave({ kind: 'results', results });
    const answer = await search().search({ query: 'node 24 lts', maxResults: 5, recencyDays: 30 });
    expect(answer.provider).toBe('tavily');
    expect(answer.results.map((r) => r.url)).toEqual([
      'https://nodejs.org/en/blog/24',
      'https://github.com/nodejs/node/releases',
    ]);
    expect(answer.results[0]).toMatchObject({ title: 'Node.js 24', date: '2026-10-28' });
    const [request] = fakes.tavily.requests;
    expect(request).toMatchObject({ method: 'POST', path: '/search' });
    expect(request!.headers.authorization).toBe(`Bearer ${KEYS.tavily}`);
    expect(request!.body).toMatchObject({
      query: 'node 24 lts',
      max_results: 5,
      time_range: 'month',
    });
    expect(fakes.brave.requests).toHaveLength(0);
  });

  it('asks Brave as its API expects (when it comes first) and strips its highlights', async () => {
    fakes.brave.behave({ kind: 'results', results });
    const brave = new WebSearch(
      [braveProvider({ apiKey: KEYS.brave, baseUrl: fakes.brave.url })],
      createMemoryEphemeralStore(),
      settings,
    );
    const answer = await brave.search({ query: 'node 24', maxResults: 3, recencyDays: 7 });
    expect(answer.results[0]).toEqual({
      title: 'Node.js 24',
      url: 'https://nodejs.org/en/blog/24',
      snippet: 'Node 24 is LTS.',
      date: '2026-10-28T00:00:00',
    });
    const [request] = fakes.brave.requests;
    expect(request).toMatchObject({ method: 'GET', path: '/res/v1/web/search' });
    expect(request!.headers['x-subscription-token']).toBe(KEYS.brave);
    expect(request!.query).toMatchObject({ q: 'node 24', count: '3' });
    expect(request!.query.freshness).toMatch(/^\d{4}-\d{2}-\d{2}to\d{4}-\d{2}-\d{2}$/);
  });

  it.each([429, 402, 432, 500, 503])(
    'fails over to Brave when Tavily answers %i',
    async (status) => {
      fakes.tavily.behave({ kind: 'status', status, retryAfter: 1 });
      fakes.brave.behave({ kind: 'results', results });
      const answer = await search().search({ query: `status ${status}`, maxResults: 5 });
      expect(answer.provider).toBe('brave');
      expect(fakes.tavily.requests).toHaveLength(1);
      expect(fakes.brave.requests).toHaveLength(1);
    },
  );

  it('fails over on a timeout, never on an empty result, and not on a refused key', async () => {
    fakes.tavily.behave({ kind: 'hang', ms: 3_000 });
    fakes.brave.behave({ kind: 'results', results });
    expect(
      (await search({ timeoutMs: 300 }).search({ query: 'slow', maxResults: 5 })).provider,
    ).toBe('brave');

    fakes.brave.requests.length = 0;
    fakes.tavily.behave({ kind: 'results', results: [] });
    const empty = await search().search({ query: 'nothing at all', maxResults: 5 });
    expect(empty).toMatchObject({ provider: 'tavily', results: [] });
    expect(fakes.brave.requests).toHaveLength(0);

    const wrongKey = new WebSearch(
      [
        tavilyProvider({ apiKey: 'tvly-wrong', baseUrl: fakes.tavily.url }),
        braveProvider({ apiKey: KEYS.brave, baseUrl: fakes.brave.url }),
      ],
      createMemoryEphemeralStore(),
      settings,
    );
    const refused = wrongKey.search({ query: 'refused', maxResults: 5 });
    await expect(refused).rejects.toBeInstanceOf(WebSearchFailedError);
    await expect(refused).rejects.toThrow(/tavily answered HTTP 401/);
    expect(fakes.brave.requests).toHaveLength(0);
  });

  it('opens the breaker after repeated failures: the dead provider is not asked again', async () => {
    fakes.tavily.behave({ kind: 'status', status: 503 });
    fakes.brave.behave({ kind: 'results', results });
    const engine = search({ breakerCooldownMs: 400 });
    for (let i = 0; i < 6; i++) {
      expect((await engine.search({ query: `q${i}`, maxResults: 5 })).provider).toBe('brave');
    }
    expect(fakes.tavily.requests).toHaveLength(3);
    expect(fakes.brave.requests).toHaveLength(6);
    // After the cooldown one probe goes through; Tavily is back, so it answers again.
    fakes.tavily.behave({ kind: 'results', results });
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect((await engine.search({ query: 'after', maxResults: 5 })).provider).toBe('tavily');
    expect((await engine.search({ query: 'after 2', maxResults: 5 })).provider).toBe('tavily');
  });

  it('reuses a query’s results from the shared cache, on another replica too', async () => {
    fakes.tavily.behave({ kind: 'results', results });
    const prefix = redis.fresh();
    const [a, b] = [0, 1].map(() =>
      search({ cacheTtlMs: 60_000 }, createRedisEphemeralStore({ url: testRedisUrl(), prefix })),
    );
    const first = await a!.search({ query: 'Cached Query', maxResults: 5 });
    const second = await b!.search({ query: 'cached query ', maxResults: 5 });
    expect(first.cached).toBe(false);
    expect(second).toMatchObject({ cached: true, provider: 'tavily', results: first.results });
    expect(fakes.tavily.requests).toHaveLength(1);
    // Another size of answer is another query.
    await b!.search({ query: 'cached query', maxResults: 2 });
    expect(fakes.tavily.requests).toHaveLength(2);
  });

  it('tells the model what failed, without any key', async () => {
    fakes.tavily.behave({ kind: 'status', status: 500 });
    fakes.brave.behave({ kind: 'status', status: 429, retryAfter: 5 });
    const tool = webSearchTool(search());
    const output = await tool.execute({ query: 'anything' }, {
      signal: new AbortController().signal,
    } as ToolContext);
    expect(output.isError).toBe(true);
    expect(output.content).toBe(
      'Web search is unavailable right now (tavily answered HTTP 500; brave answered HTTP 429).',
    );
    expect(output.content).not.toContain(KEYS.tavily);
    fakes.tavily.behave({ kind: 'results', results });
    const ok = await tool.execute({ query: 'node', max_results: 1 }, {
      signal: new AbortController().signal,
    } as ToolContext);
    expect(ok.content).toBe(
      '1. Node.js 24\n   https://nodejs.org/en/blog/24\n   2026-10-28\n   Node 24 is LTS.',
    );
  });
  it('asks for 5 results by default and at most 10 whatever the model asks', async () => {
    fakes.tavily.behave({ kind: 'results', results });
    const tool = webSearchTool(search());
    const context = { signal: new AbortController().signal } as ToolContext;
    await tool.execute({ query: 'default count' }, context);
    await tool.execute({ query: 'too many', max_results: 50 }, context);
    await tool.execute({ query: 'three', max_results: 3 }, context);
    expect(
      fakes.tavily.requests.map((r) => (r.body as { max_results: number }).max_results),
    ).toEqual([5, 10, 3]);
    expect(tool.parameters).toMatchObject({
      properties: { max_results: { default: 5, maximum: 10 } },
    });
  });
});
