import { setTimeout as sleep } from 'node:timers/promises';
import type { ToolContext, ToolOutput } from '@agent-backend/agent-runtime';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { OAuthToolEntry } from '@agent-backend/protocol';
import { refreshOnce, RefreshFailedError, type RefreshedTokens } from './refresh.js';
import {
  isRecord,
  rateLimit,
  readBody,
  SaasError,
  untilAborted,
  type RateLimit,
} from './saas-http.js';

/** The operator's OAuth client and the provider's endpoints, from configuration. */
export interface ProviderEndpoints {
  /** The API origin (and base path) requests are made against. */
  readonly apiBaseUrl: string;
  readonly tokenUrl: string;
  readonly clientId?: string;
  readonly clientSecret?: string;
}

/** How a provider's token endpoint is called and read. */
export interface TokenEndpointStyle {
  /** Client credentials as form fields (most) or as HTTP Basic (Notion). */
  readonly clientAuth: 'form' | 'basic';
  /** The body: form-encoded (most) or JSON (Notion). */
  readonly body: 'form' | 'json';
}

/** What a provider call asks. */
export interface SaasRequest {
  readonly method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** Appended to the API base URL. */
  readonly path: string;
  readonly query?: Record<string, string | number | undefined>;
  readonly json?: unknown;
  /** A raw body with its content type (Drive's multipart upload). */
  readonly raw?: { readonly body: string; readonly contentType: string };
  readonly headers?: Record<string, string>;
  /** The answer is text, not JSON (a Drive export). */
  readonly text?: boolean;
  /** Overrides the base URL (Drive's upload endpoint). */
  readonly baseUrl?: string;
}

/** An answer's body and whether its `Link` header names a next page (GitHub's pagination). */
export interface PagedAnswer {
  readonly body: unknown;
  readonly hasNextPage: boolean;
}

/** Settings of every account of a run. */
export interface AccountSettings {
  /** Whole deadline of one tool call, retries and refresh included. */
  readonly callTimeoutMs: number;
  /** A rate-limited call is retried once when the wait it asks for is at most this (and fits the deadline). */
  readonly maxRetryAfterMs: number;
}

/** Refresh this early before `expires_at`. */
export const EXPIRY_MARGIN_MS = 60_000;

/**
 * The token endpoint's own deadline. A refresh is not cut by the run's abort: once the provider
 * has rotated the refresh token, the new pair must reach the shared cache, or it is lost.
 */
const REFRESH_TIMEOUT_MS = 10_000;

/** `expires_at` as the client sends it: seconds since the epoch, or ms when above 10^12. */
export function expiryMs(expiresAt: number | undefined): number | undefined {
  if (expiresAt === undefined) return undefined;
  return expiresAt > 1e12 ? expiresAt : expiresAt * 1000;
}

/** The provider's own error text from its JSON error body, when it has one. */
export type ErrorText = (body: unknown) => string | undefined;

/**
 * One connected account in one run: its current token pair, refreshed when expired (or within a
 * minute of it) or when the provider answers 401 (and Slack's `token_expired`), once per call,
 * single-flight across replicas ({@link refreshOnce}); the client learns the new pair from a
 * `credentials_refreshed` event. Provider failures become {@link SaasError}s with readable
 * messages; a rate-limited call ({@link rateLimit}) is retried once within the call's deadline.
 */
export class SaasAccount {
  private accessToken: string;
  private refreshToken: string | undefined;
  private expiresAt: number | undefined;
  private readonly millisUnit: boolean;

  constructor(
    readonly provider: string,
    entry: OAuthToolEntry,
    private readonly endpoints: ProviderEndpoints,
    private readonly style: TokenEndpointStyle,
    private readonly ephemeral: EphemeralStore,
    private readonly settings: AccountSettings,
    private readonly errorText: ErrorText,
    /** Extra headers every API request carries (API versions). */
    private readonly headers: Record<string, string> = {},
  ) {
    this.accessToken = entry.access_token;
    this.refreshToken = entry.refresh_token || undefined;
    this.expiresAt = expiryMs(entry.expires_at);
    this.millisUnit = entry.expires_at !== undefined && entry.expires_at > 1e12;
  }

