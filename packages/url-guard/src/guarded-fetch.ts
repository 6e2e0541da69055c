import type * as Http from 'node:http';
import type { Agent as HttpAgent, IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { RedirectRefusedError } from './errors.js';
import { FORBIDDEN_REQUEST_HEADERS } from './forbidden-headers.js';
import { toWebResponse } from './web-response.js';
import type { UrlGuard } from './url-guard.js';

// Node's http as its CommonJS object, not `import ... from 'node:http'`: an ES import of it reads
// every export, and its lazy `WebSocket`, `CloseEvent` and `MessageEvent` load Node's bundled
// undici, ~5 MB resident in a process that never uses fetch (docs/BENCHMARKS.md, "Footprint").
// `createRequire`, not `process.getBuiltinModule`, which Node 22 has only since 22.3.
const http = createRequire(import.meta.url)('node:http') as typeof Http;

/** The fetch signature libraries accept as a custom `fetch` (MCP SDK, OpenAI SDK, ...). */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface GuardedFetchOptions {
  /** Reuse connections between requests (each connection was vetted when it was opened). @default true */
  keepAlive?: boolean;
  /** Redirects followed for `redirect: 'follow'`; each hop is vetted again. @default 5 */
  maxRedirects?: number;
  /** Aborts every request made through this fetch (a connection's lifetime, a deadline). */
  signal?: AbortSignal;
  /** Largest response body (after decompression) before reading it fails. @default Infinity */
  maxResponseBytes?: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Dropped when a redirect leaves the origin, as the Fetch standard does for `Authorization`. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

/**
 * A `fetch` that only talks to addresses the guard allows: built on `node:http`/`node:https` with
 * the guard's `lookup` for the request's URL (`UrlGuard.forUrl`), so the address vetted is the
 * address connected to, plus a check of the socket's remote address before the request is
 * written. Redirects are followed hop by hop (each target checked again, credentials dropped
 * across origins), returned as they are for `redirect: 'manual'`, refused for `redirect: 'error'`
 * with a {@link RedirectRefusedError} before the target is contacted. No proxy environment
 * variables are read. Response bodies are web streams read as they arrive (SSE, model streams).
 *
 * `lastError` keeps the root cause of the last failed request, because libraries that take a
 * custom fetch (the MCP SDK's SSE transport, for one) often replace it with a message of their own.
 */
export class GuardedFetch {
  readonly fetch: FetchLike;
  #lastError: Error | undefined;
  readonly #http: HttpAgent;
  readonly #https: HttpsAgent;

  constructor(
    private readonly guard: UrlGuard,
    private readonly options: GuardedFetchOptions = {},
  ) {
    const keepAlive = options.keepAlive ?? true;
    // No `lookup` on the agents: agent options override request options, and the lookup is the
    // request's own (an allowed origin's checks are not the guard's defaults). A pooled socket
    // is only reused for the same host, port and scheme, i.e. the origin it was vetted for.
    this.#http = new http.Agent({ keepAlive });
    this.#https = new HttpsAgent({ keepAlive });
    this.fetch = (input, init) =>
      this.#fetch(...fromRequest(input, init)).catch((error: unknown) => {
        if (error instanceof Error) this.#lastError = error;
        throw error;
      });
  }

  /** The error the most recent failed request failed with, before any library wrapped it. */
  get lastError(): Error | undefined {
    return this.#lastError;
  }

  /** Closes pooled connections; requests in flight are aborted. */
  close(): void {
    this.#http.destroy();
    this.#https.destroy();
  }

  async #fetch(input: string | URL, init: RequestInit = {}): Promise<Response> {
    let url = this.guard.check(input);
    let method = (init.method ?? 'GET').toUpperCase();
    const headers = new Headers(init.headers);
    let body = await encodeBody(init.body, headers);
    const signal = anySignal(init.signal ?? undefined, this.options.signal);
    const maxRedirects = this.options.maxRedirects ?? 5;

    for (let hop = 0; ; hop++) {
      signal?.throwIfAborted();
      const res = await this.#send(url, method, headers, body, signal);
      const location = res.headers.location;
      const mode = init.redirect ?? 'follow';
      if (!REDIRECTS.has(res.statusCode ?? 0) || !location || mode === 'manual')
        return toWebResponse(res, url, method, hop > 0, this.options.maxResponseBytes);
      res.resume();
      if (mode === 'error')
        throw new RedirectRefusedError(res.statusCode!, originOf(location, url));
      if (hop >= maxRedirects) throw new TypeError(`more than ${maxRedirects} redirects`);
      const next = this.guard.check(new URL(location, url));
      const status = res.statusCode ?? 0;
      if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
        if (method !== 'HEAD') method = 'GET';
        body = undefined;
        for (const name of ['content-type', 'content-length', 'content-encoding'])
          headers.delete(name);
      } else if (body instanceof Readable) {
        throw new TypeError('cannot replay a streamed request body on redirect');
      }
      if (next.origin !== url.origin) for (const name of CREDENTIAL_HEADERS) headers.delete(name);
      url = next;
    }
  }

  #send(
    url: URL,
    method: string,
    headers: Headers,
    body: Buffer | Readable | undefined,
    signal: AbortSignal | undefined,
  ): Promise<IncomingMessage> {
    const https = url.protocol === 'https:';
    const checks = this.guard.forUrl(url);
    const outgoing: Record<string, string> = { 'user-agent': 'agent-backend' };
    for (const [name, value] of headers)
      if (!FORBIDDEN_REQUEST_HEADERS.has(name)) outgoing[name] = value;
    if (Buffer.isBuffer(body)) outgoing['content-length'] = String(body.length);
    return new Promise((resolve, reject) => {
      const req = (https ? httpsRequest : http.request)(
        {
          protocol: url.protocol,
          hostname: url.hostname.replace(/^\[|\]$/g, ''),
          port: url.port || (https ? 443 : 80),
          path: `${url.pathname}${url.search}`,
          method,
          headers: outgoing,
          agent: https ? this.#https : this.#http,
          lookup: checks.lookup,
          signal,
        },
        resolve,
      );
      req.once('error', reject);
      req.once('socket', (socket: Socket) => {
        const verify = () => {
          try {
            if (socket.remoteAddress) checks.checkAddress(socket.remoteAddress, url.hostname);
          } catch (error) {
            req.destroy(error as Error);
          }
        };
        if (socket.connecting) socket.once('connect', verify);
        else verify();
      });
      if (body instanceof Readable) body.pipe(req);
      else req.end(body);
    });
  }
}

