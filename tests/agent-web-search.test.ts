/**
 * Web search: `enable_web_search` through `POST /api/agent/invoke` on two API replicas
 * sharing Redis and PostgreSQL, with fakes of Tavily and Brave speaking their wire formats and
 * the scripted model.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startFakeSearchProviders,
  startServiceProcess,
  textReply,
  toolCallsReply,
} from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';

const KEYS = { tavily: 'tvly-e2e-secret-key', brave: 'brave-e2e-secret-key' };
const RESULTS = [
  {
    title: 'Agent Backend 1.0',
    url: 'https://example.org/release',
    snippet: 'Released today.',
    date: '2026-11-23',
  },
];

describe('web search in agent runs', () => {
  let fakes: Awaited<ReturnType<typeof startFakeSearchProviders>>;
  let cluster: AgentCluster;
  let token: string;

  beforeAll(async () => {
    fakes = await startFakeSearchProviders(KEYS);
    cluster = await startAgentCluster({
      AGENT_LLM_MAX_RETRIES: '0',
      TAVILY_API_KEY: KEYS.tavily,
      TAVILY_API_BASE_URL: fakes.tavily.url,
      BRAVE_SEARCH_API_KEY: KEYS.brave,
      BRAVE_SEARCH_API_BASE_URL: fakes.brave.url,
      WEB_SEARCH_TIMEOUT_MS: '500',
      WEB_SEARCH_CACHE_TTL_MS: '0',
      WEB_SEARCH_BREAKER_FAILURES: '2',
      WEB_SEARCH_BREAKER_COOLDOWN_MS: '600000',
    });
    token = await cluster.token('searcher');
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await fakes?.close();
  });

  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-search',
    modelName,
  });
  const reset = () => {
    fakes.tavily.requests.length = 0;
    fakes.brave.requests.length = 0;
  };
  /** One run on `replica` whose model searches `query` once, then answers. */
  const searchRun = async (model: string, query: string, replica = 0) => {
    cluster.model.script(model, [
      toolCallsReply([{ name: 'web_search', args: { query, max_results: 3 } }]),
      textReply('Here is what I found.'),
    ]);
    const run = await invoke(cluster.api[replica]!.url, token, {
      message: `Search for ${query}`,
      llm_config: llm(model),
      enable_web_search: true,
    });
    const events = await run.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    return events.find((e) => e.data.type === 'tool_result')!.data as unknown as {
      result: string;
      is_error?: boolean;
    };
  };

  it('gives the model titles, URLs, dates and snippets from Tavily', async () => {
    reset();
    fakes.tavily.behave({ kind: 'results', results: RESULTS });
    const result = await searchRun('ws-basic', 'agent backend release');
    expect(result.is_error).not.toBe(true);
    expect(result.result).toBe(
      '1. Agent Backend 1.0\n   https://example.org/release\n   2026-11-23\n   Released today.',
    );
    const toolMessage = cluster.model
      .requests('ws-basic')[1]!
      .body.messages!.find((m) => m.role === 'tool');
    expect(String(toolMessage!.content)).toContain('https://example.org/release');
    expect(fakes.tavily.requests).toHaveLength(1);
    expect(fakes.brave.requests).toHaveLength(0);
  });

  it('fails over to Brave when Tavily rate-limits and when it times out', async () => {
    reset();
    fakes.tavily.behave({ kind: 'status', status: 429, retryAfter: 30 });
    fakes.brave.behave({ kind: 'results', results: RESULTS });
    expect((await searchRun('ws-429', 'rate limited')).result).toContain('example.org/release');
    fakes.tavily.behave({ kind: 'hang', ms: 3_000 });
    expect((await searchRun('ws-timeout', 'slow tavily', 1)).result).toContain(
      'example.org/release',
    );
    expect(fakes.tavily.requests).toHaveLength(2);
    expect(fakes.brave.requests).toHaveLength(2);
  });

  it('stops asking a provider that keeps failing (breaker open)', async () => {
    // A success first: the earlier failover left one failure on this replica's breaker.
    fakes.tavily.behave({ kind: 'results', results: RESULTS });
    await searchRun('ws-breaker-ok', 'healthy');
    reset();
    fakes.tavily.behave({ kind: 'status', status: 503 });
    fakes.brave.behave({ kind: 'results', results: RESULTS });
    for (let i = 0; i < 4; i++) await searchRun(`ws-breaker-${i}`, `query ${i}`);
    // The breaker is per process (these runs all went to one replica): two failures open it,
    // then only Brave is asked.
    expect(fakes.tavily.requests).toHaveLength(2);
    expect(fakes.brave.requests).toHaveLength(4);
  });

  it('offers no tool and sends a notice where no provider is configured', async () => {
    const bare = await startServiceProcess({
      entry: 'apps/api/dist/main.js',
      env: {
        ...cluster.env,
        INSTANCE_ID: 'api-nosearch',
        TAVILY_API_KEY: '',
        BRAVE_SEARCH_API_KEY: '',
      },
    });
    try {
      cluster.model.script('ws-none', [textReply('I cannot search.')]);
      const run = await invoke(bare.url, token, {
        message: 'Search the news',
        llm_config: llm('ws-none'),
        enable_web_search: true,
      });
      const events = await run.ended;
      expect(events.filter((e) => e.data.type === 'notice').map((e) => e.data)).toEqual([
        expect.objectContaining({ code: 'web_search_unavailable' }),
      ]);
      const tools = (cluster.model.requests('ws-none')[0]!.body.tools ?? []).map(
        (t) => t.function.name,
      );
      expect(tools).not.toContain('web_search');
    } finally {
      await bare.stop('SIGKILL');
    }
  });

  it('asks the providers in WEB_SEARCH_PROVIDERS order (brave,tavily: Brave first)', async () => {
    const braveFirst = await startServiceProcess({
      entry: 'apps/api/dist/main.js',
      env: { ...cluster.env, INSTANCE_ID: 'api-brave-first', WEB_SEARCH_PROVIDERS: 'brave,tavily' },
    });
    try {
      reset();
      fakes.tavily.behave({ kind: 'results', results: RESULTS });
      fakes.brave.behave({ kind: 'results', results: RESULTS });
      cluster.model.script('ws-order', [
        toolCallsReply([{ name: 'web_search', args: { query: 'order of providers' } }]),
        textReply('Found.'),
      ]);
      const run = await invoke(braveFirst.url, token, {
        message: 'Search',
        llm_config: llm('ws-order'),
        enable_web_search: true,
      });
      const events = await run.ended;
      expect(events.find((e) => e.data.type === 'tool_result')?.data.result).toContain(
        'example.org/release',
      );
      expect(fakes.brave.requests).toHaveLength(1);
      expect(fakes.tavily.requests).toHaveLength(0);
      // The model named no max_results: the default 5 is asked for.
      expect(fakes.brave.requests[0]!.query.count).toBe('5');
    } finally {
      await braveFirst.stop('SIGKILL');
    }
  });

  it('never writes a search key into a log line', () => {
    const logs = cluster.logs();
    expect(logs).toContain('/api/agent/invoke');
    expect(logs).not.toContain(KEYS.tavily);
    expect(logs).not.toContain(KEYS.brave);
  });
});