  /** Runs a provider call for a tool, its failure as the tool's error text. */
  async run(
    context: ToolContext,
    fn: (
      call: (request: SaasRequest) => Promise<unknown>,
      paged: (request: SaasRequest) => Promise<PagedAnswer>,
    ) => Promise<ToolOutput>,
  ): Promise<ToolOutput> {
    const deadline = AbortSignal.timeout(this.settings.callTimeoutMs);
    const signal = AbortSignal.any([context.signal, deadline]);
    const started = Date.now();
    try {
      return await fn(
        async (request) => (await this.request(request, context, signal, started)).body,
        (request) => this.request(request, context, signal, started),
      );
    } catch (error) {
      if (error instanceof SaasError) return { content: this.scrub(error.message), isError: true };
      if (deadline.aborted && !context.signal.aborted) {
        return {
          content: `${this.label()} did not answer within ${this.settings.callTimeoutMs / 1000} s.`,
          isError: true,
        };
      }
      throw error;
    }
  }

  private label(): string {
    return LABELS[this.provider] ?? this.provider;
  }

  /** Never a token in a text the model or the client sees. */
  private scrub(text: string): string {
    let out = text;
    for (const secret of [this.accessToken, this.refreshToken, this.endpoints.clientSecret]) {
      if (secret) out = out.split(secret).join('[redacted]');
    }
    return out;
  }

  private async request(
    request: SaasRequest,
    context: ToolContext,
    signal: AbortSignal,
    started: number,
  ): Promise<PagedAnswer> {
    if (this.expiresAt !== undefined && this.expiresAt - EXPIRY_MARGIN_MS <= Date.now()) {
      await this.refresh(context, signal, 'expired');
    }
    let refreshed = false;
    let retried = false;
    for (;;) {
      const response = await this.send(request, signal);
      const body = await readBody(response, request.text === true);
      const slackExpired =
        this.provider === 'slack' &&
        isRecord(body) &&
        body.ok === false &&
        (body.error === 'token_expired' || body.error === 'invalid_auth');
      if ((response.status === 401 || slackExpired) && !refreshed) {
        refreshed = true;
        await this.refresh(context, signal, 'refused');
        continue;
      }
      const limit = rateLimit(response, body);
      if (limit && !retried) {
        const wait = limit.waitMs;
        const left = this.settings.callTimeoutMs - (Date.now() - started);
        if (wait !== undefined && wait <= this.settings.maxRetryAfterMs && wait < left - 1_000) {
          retried = true;
          await sleep(wait, undefined, { signal });
          continue;
        }
      }
      if (response.ok && !(isRecord(body) && body.ok === false && this.provider === 'slack')) {
        const link = response.headers.get('link') ?? '';
        return { body, hasNextPage: /rel="?next"?/.test(link) };
      }
      throw new SaasError(this.describe(response, body, limit));
    }
  }

  private async send(request: SaasRequest, signal: AbortSignal): Promise<Response> {
    const url = new URL(
      `${(request.baseUrl ?? this.endpoints.apiBaseUrl).replace(/\/+$/, '')}${request.path}`,
    );
    for (const [key, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.accessToken}`,
      accept: 'application/json',
      ...this.headers,
      ...request.headers,
    };
    let body: string | undefined;
    if (request.json !== undefined) {
      headers['content-type'] = 'application/json; charset=utf-8';
      body = JSON.stringify(request.json);
    } else if (request.raw) {
      headers['content-type'] = request.raw.contentType;
      body = request.raw.body;
    }
    try {
      return await fetch(url, {
        method: request.method ?? 'GET',
        headers,
        ...(body !== undefined ? { body } : {}),
        signal,
        redirect: 'error',
      });
    } catch (error) {
      if (signal.aborted) throw error;
      throw new SaasError(`${this.label()} could not be reached.`);
    }
  }

  private describe(response: Response, body: unknown, limit: RateLimit | undefined): string {
    const detail = this.errorText(body)?.replace(/[.\s]+$/, '');
    const said = detail ? `: ${detail}` : '';
    const name = this.label();
    if (limit) {
      const wait = limit.waitMs;
      const when =
        wait === undefined
          ? ''
          : wait > 90_000
            ? `; try again in ${Math.ceil(wait / 60_000)} min`
            : `; try again in ${Math.max(1, Math.ceil(wait / 1000))} s`;
      return `${name} is rate-limiting requests${when}${said}.`;
    }
    if (response.status === 401 || (isRecord(body) && body.error === 'invalid_auth')) {
      return `${name} refused the account's authorization${said}. The user needs to reconnect the account.`;
    }
    if (response.status === 403) {
      return `${name} does not allow this with the account's permissions (HTTP 403)${said}. The account may need more scopes.`;
    }
    if (response.status === 404) return `${name} found nothing there (HTTP 404)${said}.`;
    if (response.status >= 500) return `${name} failed (HTTP ${response.status})${said}.`;
    if (response.ok) return `${name} refused the request${said}.`;
    return `${name} refused the request (HTTP ${response.status})${said}.`;
  }