/** The URL and init of a `Request` input (the OpenAI SDK's `Fetch` type allows one). */
function fromRequest(
  input: string | URL | Request,
  init: RequestInit | undefined,
): [string | URL, RequestInit | undefined] {
  if (!(input instanceof Request)) return [input, init];
  return [
    input.url,
    {
      method: input.method,
      headers: input.headers,
      redirect: input.redirect,
      signal: input.signal,
      ...(input.body ? { body: input.body } : {}),
      ...init,
    },
  ];
}

/** Request bodies as bytes (or a stream), with the content type `fetch` would have set. */
async function encodeBody(
  body: RequestInit['body'],
  headers: Headers,
): Promise<Buffer | Readable | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') {
    if (!headers.has('content-type')) headers.set('content-type', 'text/plain;charset=UTF-8');
    return Buffer.from(body, 'utf8');
  }
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.length);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  // Blob, FormData, URLSearchParams, ReadableStream: let the platform encode them.
  const encoded = new Response(body as ConstructorParameters<typeof Response>[0]);
  const type = encoded.headers.get('content-type');
  if (type && !headers.has('content-type')) headers.set('content-type', type);
  if (body instanceof ReadableStream) return Readable.fromWeb(encoded.body! as never);
  return Buffer.from(await encoded.arrayBuffer());
}

function anySignal(...signals: (AbortSignal | undefined)[]): AbortSignal | undefined {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  return present.length <= 1 ? present[0] : AbortSignal.any(present);
}

function originOf(location: string, base: URL): string {
  try {
    return new URL(location, base).origin;
  } catch {
    return 'an invalid URL';
  }
}
