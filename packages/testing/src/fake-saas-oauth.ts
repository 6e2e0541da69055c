import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from './fake-http.js';
import type { FakeSaasProvider } from './fake-saas-data.js';

export const FAKE_OAUTH_CLIENT = { id: 'fake-client-id', secret: 'fake-client-secret-value' };

/** Each provider's token endpoint (`prefix path`); Gmail and Drive share Google's. */
const TOKEN_PATHS: Record<string, FakeSaasProvider | 'google'> = {
  'github /login/oauth/access_token': 'github',
  'google /token': 'google',
  'slack /api/oauth.v2.access': 'slack',
  'notion /v1/oauth/token': 'notion',
};

/**
 * The providers' OAuth token endpoints and the tokens they issued: the refresh grant with the
 * client's credentials (Basic or in the body), rotating refresh tokens (a used one is dead),
 * except Google's, which stays.
 */
export class FakeSaasTokens {
  private readonly access = new Map<string, FakeSaasProvider>();
  private readonly refresh = new Map<string, FakeSaasProvider>();
  private issued = 0;
  /** How long the token endpoint waits before it answers. */
  delayMs = 0;

  /** Makes `token` a valid access token of `provider` (and `refresh` its refresh token). */
  grant(provider: FakeSaasProvider, token: string, refresh?: string): void {
    this.access.set(token, provider);
    if (refresh) this.refresh.set(refresh, provider);
  }

  /** Whether `token` is an access token of `provider`. */
  authorizes(token: string, provider: FakeSaasProvider): boolean {
    return this.access.get(token) === provider;
  }

  /** Answers a token-endpoint request; false when `prefix path` is not a token endpoint. */
  async answer(
    prefix: string | undefined,
    path: string,
    req: IncomingMessage,
    res: ServerResponse,
    body: string,
  ): Promise<boolean> {
    const tokenFor = TOKEN_PATHS[`${prefix} ${path}`];
    if (!tokenFor) return false;
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const fields: Record<string, string> =
      tokenFor === 'notion'
        ? (JSON.parse(body || '{}') as Record<string, string>)
        : Object.fromEntries(new URLSearchParams(body));
    const basic = req.headers.authorization?.startsWith('Basic ')
      ? Buffer.from(req.headers.authorization.slice(6), 'base64').toString().split(':')
      : [fields.client_id, fields.client_secret];
    if (basic[0] !== FAKE_OAUTH_CLIENT.id || basic[1] !== FAKE_OAUTH_CLIENT.secret) {
      return sendJson(res, 401, { error: 'invalid_client' });
    }
    const owner = this.refresh.get(fields.refresh_token ?? '');
    const expected = tokenFor === 'google' ? ['gmail', 'google_drive'] : [tokenFor];
    if (fields.grant_type !== 'refresh_token' || !owner || !expected.includes(owner)) {
      // GitHub answers its token endpoint's errors with 200 and an `error` field; Slack with
      // 200 and `ok: false`; Google and Notion with 400 `invalid_grant`.
      if (tokenFor === 'github') {
        return sendJson(res, 200, {
          error: 'bad_refresh_token',
          error_description: 'The refresh token passed is incorrect or expired.',
          error_uri:
            'https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors',
        });
      }
      return tokenFor === 'slack'
        ? sendJson(res, 200, { ok: false, error: 'invalid_refresh_token' })
        : sendJson(res, 400, {
            error: 'invalid_grant',
            error_description: 'The refresh token is invalid or was already used.',
          });
    }
    this.issued += 1;
    const newAccess = `${owner}-access-${this.issued}`;
    this.access.set(newAccess, owner);
    const answer: Record<string, unknown> = {
      access_token: newAccess,
      token_type: 'Bearer',
      expires_in: 3600,
    };
    if (tokenFor !== 'google') {
      // Rotation: the used refresh token dies, a new one is issued.
      this.refresh.delete(fields.refresh_token!);
      const newRefresh = `${owner}-refresh-${this.issued}`;
      this.refresh.set(newRefresh, owner);
      answer.refresh_token = newRefresh;
    }
    return sendJson(res, 200, tokenFor === 'slack' ? { ok: true, ...answer } : answer);
  }
}
