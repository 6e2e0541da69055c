import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryEphemeralStore, createRedisEphemeralStore } from '@agent-backend/ephemeral';
import { redisTestKeys, testRedisUrl, type FakeSaasProvider } from '@agent-backend/testing';
import { useSaasFakes } from './testing/saas-fakes.js';

const redis = redisTestKeys('saas', { beforeAll, afterAll });

describe('SaaS account tools: refreshes, rate limits and errors', () => {
  const saas = useSaasFakes();
  const { account } = saas;

  it('refreshes an expired token first, tells the client, and the call goes through', async () => {
    const { call, events, refreshToken } = await account('github', {
      access_token: 'github-expired',
      expires_at: Math.floor(Date.now() / 1000) - 10,
    });
    const before = saas.fake.refreshes('github').length;
    expect((await call('github_list_repos')).isError).toBeUndefined();
    expect(saas.fake.refreshes('github').length - before).toBe(1);
    const refreshed = events.find((e) => e.type === 'credentials_refreshed');
    expect(refreshed).toMatchObject({
      type: 'credentials_refreshed',
      name: 'github',
      access_token: expect.stringMatching(/^github-access-/),
      refresh_token: expect.stringMatching(/^github-refresh-/),
    });
    expect((refreshed as { expires_at: number }).expires_at).toBeLessThan(1e12); // seconds, as sent
    expect((refreshed as { refresh_token: string }).refresh_token).not.toBe(refreshToken);
    // The run keeps the new pair: no second refresh.
    await call('github_list_repos');
    expect(saas.fake.refreshes('github').length - before).toBe(1);
  });

  it('refreshes after a 401 and retries once (Slack: token_expired / invalid_auth)', async () => {
    const { call, events } = await account('slack', { access_token: 'slack-revoked' });
    expect((await call('slack_list_channels')).content).toMatch(/^C01 #general/);
    expect(events.filter((e) => e.type === 'credentials_refreshed')).toHaveLength(1);
    const google = await account('gmail', { access_token: 'gmail-revoked' });
    expect((await google.call('gmail_search', { query: 'report' })).isError).toBeUndefined();
    // Google keeps the refresh token: the event has none.
    expect(google.events.find((e) => e.type === 'credentials_refreshed')).not.toHaveProperty(
      'refresh_token',
    );
  });

  it('turns an invalid refresh, a missing refresh token or client into tool errors', async () => {
    const dead = await account('notion', {
      access_token: 'notion-revoked',
      refresh_token: 'never-issued',
    });
    const output = await dead.call('notion_search', { query: 'x' });
    expect(output.isError).toBe(true);
    expect(output.content).toBe(
      'The Notion authorization could not be renewed (the token endpoint answered invalid_grant). The user needs to reconnect the account.',
    );
    const noRefresh = await account('github', {
      access_token: 'github-revoked',
      refresh_token: undefined,
    });
    expect((await noRefresh.call('github_list_repos')).content).toMatch(
      /no refresh token was given/,
    );
    const noClient = await account(
      'github',
      { access_token: 'github-expired-2', expires_at: 1 },
      {
        endpoints: {
          ...saas.endpoints,
          github: { ...saas.endpoints.github, clientId: undefined, clientSecret: undefined },
        },
      },
    );
    expect((await noClient.call('github_list_repos')).content).toMatch(
      /has expired and cannot be renewed here \(the service has no OAuth client/,
    );
  });

  it('retries a 429 once after Retry-After; reports 403 scopes and 5xx readably, without tokens', async () => {
    const { call, token } = await account('github');
    saas.fake.failNext('github', 429, 1, 1);
    expect((await call('github_list_repos')).isError).toBeUndefined();
    saas.fake.failNext('github', 429, 2, 1);
    expect((await call('github_list_repos')).content).toBe(
      'GitHub is rate-limiting requests; try again in 1 s: injected 429.',
    );
    saas.fake.failNext('github', 429, 1, 30);
    expect((await call('github_list_repos')).content).toMatch(/try again in 30 s/);
    saas.fake.failNext('github', 403);
    const forbidden = await call('github_create_issue', { repo: 'acme/widgets', title: 't' });
    expect(forbidden.content).toBe(
      "GitHub does not allow this with the account's permissions (HTTP 403): injected 403. The account may need more scopes.",
    );
    saas.fake.failNext('notion', 502);
    const notion = await account('notion');
    expect((await notion.call('notion_search', { query: 'x' })).content).toBe(
      'Notion failed (HTTP 502): injected 502.',
    );
    for (const text of [forbidden.content]) expect(text).not.toContain(token);
  });

  it('refreshes a token once when two replicas need it at the same time', async () => {
    const prefix = redis.fresh();
    const stores = [0, 1].map(() => createRedisEphemeralStore({ url: testRedisUrl(), prefix }));
    saas.fake.grant('slack', 'slack-shared-refresh-token-not-access', undefined);
    const entry = {
      access_token: 'slack-expired-shared',
      refresh_token: 'slack-shared-rt',
      expires_at: 1,
    };
    saas.fake.grant('slack', 'unused', 'slack-shared-rt');
    saas.fake.slowRefresh(300);
    try {
      const before = saas.fake.refreshes('slack').length;
      const runs = await Promise.all(
        stores.map((ephemeral) => account('slack', entry, { ephemeral })),
      );
      const outputs = await Promise.all(runs.map((r) => r.call('slack_list_channels')));
      for (const output of outputs) expect(output.content).toMatch(/^C01 #general/);
      expect(saas.fake.refreshes('slack').length - before).toBe(1);
      // Both runs tell their client the same new pair.
      const pairs = runs.map((r) => r.events.find((e) => e.type === 'credentials_refreshed'));
      expect(pairs[0]).toEqual(pairs[1]);
    } finally {
      saas.fake.slowRefresh(0);
      await Promise.all(stores.map((s) => s.close()));
    }
  });
  it("flags each provider's reads and writes (writes follow modes and HITL)", async () => {
    const flags = async (provider: FakeSaasProvider) =>
      (await account(provider)).tools.map((t) => [t.name, t.writes]);
    expect(await flags('gmail')).toEqual([
      ['gmail_search', false],
      ['gmail_read_message', false],
      ['gmail_create_draft', true],
      ['gmail_send', true],
    ]);
    expect(await flags('google_drive')).toEqual([
      ['drive_search', false],
      ['drive_read_file', false],
      ['drive_create_file', true],
    ]);
    expect(await flags('slack')).toEqual([
      ['slack_list_channels', false],
      ['slack_read_history', false],
      ['slack_search_messages', false],
      ['slack_post_message', true],
    ]);
    expect(await flags('notion')).toEqual([
      ['notion_search', false],
      ['notion_read_page', false],
      ['notion_create_page', true],
      ['notion_append_text', true],
    ]);
  });

  it('refreshes first when expires_at is within the minute, not when it is further away', async () => {
    const soon = await account('github', {
      access_token: 'github-expiring-soon',
      expires_at: Math.floor(Date.now() / 1000) + 30,
    });
    const before = saas.fake.refreshes('github').length;
    expect((await soon.call('github_list_repos')).isError).toBeUndefined();
    expect(saas.fake.refreshes('github').length - before).toBe(1);
    // The expired token was never sent: the refresh came first.
    expect(
      saas.fake.requests.some((r) => r.headers.authorization === 'Bearer github-expiring-soon'),
    ).toBe(false);
    const later = await account('github', { expires_at: Math.floor(Date.now() / 1000) + 300 });
    expect((await later.call('github_list_repos')).isError).toBeUndefined();
    expect(saas.fake.refreshes('github').length - before).toBe(1);
    expect(later.events).toEqual([]);
  });

  it("reads GitHub's 200 with bad_refresh_token as a refused refresh", async () => {
    const dead = await account('github', {
      access_token: 'github-revoked-3',
      refresh_token: 'github-never-issued',
    });
    expect(await dead.call('github_list_repos')).toEqual({
      content:
        'The GitHub authorization could not be renewed (the token endpoint answered bad_refresh_token). The user needs to reconnect the account.',
      isError: true,
    });
    expect(dead.events).toEqual([]);
  });

  it('treats 403 with x-ratelimit-remaining: 0 as a rate limit: waits for a near reset, reports a far one', async () => {
    const { call } = await account('github');
    saas.fake.exhaustGitHubRateLimit(1);
    expect((await call('github_list_repos')).isError).toBeUndefined();
    const last = saas.fake.requests.filter((r) => r.provider === 'github').slice(-2);
    expect(last.map((r) => r.path)).toEqual(['/user/repos', '/user/repos']);
    saas.fake.exhaustGitHubRateLimit(3600);
    expect(await call('github_list_repos')).toEqual({
      content:
        'GitHub is rate-limiting requests; try again in 60 min: API rate limit exceeded for user ID 1.',
      isError: true,
    });
    // GitHub's secondary limit: retried after its Retry-After; without one (GitHub asks for a
    // minute at least) reported at once.
    saas.fake.githubSecondaryLimit(1, 1);
    expect((await call('github_list_repos')).isError).toBeUndefined();
    const requests = saas.fake.requests.length;
    saas.fake.githubSecondaryLimit(1);
    expect(await call('github_list_repos')).toEqual({
      content:
        'GitHub is rate-limiting requests: You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
      isError: true,
    });
    expect(saas.fake.requests.length - requests).toBe(1);
    // A 403 without the rate-limit signs stays a permissions error.
    saas.fake.failNext('github', 403);
    expect((await call('github_list_repos')).content).toMatch(/HTTP 403.*more scopes/);
  });

  it('retries a 429 without Retry-After once after a short wait; Slack and Notion 429s', async () => {
    const github = await account('github');
    saas.fake.failNext('github', 429, 1);
    expect((await github.call('github_list_repos')).isError).toBeUndefined();
    saas.fake.failNext('github', 429, 2);
    expect((await github.call('github_list_repos')).content).toBe(
      'GitHub is rate-limiting requests; try again in 1 s: injected 429.',
    );
    const slack = await account('slack');
    saas.fake.failNext('slack', 429, 2, 1);
    expect(await slack.call('slack_list_channels', { limit: 1 })).toEqual({
      content: 'Slack is rate-limiting requests; try again in 1 s: ratelimited.',
      isError: true,
    });
    const notion = await account('notion');
    saas.fake.failNext('notion', 429, 1, 1);
    expect((await notion.call('notion_search', { query: 'team' })).content).toMatch(/^Team notes/);
  });

  it("reports Google's and Notion's error statuses readably", async () => {
    const drive = await account('google_drive');
    saas.fake.failNext('google_drive', 403);
    expect((await drive.call('drive_read_file', { id: 'doc-1' })).content).toBe(
      "Google Drive does not allow this with the account's permissions (HTTP 403): injected 403. The account may need more scopes.",
    );
    saas.fake.failNext('google_drive', 429, 2);
    expect((await drive.call('drive_search', { query: 'x' })).content).toMatch(
      /^Google Drive is rate-limiting requests/,
    );
    // Google's per-user quota is a 403 too, told apart by its reason: retried once, then a
    // rate-limit text rather than a scopes one.
    saas.fake.googleUserRateLimit('google_drive', 1);
    expect((await drive.call('drive_read_file', { id: 'doc-1' })).content).toContain('Q1:');
    saas.fake.googleUserRateLimit('google_drive', 2);
    expect((await drive.call('drive_read_file', { id: 'doc-1' })).content).toBe(
      'Google Drive is rate-limiting requests; try again in 1 s: User Rate Limit Exceeded.',
    );
    const gmail = await account('gmail');
    expect((await gmail.call('gmail_read_message', { id: 'msg-404' })).content).toBe(
      'Gmail found nothing there (HTTP 404): Requested entity was not found.',
    );
    const notion = await account('notion');
    saas.fake.failNext('notion', 403);
    expect((await notion.call('notion_read_page', { page_id: 'page-1' })).content).toMatch(
      /^Notion does not allow this .*HTTP 403/,
    );
    expect((await notion.call('notion_read_page', { page_id: 'nope' })).content).toBe(
      'Notion found nothing there (HTTP 404): Could not find page with ID: nope.',
    );
  });

  it('keeps a crafted id inside its path segment', async () => {
    const gmail = await account('gmail');
    const crafted = await gmail.call('gmail_read_message', { id: '../drafts?x=1#' });
    expect(crafted.isError).toBe(true);
    expect(saas.fake.requests.at(-1)!.path).toBe(
      '/gmail/v1/users/me/messages/..%2Fdrafts%3Fx%3D1%23',
    );
    expect((await gmail.call('gmail_read_message', { id: '..' })).content).toBe(
      '".." is not a valid id.',
    );
    const drive = await account('google_drive');
    await drive.call('drive_read_file', { id: 'doc-1/export' });
    expect(saas.fake.requests.at(-1)!.path).toBe('/drive/v3/files/doc-1%2Fexport');
    const notion = await account('notion');
    await notion.call('notion_read_page', { page_id: '../../v1/users' });
    expect(saas.fake.requests.at(-1)!.path).toBe('/v1/pages/..%2F..%2Fv1%2Fusers');
    const github = await account('github');
    const before = saas.fake.requests.length;
    for (const repo of ['../..', 'acme/..', 'acme/widgets/../x', 'acme/wid%2fgets']) {
      const output = await github.call('github_get_issue', { repo, number: 7 });
      expect(output.content, repo).toMatch(/^Invalid arguments for github_get_issue: repo:/);
    }
    expect(saas.fake.requests.length).toBe(before);
  });

  it('keeps a rotated pair when the run is aborted during the refresh', async () => {
    const ephemeral = createMemoryEphemeralStore();
    const entry = { access_token: 'notion-expired-abort', expires_at: 1 };
    const aborted = new AbortController();
    const first = await account('notion', entry, { ephemeral, signal: aborted.signal });
    const before = saas.fake.refreshes('notion').length;
    saas.fake.slowRefresh(400);
    try {
      const call = first.call('notion_search', { query: 'team' });
      while (saas.fake.refreshes('notion').length === before) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      aborted.abort(new Error('run cancelled'));
      await expect(call).rejects.toThrow('run cancelled');
      expect(first.events).toEqual([]);
    } finally {
      saas.fake.slowRefresh(0);
    }
    // The provider rotated the refresh token; the client retries with the old pair and gets
    // the new one from the shared cache, with no second refresh (which would be refused).
    const again = await account(
      'notion',
      { ...entry, refresh_token: first.refreshToken },
      { ephemeral },
    );
    expect((await again.call('notion_search', { query: 'team' })).content).toMatch(/^Team notes/);
    expect(saas.fake.refreshes('notion').length - before).toBe(1);
    expect(again.events).toEqual([
      expect.objectContaining({
        type: 'credentials_refreshed',
        name: 'notion',
        refresh_token: expect.stringMatching(/^notion-refresh-/),
      }),
    ]);
  });
});
