import { afterAll, beforeAll } from 'vitest';
import type { AgentEvent, OAuthToolEntry } from '@agent-backend/protocol';
import type { AgentTool, RunInfo, ToolContext } from '@agent-backend/agent-runtime';
import { createMemoryEphemeralStore } from '@agent-backend/ephemeral';
import { startFakeSaas, type FakeSaas, type FakeSaasProvider } from '@agent-backend/testing';
import { saasToolSource, type SaasEndpoints } from '../source.js';

/**
 * The fakes of the five providers for a test file (started before its tests, closed after), the
 * endpoints that point at them, and `account(provider)`: the tools of one run with one account
 * of that provider, a call helper, and the events its calls emit.
 */
export function useSaasFakes() {
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
    const token = `${provider}-granted-token-${counter}`;
    const refreshToken = `${provider}-granted-refresh-${counter}`;
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
  return {
    get fake(): FakeSaas {
      return fake;
    },
    get endpoints(): SaasEndpoints {
      return endpoints;
    },
    account,
  };
}
