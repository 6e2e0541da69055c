import type { AgentTool, ToolSource } from '@agent-backend/agent-runtime';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { OAuthProvider } from '@agent-backend/protocol';
import {
  SaasAccount,
  type AccountSettings,
  type ErrorText,
  type ProviderEndpoints,
  type TokenEndpointStyle,
} from './account.js';
import { GITHUB_HEADERS, githubErrorText, githubTools } from './providers/github.js';
import { driveTools, gmailTools, googleErrorText } from './providers/google.js';
import { NOTION_HEADERS, notionErrorText, notionTools } from './providers/notion.js';
import { slackErrorText, slackTools } from './providers/slack.js';

/** Each provider's endpoints and the operator's OAuth clients, from configuration. */
export type SaasEndpoints = Record<OAuthProvider, ProviderEndpoints>;

interface ProviderDefinition {
  readonly style: TokenEndpointStyle;
  readonly errorText: ErrorText;
  readonly headers?: Record<string, string>;
  readonly tools: (account: SaasAccount) => AgentTool[];
}

const FORM: TokenEndpointStyle = { clientAuth: 'form', body: 'form' };

/** What each provider contributes (docs/saas-tools.md). */
const PROVIDERS: Record<OAuthProvider, ProviderDefinition> = {
  github: { style: FORM, errorText: githubErrorText, headers: GITHUB_HEADERS, tools: githubTools },
  gmail: { style: FORM, errorText: googleErrorText, tools: gmailTools },
  google_drive: { style: FORM, errorText: googleErrorText, tools: driveTools },
  slack: { style: FORM, errorText: slackErrorText, tools: slackTools },
  notion: {
    style: { clientAuth: 'basic', body: 'json' },
    errorText: notionErrorText,
    headers: NOTION_HEADERS,
    tools: notionTools,
  },
};

/**
 * The tools of the run's connected accounts (spec 2.3 `oauth` entries): each entry's provider
 * contributes its tools, bound to that account's tokens for this run.
 */
export function saasToolSource(options: {
  readonly ephemeral: EphemeralStore;
  readonly endpoints: SaasEndpoints;
  readonly settings: AccountSettings;
}): ToolSource {
  return async (run) => {
    const tools: AgentTool[] = [];
    for (const entry of run.request.capabilities.oauthTools) {
      const provider = entry.name as OAuthProvider;
      const definition = PROVIDERS[provider];
      if (!definition) continue; // the request schema admits only known providers
      const account = new SaasAccount(
        provider,
        entry,
        options.endpoints[provider],
        definition.style,
        options.ephemeral,
        options.settings,
        definition.errorText,
        definition.headers,
      );
      // Reads may run again after a takeover; writes are reported interrupted instead.
      tools.push(
        ...definition
          .tools(account)
          .map((tool) => (tool.writes ? tool : { ...tool, repeatSafe: true })),
      );
    }
    return tools;
  };
}