  private async refresh(context: ToolContext, signal: AbortSignal, why: 'expired' | 'refused') {
    const name = this.label();
    const refreshToken = this.refreshToken;
    if (!refreshToken || !this.endpoints.clientId || !this.endpoints.clientSecret) {
      throw new SaasError(
        why === 'expired'
          ? `The ${name} access token has expired and cannot be renewed here (${refreshToken ? 'the service has no OAuth client for it' : 'no refresh token was given'}). The user needs to reconnect the account.`
          : `${name} refused the access token, and it cannot be renewed here (${refreshToken ? 'the service has no OAuth client for it' : 'no refresh token was given'}). The user needs to reconnect the account.`,
      );
    }
    let tokens: RefreshedTokens;
    try {
      // The refresh runs on its own deadline, not the run's: aborting the run must not drop a
      // pair the provider has already rotated to. The finished pair is sealed into the shared
      // cache by refreshOnce, where the client's next run with the old refresh token finds it.
      // (The run's signal only stops waiting for another caller's refresh.)
      const pending = refreshOnce(
        this.ephemeral,
        this.provider,
        refreshToken,
        () => this.callTokenEndpoint(refreshToken, AbortSignal.timeout(REFRESH_TIMEOUT_MS)),
        signal,
      );
      tokens = await untilAborted(pending, signal);
    } catch (error) {
      if (error instanceof RefreshFailedError) {
        throw new SaasError(
          `The ${name} authorization could not be renewed (${error.message}). The user needs to reconnect the account.`,
        );
      }
      throw error;
    }
    this.accessToken = tokens.accessToken;
    if (tokens.refreshToken) this.refreshToken = tokens.refreshToken;
    this.expiresAt = tokens.expiresAt;
    context.emit({
      type: 'credentials_refreshed',
      name: this.provider,
      access_token: tokens.accessToken,
      ...(tokens.refreshToken ? { refresh_token: tokens.refreshToken } : {}),
      ...(tokens.expiresAt !== undefined
        ? {
            expires_at: this.millisUnit ? tokens.expiresAt : Math.floor(tokens.expiresAt / 1000),
          }
        : {}),
    });
  }

  private async callTokenEndpoint(
    refreshToken: string,
    signal: AbortSignal,
  ): Promise<RefreshedTokens> {
    const { clientId, clientSecret, tokenUrl } = this.endpoints;
    const fields: Record<string, string> = {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      ...(this.style.clientAuth === 'form'
        ? { client_id: clientId!, client_secret: clientSecret! }
        : {}),
    };
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.style.clientAuth === 'basic') {
      headers.authorization = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
    }
    let body: string;
    if (this.style.body === 'json') {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(fields);
    } else {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(fields).toString();
    }
    let response: Response;
    try {
      response = await fetch(tokenUrl, {
        method: 'POST',
        headers,
        body,
        signal,
        redirect: 'error',
      });
    } catch {
      if (signal.aborted) throw new RefreshFailedError('the token endpoint did not answer in time');
      throw new RefreshFailedError('the token endpoint could not be reached');
    }
    // GitHub answers a refused refresh with HTTP 200 and `{ error: "bad_refresh_token" }`,
    // Slack with 200 and `ok: false`: a 200 without an access token is a refusal too.
    const answer = (await readBody(response, false)) as Record<string, unknown> | undefined;
    const access =
      answer && typeof answer.access_token === 'string' ? answer.access_token : undefined;
    if (!response.ok || !access || (isRecord(answer) && answer.ok === false)) {
      const code =
        isRecord(answer) && typeof answer.error === 'string'
          ? answer.error
          : `HTTP ${response.status}`;
      throw new RefreshFailedError(`the token endpoint answered ${code}`);
    }
    const expiresIn = typeof answer!.expires_in === 'number' ? answer!.expires_in : undefined;
    return {
      accessToken: access,
      ...(typeof answer!.refresh_token === 'string' ? { refreshToken: answer!.refresh_token } : {}),
      ...(expiresIn !== undefined ? { expiresAt: Date.now() + expiresIn * 1000 } : {}),
    };
  }
}

const LABELS: Record<string, string> = {
  github: 'GitHub',
  gmail: 'Gmail',
  google_drive: 'Google Drive',
  slack: 'Slack',
  notion: 'Notion',
};
