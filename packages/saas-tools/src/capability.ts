import type { Capability } from '@agent-backend/agent-runtime';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import { saasToolSource } from './source.js';

export interface SaasToolsDeps {
  /** Where tokens are refreshed once across replicas. */
  readonly ephemeral: EphemeralStore;
}

/** The configuration keys the capability reads (a subset of the service config). */
export interface SaasToolsConfig {
  readonly GITHUB_API_BASE_URL: string;
  readonly GITHUB_OAUTH_TOKEN_URL: string;
  readonly GITHUB_CLIENT_ID?: string | undefined;
  readonly GITHUB_CLIENT_SECRET?: string | undefined;
  readonly GMAIL_API_BASE_URL: string;
  readonly GOOGLE_DRIVE_API_BASE_URL: string;
  readonly GOOGLE_OAUTH_TOKEN_URL: string;
  readonly GOOGLE_CLIENT_ID?: string | undefined;
  readonly GOOGLE_CLIENT_SECRET?: string | undefined;
  readonly SLACK_API_BASE_URL: string;
  readonly SLACK_OAUTH_TOKEN_URL: string;
  readonly SLACK_CLIENT_ID?: string | undefined;
  readonly SLACK_CLIENT_SECRET?: string | undefined;
  readonly NOTION_API_BASE_URL: string;
  readonly NOTION_OAUTH_TOKEN_URL: string;
  readonly NOTION_CLIENT_ID?: string | undefined;
  readonly NOTION_CLIENT_SECRET?: string | undefined;
  readonly SAAS_CALL_TIMEOUT_MS: number;
  readonly SAAS_MAX_RETRY_AFTER_MS: number;
}

/**
 * Connected SaaS accounts (docs/saas-tools.md): the tools of a run's `oauth` entries, on the
 * configured API and token endpoints.
 */
export function saasToolsCapability(deps: SaasToolsDeps, settings: SaasToolsConfig): Capability {
  const google = {
    tokenUrl: settings.GOOGLE_OAUTH_TOKEN_URL,
    clientId: settings.GOOGLE_CLIENT_ID,
    clientSecret: settings.GOOGLE_CLIENT_SECRET,
  };
  return {
    source: saasToolSource({
      ephemeral: deps.ephemeral,
      endpoints: {
        github: {
          apiBaseUrl: settings.GITHUB_API_BASE_URL,
          tokenUrl: settings.GITHUB_OAUTH_TOKEN_URL,
          clientId: settings.GITHUB_CLIENT_ID,
          clientSecret: settings.GITHUB_CLIENT_SECRET,
        },
        gmail: { apiBaseUrl: settings.GMAIL_API_BASE_URL, ...google },
        google_drive: { apiBaseUrl: settings.GOOGLE_DRIVE_API_BASE_URL, ...google },
        slack: {
          apiBaseUrl: settings.SLACK_API_BASE_URL,
          tokenUrl: settings.SLACK_OAUTH_TOKEN_URL,
          clientId: settings.SLACK_CLIENT_ID,
          clientSecret: settings.SLACK_CLIENT_SECRET,
        },
        notion: {
          apiBaseUrl: settings.NOTION_API_BASE_URL,
          tokenUrl: settings.NOTION_OAUTH_TOKEN_URL,
          clientId: settings.NOTION_CLIENT_ID,
          clientSecret: settings.NOTION_CLIENT_SECRET,
        },
      },
      settings: {
        callTimeoutMs: settings.SAAS_CALL_TIMEOUT_MS,
        maxRetryAfterMs: settings.SAAS_MAX_RETRY_AFTER_MS,
      },
    }),
  };
}
