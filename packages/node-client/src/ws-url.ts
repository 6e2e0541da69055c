import { WS_PATHS, type WsClientKind } from '@agent-backend/protocol';

/**
 * The gateway URL of one kind of client: `base` (`ws://host:8000`, `wss://host`, or the
 * `http(s)` address of the same host, mapped to `ws(s)`) with the kind's path appended to any
 * path the base has (a gateway behind a proxy prefix), and the given query parameters.
 */
export function gatewayUrl(
  base: string,
  kind: WsClientKind,
  query: Readonly<Record<string, string>>,
): URL {
  const url = new URL(base);
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  else if (url.protocol !== 'ws:' && url.protocol !== 'wss:')
    throw new TypeError(`gateway url must be ws, wss, http or https, not ${url.protocol}`);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${WS_PATHS[kind]}`;
  url.search = '';
  url.hash = '';
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  return url;
}

/** The URL as text with any `token` parameter masked, for events and log lines. */
export function redactUrl(url: URL): string {
  if (!url.searchParams.has('token')) return url.href;
  const copy = new URL(url.href);
  copy.searchParams.set('token', 'REDACTED');
  return copy.href;
}

/** Ids the gateway accepts (docs/gateway.md: 4002 beyond 128 characters); fails at construction instead. */
export function checkId(name: string, value: string): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > 128)
    throw new TypeError(`${name} must be a string of 1 to 128 characters`);
}
