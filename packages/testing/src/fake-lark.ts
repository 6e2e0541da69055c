import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeLarkMessage {
  /** `reply` to a message, or `send` to a receive id. */
  kind: 'reply' | 'send';
  /** The message replied to, or the receive id. */
  target: string;
  receiveIdType?: string;
  msgType: string;
  /** `content` parsed (the platform takes a JSON string). */
  content: Record<string, unknown>;
  token: string;
  /** The request's `uuid` (the platform's dedup key), when it had one. */
  uuid?: string;
}

/**
 * A stand-in for the Lark/Feishu open platform over HTTP, speaking its wire format for the calls
 * the service makes: `POST /open-apis/auth/v3/tenant_access_token/internal`,
 * `POST /open-apis/im/v1/messages/:message_id/reply`, `POST /open-apis/im/v1/messages`. It
 * checks app credentials and bearer tokens like the platform (codes 10014, 99991663), sends at
 * most one message per `uuid` (the platform's request dedup: a repeated request succeeds with
 * the first one's message and sends nothing) and records every message.
 */
export interface FakeLark {
  readonly url: string;
  readonly messages: FakeLarkMessage[];
  /** How many tenant tokens were issued. */
  tokensIssued: number;
  /** Invalidates every token issued so far (the next API call gets code 99991663). */
  revokeTokens(): void;
  /** Requests that repeated an earlier request's `uuid` (answered, nothing sent). */
  readonly deduplicated: number;
  /**
   * Withholds the answers to message requests (the messages are sent and recorded) until the
   * returned function is called: a caller that dies meanwhile never learns its message went out.
   */
  holdAnswers(): () => void;
  close(): Promise<void>;
}

export async function startFakeLark(app: {
  appId: string;
  appSecret: string;
  tokenTtlSeconds?: number;
}): Promise<FakeLark> {
  const valid = new Set<string>();
  const messages: FakeLarkMessage[] = [];
  const state = { tokensIssued: 0, deduplicated: 0 };
  /** Message id sent per `uuid`. */
  const sentByUuid = new Map<string, string>();
  let held: Promise<void> | undefined;
  const server: Server = createServer((req, res) => {
    void readJson(req).then((body) => {
      const send = (status: number, payload: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
      };
      const url = new URL(req.url ?? '/', 'http://fake');
      if (req.method !== 'POST') return send(405, { code: 405, msg: 'method not allowed' });
      if (url.pathname === '/open-apis/auth/v3/tenant_access_token/internal') {
        if (body?.app_id !== app.appId || body?.app_secret !== app.appSecret) {
          return send(200, { code: 10014, msg: 'app secret invalid' });
        }
        const token = `t-${randomUUID()}`;
        valid.add(token);
        state.tokensIssued++;
        return send(200, {
          code: 0,
          msg: 'ok',
          tenant_access_token: token,
          expire: app.tokenTtlSeconds ?? 7200,
        });
      }
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!token || !valid.has(token))
        return send(400, { code: 99991663, msg: 'Invalid access token for authorization.' });
      let content: Record<string, unknown>;
      try {
        content = JSON.parse(String(body?.content)) as Record<string, unknown>;
      } catch {
        return send(400, { code: 230001, msg: 'invalid message content' });
      }
      const reply = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/reply$/.exec(url.pathname);
      if (!reply && url.pathname !== '/open-apis/im/v1/messages')
        return send(404, { code: 404, msg: 'not found' });
      const uuid = typeof body?.uuid === 'string' ? body.uuid : undefined;
      const answer = (message_id: string) => {
        const ok = () => send(200, { code: 0, msg: 'success', data: { message_id } });
        if (held) void held.then(ok);
        else ok();
      };
      const earlier = uuid === undefined ? undefined : sentByUuid.get(uuid);
      if (earlier) {
        state.deduplicated++;
        return answer(earlier);
      }
      const message_id = `om_${randomUUID().replace(/-/g, '')}`;
      if (uuid !== undefined) sentByUuid.set(uuid, message_id);
      messages.push({
        kind: reply ? 'reply' : 'send',
        target: reply ? decodeURIComponent(reply[1]!) : String(body?.receive_id),
        ...(reply ? {} : { receiveIdType: url.searchParams.get('receive_id_type') ?? '' }),
        msgType: String(body?.msg_type),
        content,
        token,
        ...(uuid === undefined ? {} : { uuid }),
      });
      return answer(message_id);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    messages,
    get tokensIssued() {
      return state.tokensIssued;
    },
    set tokensIssued(value: number) {
      state.tokensIssued = value;
    },
    revokeTokens: () => valid.clear(),
    get deduplicated() {
      return state.deduplicated;
    },
    holdAnswers() {
      let release!: () => void;
      held = new Promise<void>((resolve) => (release = resolve));
      return () => {
        held = undefined;
        release();
      };
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  let raw = '';
  for await (const chunk of req) raw += String(chunk);
  try {
    return JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
