import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentEvent, OAuthToolEntry } from '@agent-backend/protocol';
import type { AgentTool, RunInfo, ToolContext } from '@agent-backend/agent-runtime';
import { createMemoryEphemeralStore, createRedisEphemeralStore } from '@agent-backend/ephemeral';
import {
  redisTestKeys,
  startFakeSaas,
  testRedisUrl,
  type FakeSaas,
  type FakeSaasProvider,
} from '@agent-backend/testing';
import { saasToolSource, type SaasEndpoints } from './source.js';

const redis = redisTestKeys('saas', { beforeAll, afterAll });

describe('SaaS account tools against fakes of the five providers', () => {
  let fake: FakeSaas;
  let endpoints: SaasEndpoints;
  beforeAll(async () => {
    fake = await startFakeSaas();
    const e = fake.env;
    const client = (name: string) => ({
      clientId: e[`${name}_CLIENT_ID`],
      clientSecret: e[`${name}_CLIENT_SECRET`],
    });
    endpoints = {
      github: {
        apiBaseUrl: e.GITHUB_API_BASE_URL!,
        tokenUrl: e.GITHUB_OAUTH_TOKEN_URL!,
        ...client('GITHUB'),
      },
      gmail: {
        apiBaseUrl: e.GMAIL_API_BASE_URL!,
        tokenUrl: e.GOOGLE_OAUTH_TOKEN_URL!,
        ...client('GOOGLE'),
      },
      google_drive: {
        apiBaseUrl: e.GOOGLE_DRIVE_API_BASE_URL!,
        tokenUrl: e.GOOGLE_OAUTH_TOKEN_URL!,
        ...client('GOOGLE'),
      },
      slack: {
        apiBaseUrl: e.SLACK_API_BASE_URL!,
        tokenUrl: e.SLACK_OAUTH_TOKEN_URL!,
        ...client('SLACK'),
      },
      notion: {
        apiBaseUrl: e.NOTION_API_BASE_URL!,
        tokenUrl: e.NOTION_OAUTH_TOKEN_URL!,
        ...client('NOTION'),
      },
    };
  });
  afterAll(async () => {
    await fake.close();
  });

  let counter = 0;
  /** The tools of one run with one account of `provider`, and the events its calls emit. */
  const account = async (
    provider: FakeSaasProvider,
    entry: Partial<OAuthToolEntry> = {},
    options: {
      ephemeral?: ReturnType<typeof createMemoryEphemeralStore>;
      endpoints?: SaasEndpoints;
      signal?: AbortSignal;
    } = {},
  ) => {
    counter += 1;
    const token = `${provider}-token-${counter}`;
    const refreshToken = `${provider}-refresh-${counter}`;
    fake.grant(provider, token, refreshToken);
    const source = saasToolSource({
      ephemeral: options.ephemeral ?? createMemoryEphemeralStore(),
      endpoints: options.endpoints ?? endpoints,
      settings: { callTimeoutMs: 10_000, maxRetryAfterMs: 2_000 },
    });
    const full: OAuthToolEntry = {
      type: 'oauth',
      name: provider,
      access_token: token,
      refresh_token: refreshToken,
      ...entry,
    };
    const tools = (await source({
      userId: 'u',
      sessionId: 's',
      runId: 'r',
      signal: new AbortController().signal,
      request: { capabilities: { oauthTools: [full] } },
    } as unknown as RunInfo)) as AgentTool[];
    const events: AgentEvent[] = [];
    const context = {
      signal: options.signal ?? new AbortController().signal,
      emit: (e: AgentEvent) => events.push(e),
    } as unknown as ToolContext;
    const call = (name: string, args: Record<string, unknown> = {}) => {
      const tool = tools.find((t) => t.name === name);
      if (!tool) throw new Error(`no tool ${name}`);
      return tool.execute(args, context);
    };
    return { tools, call, events, token, refreshToken };
  };

  it('GitHub: search, read, list repos (reads); open an issue, comment (writes)', async () => {
    const { tools, call } = await account('github');
    expect(tools.map((t) => [t.name, t.writes])).toEqual([
      ['github_search_issues', false],
      ['github_get_issue', false],
      ['github_list_repos', false],
      ['github_create_issue', true],
      ['github_comment', true],
    ]);
    expect((await call('github_search_issues', { query: 'repo:acme/widgets crash' })).content).toBe(
      '1 found; the first 1:\n#7 Crash on empty input [open] https://github.com/acme/widgets/issues/7',
    );
    expect((await call('github_get_issue', { repo: 'acme/widgets', number: 7 })).content).toContain(
      'Steps: send an empty form.',
    );
    expect((await call('github_list_repos')).content).toBe(
      'acme/widgets https://github.com/acme/widgets — Widgets\n' +
        'acme/gadgets (private) https://github.com/acme/gadgets — Gadgets\n' +
        'ana/dotfiles https://github.com/ana/dotfiles',
    );
    // One page of `limit`; GitHub's Link rel="next" is reported, not followed.
    expect((await call('github_list_repos', { limit: 2 })).content).toBe(
      'acme/widgets https://github.com/acme/widgets — Widgets\n' +
        'acme/gadgets (private) https://github.com/acme/gadgets — Gadgets\n' +
        'More repositories exist; ask with a higher limit (up to 50) to see more.',
    );
    const opened = await call('github_create_issue', {
      repo: 'acme/widgets',
      title: 'Add dark mode',
      body: 'Please.',
    });
    expect(opened.content).toMatch(
      /^Opened #\d+ Add dark mode \[open\] https:\/\/github.com\/acme\/widgets\/issues\/\d+$/,
    );
    expect(
      (await call('github_comment', { repo: 'acme/widgets', number: 7, body: 'Reproduced.' }))
        .content,
    ).toMatch(/issuecomment-1$/);
    expect(fake.data.issues.find((i) => i.number === 7)!.comments).toEqual(['Reproduced.']);
    const last = fake.requests.filter((r) => r.provider === 'github').at(-1)!;
    expect(last.headers['x-github-api-version']).toBe('2022-11-28');
    expect(last.headers.accept).toBe('application/vnd.github+json');
    const missing = await call('github_get_issue', { repo: 'acme/widgets', number: 999 });
    expect(missing).toEqual({
      content: 'GitHub found nothing there (HTTP 404): Not Found.',
      isError: true,
    });
  });

  it('Gmail: search, read (reads); draft, send (writes)', async () => {
    const { call } = await account('gmail');
    expect((await call('gmail_search', { query: 'report' })).content).toBe(
      'msg-1: Quarterly report — The report is attached. https://mail.google.com/mail/u/0/#all/msg-1\n' +
        'msg-2: Re: Quarterly report — Thanks for the report. https://mail.google.com/mail/u/0/#all/msg-2',
    );
    // One page of `limit`; a nextPageToken is reported.
    expect((await call('gmail_search', { query: 'report', limit: 1 })).content).toBe(
      'msg-1: Quarterly report — The report is attached. https://mail.google.com/mail/u/0/#all/msg-1\n' +
        'More results exist; narrow the query or raise the limit to see them.',
    );
    expect((await call('gmail_read_message', { id: 'msg-1' })).content).toContain(
      'From: ana@example.com',
    );
    expect(
      (
        await call('gmail_create_draft', {
          to: 'ana@example.com',
          subject: 'Re: report',
          body: 'Thanks!',
        })
      ).content,
    ).toMatch(/^Draft draft-msg-\d+ created/);
    expect(
      (await call('gmail_send', { to: 'bo@example.com', subject: 'Ünïcode hello', body: 'Hi Bo' }))
        .content,
    ).toMatch(/^Sent \(message msg-\d+\)/);
    expect(fake.data.gmail.at(-1)).toMatchObject({
      to: 'bo@example.com',
      subject: 'Ünïcode hello',
      text: 'Hi Bo',
      sent: true,
    });
  });

  it('Google Drive: search, read (a Google Doc exported as text); create a file', async () => {
    const { call } = await account('google_drive');
    expect((await call('drive_search', { query: 'roadmap' })).content).toBe(
      'Roadmap (application/vnd.google-apps.document, id doc-1) https://docs.google.com/document/d/doc-1\n' +
        'Roadmap 2027 (application/vnd.google-apps.document, id doc-2) https://docs.google.com/document/d/doc-2',
    );
    expect((await call('drive_search', { query: 'roadmap', limit: 1 })).content).toMatch(
      /id doc-1\) \S+\nMore results exist/,
    );
    expect(fake.requests.at(-1)?.query.fields).toBe(
      'nextPageToken,files(id,name,mimeType,webViewLink,modifiedTime)',
    );
    expect((await call('drive_read_file', { id: 'doc-1' })).content).toContain('Q1: ship search.');
    expect(
      (await call('drive_create_file', { name: 'notes.txt', content: 'line 1\nline 2' })).content,
    ).toMatch(/^Created notes.txt \(id file-\d+\)/);
    expect(fake.data.files.at(-1)).toMatchObject({
      name: 'notes.txt',
      mimeType: 'text/plain',
      content: 'line 1\nline 2',
    });
    const exported = fake.requests.find((r) => r.path === '/drive/v3/files/doc-1/export');
    expect(exported?.query.mimeType).toBe('text/plain');
  });

  it('Slack: channels, history, search (reads); post (write); its ok:false errors', async () => {
    const { call } = await account('slack');
    // Slack answers fewer channels a page than asked (two here) with a cursor: it is followed.
    expect((await call('slack_list_channels')).content).toBe(
      'C01 #general https://acme.slack.com/archives/C01\n' +
        'C02 #random https://acme.slack.com/archives/C02\n' +
        'C03 #deploys (private) https://acme.slack.com/archives/C03',
    );
    const listed = fake.requests.filter((r) => r.path === '/api/conversations.list').slice(-2);
    expect(listed[1]!.query.cursor).toBeTruthy();
    expect((await call('slack_list_channels', { limit: 2 })).content).toBe(
      'C01 #general https://acme.slack.com/archives/C01\n' +
        'C02 #random https://acme.slack.com/archives/C02\n' +
        'More channels exist; raise the limit (up to 200) to see them.',
    );
    expect((await call('slack_read_history', { channel: 'C01' })).content).toBe(
      '[1700000000.000100] U1: deploy at 5pm https://acme.slack.com/archives/C01/p1700000000000100',
    );
    expect((await call('slack_search_messages', { query: 'deploy' })).content).toContain(
      'https://acme.slack.com/archives/C01/p1700000000000100',
    );
    const posted = await call('slack_post_message', { channel: 'C01', text: 'Deployed.' });
    const ts = fake.data.slack.at(-1)!.ts;
    expect(fake.data.slack.at(-1)).toMatchObject({ text: 'Deployed.' });
    expect(posted.content).toBe(
      `Posted to C01 (message ${ts}). https://acme.slack.com/archives/C01/p${ts.replace('.', '')}`,
    );
    expect(fake.requests.at(-1)).toMatchObject({
      path: '/api/chat.getPermalink',
      query: { channel: 'C01', message_ts: ts },
    });
    // Newest first, one page of `limit`; has_more is reported.
    expect((await call('slack_read_history', { channel: 'C01', limit: 1 })).content).toBe(
      `[${ts}] UBOT: Deployed. https://acme.slack.com/archives/C01/p${ts.replace('.', '')}\n` +
        'Older messages exist; raise the limit (up to 100) to read further back.',
    );
    expect(await call('slack_read_history', { channel: 'C99' })).toEqual({
      content: 'Slack refused the request: channel_not_found.',
      isError: true,
    });
  });

  it('Notion: search, read a page (reads); create a page, append text (writes)', async () => {
    const { call } = await account('notion');
    expect((await call('notion_search', { query: 'team' })).content).toBe(
      'Team notes https://www.notion.so/page-1 (id page-1)',
    );
    expect((await call('notion_read_page', { page_id: 'page-1' })).content).toContain(
      'First note.',
    );
    expect(
      (
        await call('notion_create_page', {
          parent_page_id: 'page-1',
          title: 'Plan',
          text: 'Step one.\n\nStep two.',
        })
      ).content,
    ).toMatch(/^Created "Plan"/);
    expect(fake.data.pages.at(-1)).toMatchObject({
      title: 'Plan',
      blocks: ['Step one.', 'Step two.'],
    });
    expect(
      (await call('notion_append_text', { page_id: 'page-1', text: 'Second note.' })).content,
    ).toBe('Appended 1 paragraph(s) to page page-1: https://www.notion.so/page-1');
    // A page's blocks follow next_cursor (150 blocks: two requests of 100).
    const long = await call('notion_read_page', { page_id: 'page-2' });
    expect(long.content).toContain('Item 1.\nItem 2.');
    expect(long.content).toContain('Item 150.');
    const reads = fake.requests.filter((r) => r.path === '/v1/blocks/page-2/children');
    expect(reads.map((r) => r.query.start_cursor ?? null)).toEqual([null, expect.any(String)]);
    // Search: one page of `limit`; has_more is reported.
    expect((await call('notion_search', { query: '', limit: 1 })).content).toBe(
      'Team notes https://www.notion.so/page-1 (id page-1)\n' +
        'More results exist; narrow the query or raise the limit to see them.',
    );
  });

  it('refreshes an expired token first, tells the client, and the call goes through', async () => {
    const { call, events, refreshToken } = await account('github', {
      access_token: 'github-expired',
      expires_at: Math.floor(Date.now() / 1000) - 10,
    });
    const before = fake.refreshes('github').length;
    expect((await call('github_list_repos')).isError).toBeUndefined();
    expect(fake.refreshes('github').length - before).toBe(1);
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
    expect(fake.refreshes('github').length - before).toBe(1);
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
          ...endpoints,
          github: { ...endpoints.github, clientId: undefined, clientSecret: undefined },
        },
      },
    );
    expect((await noClient.call('github_list_repos')).content).toMatch(
      /has expired and cannot be renewed here \(the service has no OAuth client/,
    );
  });

  it('retries a 429 once after Retry-After; reports 403 scopes and 5xx readably, without tokens', async () => {
    const { call, token } = await account('github');
    fake.failNext('github', 429, 1, 1);
    expect((await call('github_list_repos')).isError).toBeUndefined();
    fake.failNext('github', 429, 2, 1);
    expect((await call('github_list_repos')).content).toBe(
      'GitHub is rate-limiting requests; try again in 1 s: injected 429.',
    );
    fake.failNext('github', 429, 1, 30);
    expect((await call('github_list_repos')).content).toMatch(/try again in 30 s/);
    fake.failNext('github', 403);
    const forbidden = await call('github_create_issue', { repo: 'acme/widgets', title: 't' });
    expect(forbidden.content).toBe(
      "GitHub does not allow this with the account's permissions (HTTP 403): injected 403. The account may need more scopes.",
    );
    fake.failNext('notion', 502);
    const notion = await account('notion');
    expect((await notion.call('notion_search', { query: 'x' })).content).toBe(
      'Notion failed (HTTP 502): injected 502.',
    );
    for (const text of [forbidden.content]) expect(text).not.toContain(token);
  });

  it('refreshes a token once when two replicas need it at the same time', async () => {
    const prefix = redis.fresh();
    const stores = [0, 1].map(() => createRedisEphemeralStore({ url: testRedisUrl(), prefix }));
    fake.grant('slack', 'slack-shared-refresh-token-not-access', undefined);
    const entry = {
      access_token: 'slack-expired-shared',
      refresh_token: 'slack-shared-rt',
      expires_at: 1,
    };
    fake.grant('slack', 'unused', 'slack-shared-rt');
    fake.slowRefresh(300);
    try {
      const before = fake.refreshes('slack').length;
      const runs = await Promise.all(
        stores.map((ephemeral) => account('slack', entry, { ephemeral })),
      );
      const outputs = await Promise.all(runs.map((r) => r.call('slack_list_channels')));
      for (const output of outputs) expect(output.content).toMatch(/^C01 #general/);
      expect(fake.refreshes('slack').length - before).toBe(1);
      // Both runs tell their client the same new pair.
      const pairs = runs.map((r) => r.events.find((e) => e.type === 'credentials_refreshed'));
      expect(pairs[0]).toEqual(pairs[1]);
    } finally {
      fake.slowRefresh(0);
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
    const before = fake.refreshes('github').length;
    expect((await soon.call('github_list_repos')).isError).toBeUndefined();
    expect(fake.refreshes('github').length - before).toBe(1);
    // The expired token was never sent: the refresh came first.
    expect(
      fake.requests.some((r) => r.headers.authorization === 'Bearer github-expiring-soon'),
    ).toBe(false);
    const later = await account('github', { expires_at: Math.floor(Date.now() / 1000) + 300 });
    expect((await later.call('github_list_repos')).isError).toBeUndefined();
    expect(fake.refreshes('github').length - before).toBe(1);
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
    fake.exhaustGitHubRateLimit(1);
    expect((await call('github_list_repos')).isError).toBeUndefined();
    const last = fake.requests.filter((r) => r.provider === 'github').slice(-2);
    expect(last.map((r) => r.path)).toEqual(['/user/repos', '/user/repos']);
    fake.exhaustGitHubRateLimit(3600);
    expect(await call('github_list_repos')).toEqual({
      content:
        'GitHub is rate-limiting requests; try again in 60 min: API rate limit exceeded for user ID 1.',
      isError: true,
    });
    // GitHub's secondary limit: retried after its Retry-After; without one (GitHub asks for a
    // minute at least) reported at once.
    fake.githubSecondaryLimit(1, 1);
    expect((await call('github_list_repos')).isError).toBeUndefined();
    const requests = fake.requests.length;
    fake.githubSecondaryLimit(1);
    expect(await call('github_list_repos')).toEqual({
      content:
        'GitHub is rate-limiting requests: You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
      isError: true,
    });
    expect(fake.requests.length - requests).toBe(1);
    // A 403 without the rate-limit signs stays a permissions error.
    fake.failNext('github', 403);
    expect((await call('github_list_repos')).content).toMatch(/HTTP 403.*more scopes/);
  });

  it('retries a 429 without Retry-After once after a short wait; Slack and Notion 429s', async () => {
    const github = await account('github');
    fake.failNext('github', 429, 1);
    expect((await github.call('github_list_repos')).isError).toBeUndefined();
    fake.failNext('github', 429, 2);
    expect((await github.call('github_list_repos')).content).toBe(
      'GitHub is rate-limiting requests; try again in 1 s: injected 429.',
    );
    const slack = await account('slack');
    fake.failNext('slack', 429, 2, 1);
    expect(await slack.call('slack_list_channels', { limit: 1 })).toEqual({
      content: 'Slack is rate-limiting requests; try again in 1 s: ratelimited.',
      isError: true,
    });
    const notion = await account('notion');
    fake.failNext('notion', 429, 1, 1);
    expect((await notion.call('notion_search', { query: 'team' })).content).toMatch(/^Team notes/);
  });

  it("reports Google's and Notion's error statuses readably", async () => {
    const drive = await account('google_drive');
    fake.failNext('google_drive', 403);
    expect((await drive.call('drive_read_file', { id: 'doc-1' })).content).toBe(
      "Google Drive does not allow this with the account's permissions (HTTP 403): injected 403. The account may need more scopes.",
    );
    fake.failNext('google_drive', 429, 2);
    expect((await drive.call('drive_search', { query: 'x' })).content).toMatch(
      /^Google Drive is rate-limiting requests/,
    );
    // Google's per-user quota is a 403 too, told apart by its reason: retried once, then a
    // rate-limit text rather than a scopes one.
    fake.googleUserRateLimit('google_drive', 1);
    expect((await drive.call('drive_read_file', { id: 'doc-1' })).content).toContain('Q1:');
    fake.googleUserRateLimit('google_drive', 2);
    expect((await drive.call('drive_read_file', { id: 'doc-1' })).content).toBe(
      'Google Drive is rate-limiting requests; try again in 1 s: User Rate Limit Exceeded.',
    );
    const gmail = await account('gmail');
    expect((await gmail.call('gmail_read_message', { id: 'msg-404' })).content).toBe(
      'Gmail found nothing there (HTTP 404): Requested entity was not found.',
    );
    const notion = await account('notion');
    fake.failNext('notion', 403);
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
    expect(fake.requests.at(-1)!.path).toBe('/gmail/v1/users/me/messages/..%2Fdrafts%3Fx%3D1%23');
    expect((await gmail.call('gmail_read_message', { id: '..' })).content).toBe(
      '".." is not a valid id.',
    );
    const drive = await account('google_drive');
    await drive.call('drive_read_file', { id: 'doc-1/export' });
    expect(fake.requests.at(-1)!.path).toBe('/drive/v3/files/doc-1%2Fexport');
    const notion = await account('notion');
    await notion.call('notion_read_page', { page_id: '../../v1/users' });
    expect(fake.requests.at(-1)!.path).toBe('/v1/pages/..%2F..%2Fv1%2Fusers');
    const github = await account('github');
    const before = fake.requests.length;
    for (const repo of ['../..', 'acme/..', 'acme/widgets/../x', 'acme/wid%2fgets']) {
      const output = await github.call('github_get_issue', { repo, number: 7 });
      expect(output.content, repo).toMatch(/^Invalid arguments for github_get_issue: repo:/);
    }
    expect(fake.requests.length).toBe(before);
  });

  it('keeps a rotated pair when the run is aborted during the refresh', async () => {
    const ephemeral = createMemoryEphemeralStore();
    const entry = { access_token: 'notion-expired-abort', expires_at: 1 };
    const aborted = new AbortController();
    const first = await account('notion', entry, { ephemeral, signal: aborted.signal });
    const before = fake.refreshes('notion').length;
    fake.slowRefresh(400);
    try {
      const call = first.call('notion_search', { query: 'team' });
      while (fake.refreshes('notion').length === before) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      aborted.abort(new Error('run cancelled'));
      await expect(call).rejects.toThrow('run cancelled');
      expect(first.events).toEqual([]);
    } finally {
      fake.slowRefresh(0);
    }
    // The provider rotated the refresh token; the client retries with the old pair and gets
    // the new one from the shared cache, with no second refresh (which would be refused).
    const again = await account(
      'notion',
      { ...entry, refresh_token: first.refreshToken },
      { ephemeral },
    );
    expect((await again.call('notion_search', { query: 'team' })).content).toMatch(/^Team notes/);
    expect(fake.refreshes('notion').length - before).toBe(1);
    expect(again.events).toEqual([
      expect.objectContaining({
        type: 'credentials_refreshed',
        name: 'notion',
        refresh_token: expect.stringMatching(/^notion-refresh-/),
      }),
    ]);
  });
});
