/** The platform's public API origins, per channel (DESIGN.md, `LARK_API_BASE_URL`). */
export const LARK_ORIGINS = {
  feishu: 'https://open.feishu.cn',
  lark: 'https://open.larksuite.com',
} as const;
export type LarkPlatform = keyof typeof LARK_ORIGINS;

/** How a message's receiver is named (the platform's `receive_id_type`). */
export const RECEIVE_ID_TYPES = ['chat_id', 'open_id', 'user_id', 'union_id', 'email'] as const;
export type ReceiveIdType = (typeof RECEIVE_ID_TYPES)[number];

export interface LarkClientOptions {
  /** API origin, e.g. `https://open.feishu.cn` (no path). */
  baseUrl: string;
  appId: string;
  appSecret: string;
  /** Per-request deadline. @default 10_000 */
  timeoutMs?: number;
  /** @default Date.now */
  now?: () => number;
}

/** A failed call to the platform: HTTP status, and the platform's own `code` and `msg`. */
export class LarkApiError extends Error {
  constructor(
    readonly operation: string,
    readonly status: number,
    readonly code: number | undefined,
    message: string,
  ) {
    super(`${operation} failed: ${message}`);
    this.name = 'LarkApiError';
  }
}

/** Platform codes meaning the tenant access token is invalid or expired. */
const TOKEN_INVALID = new Set([99991663, 99991664, 99991661]);
/** Refresh this long before the token's announced expiry. */
const EXPIRY_MARGIN_MS = 5 * 60_000;

/**
 * The slice of the open platform API the service uses: a tenant access token (fetched once,
 * cached until shortly before it expires, shared by concurrent callers, refreshed once when the
 * platform says it is invalid) and text messages (reply to a message, send to a chat).
 */
export class LarkClient {
  private token: { value: string; expiresAt: number } | undefined;
  private pendingToken: Promise<string> | undefined;
  private readonly now: () => number;

  constructor(private readonly options: LarkClientOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Replies in the thread of `messageId` with a text message; returns the new message id. With
   * `uuid` (at most 50 characters), the platform replies at most once per uuid within an hour
   * and answers a repeated request with success, so a retried job cannot reply twice.
   */
  async replyText(
    messageId: string,
    text: string,
    options: { uuid?: string } = {},
  ): Promise<string | undefined> {
    const path = `/open-apis/im/v1/messages/${encodeURIComponent(messageId)}/reply`;
    const data = await this.authorized('reply', path, {
      msg_type: 'text',
      content: JSON.stringify({ text }),
      ...(options.uuid === undefined ? {} : { uuid: options.uuid }),
    });
    return typeof data?.message_id === 'string' ? data.message_id : undefined;
  }

  /** Sends a text message to a chat (`chat_id`) or a user (`open_id`, `user_id`, `email`). */
  async sendText(receiveIdType: ReceiveIdType, receiveId: string, text: string): Promise<void> {
    const path = `/open-apis/im/v1/messages?receive_id_type=${receiveIdType}`;
    await this.authorized('send', path, {
      receive_id: receiveId,
      msg_type: 'text',
      content: JSON.stringify({ text }),
    });
  }

  /** The tenant access token, from cache when still valid. */
  async tenantToken(): Promise<string> {
    if (this.token && this.token.expiresAt > this.now()) return this.token.value;
    this.pendingToken ??= this.fetchToken().finally(() => {
      this.pendingToken = undefined;
    });
    return this.pendingToken;
  }

  private async fetchToken(): Promise<string> {
    const body = await this.call(
      'tenant token',
      '/open-apis/auth/v3/tenant_access_token/internal',
      {
        app_id: this.options.appId,
        app_secret: this.options.appSecret,
      },
    );
    const value = body.tenant_access_token;
    const expire = typeof body.expire === 'number' ? body.expire : 7200;
    if (typeof value !== 'string' || value === '') {
      throw new LarkApiError(
        'tenant token',
        200,
        undefined,
        'no tenant_access_token in the answer',
      );
    }
    this.token = { value, expiresAt: this.now() + Math.max(0, expire * 1000 - EXPIRY_MARGIN_MS) };
    return value;
  }

  private async authorized(
    operation: string,
    path: string,
    payload: unknown,
  ): Promise<Record<string, unknown> | undefined> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.tenantToken();
      try {
        const body = await this.call(operation, path, payload, token);
        return isObject(body.data) ? body.data : undefined;
      } catch (error) {
        if (
          attempt === 0 &&
          error instanceof LarkApiError &&
          error.code !== undefined &&
          TOKEN_INVALID.has(error.code)
        ) {
          this.token = undefined;
          continue;
        }
        throw error;
      }
    }
  }

  private async call(
    operation: string,
    path: string,
    payload: unknown,
    token?: string,
  ): Promise<Record<string, unknown>> {
    let response: Response;
    try {
      response = await fetch(new URL(path, this.options.baseUrl), {
        method: 'POST',
        headers: {
          'content-type': 'application/json; charset=utf-8',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
    } catch (error) {
      throw new LarkApiError(
        operation,
        0,
        undefined,
        `platform unreachable (${(error as Error).message})`,
      );
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      throw new LarkApiError(
        operation,
        response.status,
        undefined,
        `HTTP ${response.status} without a JSON body`,
      );
    }
    const code = isObject(body) && typeof body.code === 'number' ? body.code : undefined;
    if (!response.ok || code !== 0 || !isObject(body)) {
      const msg =
        isObject(body) && typeof body.msg === 'string' ? body.msg : `HTTP ${response.status}`;
      throw new LarkApiError(operation, response.status, code, `${msg} (code ${code ?? 'none'})`);
    }
    return body;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
