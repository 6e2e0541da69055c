/**
 * SaaS account tools: `oauth` tool entries through `POST /api/agent/invoke` on two API
 * replicas sharing Redis and PostgreSQL, with fakes of the five providers (API and token
 * endpoints) and the scripted model.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FAKE_OAUTH_CLIENT,
  startFakeSaas,
  textReply,
  toolCallsReply,
  type FakeSaas,
} from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';

describe('SaaS account tools in agent runs', () => {
  let fake: FakeSaas;
  let cluster: AgentCluster;
  let token: string;
  const secrets: string[] = [FAKE_OAUTH_CLIENT.secret];

  beforeAll(async () => {
    fake = await startFakeSaas();
    cluster = await startAgentCluster({ AGENT_LLM_MAX_RETRIES: '0', ...fake.env });
    token = await cluster.token('saas-user');
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await fake?.close();
  });

  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-saas',
    modelName,
  });
  let n = 0;
  /** A fresh account of `provider`: its tokens are valid at the fake. */
  const grant = (provider: Parameters<FakeSaas['grant']>[0]) => {
    n += 1;
    const access = `${provider}-e2e-access-${n}`;
    const refresh = `${provider}-e2e-refresh-${n}`;
    fake.grant(provider, access, refresh);
    secrets.push(access, refresh);
    return { type: 'oauth', name: provider, access_token: access, refresh_token: refresh };
  };
  /** Every run's events, to check that no event but `credentials_refreshed` holds a token. */
  const allRuns: Array<Array<{ data: Record<string, unknown> }>> = [];
  const ended = async (run: { ended: Promise<Array<{ data: Record<string, unknown> }>> }) => {
    const events = await run.ended;
    allRuns.push(events);
    return events;
  };
  const resultOf = (events: Array<{ data: Record<string, unknown> }>, name: string) =>
    events.find((e) => e.data.type === 'tool_result' && e.data.tool_name === name)?.data as
      { result: string; is_error?: boolean } | undefined;

  it('refuses an unknown provider name with 400, listing the valid ones', async () => {
    const response = await fetch(`${cluster.api[0]!.url}/api/agent/invoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        message: 'x',
        llm_config: llm('x'),
        tools: [{ type: 'oauth', name: 'dropbox', access_token: 'a' }],
      }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; details: unknown } };
    expect(body.error.code).toBe('invalid_request');
    expect(JSON.stringify(body.error.details)).toContain(
      'must be one of github, gmail, google_drive, slack, notion',
    );
  });

  it("runs each provider's read and write tools for the model", async () => {
    const calls: Array<[string, Record<string, unknown>, string]> = [
      ['github_search_issues', { query: 'crash' }, '#7 Crash on empty input'],
      ['github_create_issue', { repo: 'acme/widgets', title: 'From the agent' }, 'Opened #'],
      ['gmail_search', { query: 'report' }, 'Quarterly report'],
      ['gmail_create_draft', { to: 'ana@example.com', subject: 'Hi', body: 'Hello' }, 'Draft '],
      ['drive_read_file', { id: 'doc-1' }, 'Q1: ship search.'],
      ['drive_create_file', { name: 'a.txt', content: 'A' }, 'Created a.txt'],
      ['slack_read_history', { channel: 'C01' }, 'deploy at 5pm'],
      ['slack_post_message', { channel: 'C01', text: 'Shipped' }, 'Posted to C01'],
      ['notion_read_page', { page_id: 'page-1' }, 'First note.'],
      ['notion_append_text', { page_id: 'page-1', text: 'More.' }, 'Appended 1 paragraph'],
    ];
    cluster.model.script('saas-all', [
      toolCallsReply(calls.map(([name, args]) => ({ name, args }))),
      textReply('All done.'),
    ]);
    const run = await invoke(cluster.api[0]!.url, token, {
      message: 'Do the rounds',
      llm_config: llm('saas-all'),
      tools: (['github', 'gmail', 'google_drive', 'slack', 'notion'] as const).map(grant),
    });
    const events = await ended(run);
    expect(events.at(-1)!.data.type).toBe('done');
    for (const [name, , expected] of calls) {
      const result = resultOf(events, name);
      expect(result?.is_error, name).not.toBe(true);
      expect(result?.result, name).toContain(expected);
    }
  });

  it('holds a write for approval (HITL) and runs it once approved', async () => {
    cluster.model.script('saas-hitl', [
      toolCallsReply([
        { name: 'slack_post_message', args: { channel: 'C01', text: 'Needs approval' } },
      ]),
      textReply('Posted.'),
    ]);
    const before = fake.data.slack.length;
    const run = await invoke(cluster.api[0]!.url, token, {
      message: 'Tell the team',
      llm_config: llm('saas-hitl'),
      tools: [grant('slack')],
      hitl_config: {},
    });
    await run.waitFor((e) => e.data.type === 'approval_request', 10_000);
    const request = run.events.find((e) => e.data.type === 'approval_request')!.data as unknown as {
      request_id: string;
      tool_name: string;
    };
    expect(request.tool_name).toBe('slack_post_message');
    expect(fake.data.slack.length).toBe(before);
    const decided = await fetch(
      `${cluster.api[1]!.url}/api/agent/approvals/${encodeURIComponent(request.request_id)}/decision`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ decision: 'approve' }),
      },
    );
    expect(decided.status).toBe(200);
    const events = await ended(run);
    expect(resultOf(events, 'slack_post_message')?.result).toMatch(/^Posted to C01/);
    expect(fake.data.slack.at(-1)).toMatchObject({ text: 'Needs approval' });
  });

  it('refreshes an expired token, sends credentials_refreshed, and the call succeeds', async () => {
    const entry = { ...grant('github'), access_token: 'github-e2e-expired', expires_at: 1 };
    secrets.push(entry.access_token);
    cluster.model.script('saas-refresh', [
      toolCallsReply([{ name: 'github_list_repos', args: {} }]),
      textReply('Listed.'),
    ]);
    const run = await invoke(cluster.api[1]!.url, token, {
      message: 'My repos?',
      llm_config: llm('saas-refresh'),
      tools: [entry],
    });
    const events = await ended(run);
    const refreshed = events.find((e) => e.data.type === 'credentials_refreshed')?.data as
      { name: string; access_token: string; refresh_token: string; expires_at: number } | undefined;
    expect(refreshed).toMatchObject({ name: 'github' });
    expect(refreshed!.access_token).toMatch(/^github-access-/);
    expect(refreshed!.refresh_token).toMatch(/^github-refresh-/);
    secrets.push(refreshed!.access_token, refreshed!.refresh_token);
    expect(resultOf(events, 'github_list_repos')?.result).toContain('acme/widgets');
    // The event comes before the tool's result: the client can store the pair at once.
    const order = events.map((e) => e.data.type);
    expect(order.indexOf('credentials_refreshed')).toBeLessThan(order.indexOf('tool_result'));
  });

  it('two replicas refreshing the same token at once: one refresh reaches the provider', async () => {
    const entry = { ...grant('notion'), access_token: 'notion-e2e-expired', expires_at: 1 };
    secrets.push(entry.access_token);
    fake.slowRefresh(500);
    try {
      const before = fake.refreshes('notion').length;
      const runs = await Promise.all(
        [0, 1].map(async (replica) => {
          const model = `saas-race-${replica}`;
          cluster.model.script(model, [
            toolCallsReply([{ name: 'notion_search', args: { query: 'team' } }]),
            textReply('Found.'),
          ]);
          return invoke(cluster.api[replica]!.url, token, {
            message: 'Find the team page',
            llm_config: llm(model),
            tools: [entry],
          });
        }),
      );
      const results = await Promise.all(runs.map(ended));
      for (const events of results) {
        expect(resultOf(events, 'notion_search')?.result).toContain('Team notes');
      }
      expect(fake.refreshes('notion').length - before).toBe(1);
      const pairs = results.map(
        (events) => events.find((e) => e.data.type === 'credentials_refreshed')?.data,
      );
      expect(pairs[0]).toEqual(pairs[1]);
      secrets.push(String(pairs[0]!.access_token), String(pairs[0]!.refresh_token));
    } finally {
      fake.slowRefresh(0);
    }
  });

  it('turns a refresh the provider refuses into a tool error the model reads', async () => {
    const entry = {
      ...grant('slack'),
      access_token: 'slack-e2e-revoked',
      refresh_token: 'slack-e2e-unknown-refresh',
    };
    secrets.push(entry.access_token, entry.refresh_token);
    cluster.model.script('saas-dead', [
      toolCallsReply([{ name: 'slack_list_channels', args: {} }]),
      textReply('Please reconnect Slack.'),
    ]);
    const run = await invoke(cluster.api[0]!.url, token, {
      message: 'Channels?',
      llm_config: llm('saas-dead'),
      tools: [entry],
    });
    const events = await ended(run);
    expect(events.at(-1)!.data.type).toBe('done');
    const result = resultOf(events, 'slack_list_channels')!;
    expect(result.is_error).toBe(true);
    expect(result.result).toMatch(/could not be renewed .* reconnect the account/);
  });

  it('never writes a token or the client secret into a log line', () => {
    const logs = cluster.logs();
    expect(logs).toContain('/api/agent/invoke');
    for (const secret of secrets) expect(logs).not.toContain(secret);
  });

  it('sends no token in any SSE event but credentials_refreshed', () => {
    expect(allRuns.length).toBeGreaterThanOrEqual(6);
    expect(allRuns.flat().some((e) => e.data.type === 'credentials_refreshed')).toBe(true);
    for (const event of allRuns.flat()) {
      if (event.data.type === 'credentials_refreshed') continue;
      const text = JSON.stringify(event.data);
      for (const secret of secrets) expect(text, String(event.data.type)).not.toContain(secret);
    }
  });
});
