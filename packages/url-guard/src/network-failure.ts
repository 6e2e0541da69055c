import { isUrlRefusedError, RedirectRefusedError, type UrlRefusedError } from './errors.js';

/**
 * What went wrong on the way to a server, in the classes a user acts on differently:
 * - `refused`: the guard's policy refused the URL, an address or the connected socket;
 * - `redirect`: the server redirected and redirects were not to be followed;
 * - `dns`: the host name does not resolve (or the resolver failed);
 * - `connect`: no connection (refused, reset, no route, timed out, closed before an answer);
 * - `tls`: the TLS handshake failed (certificate, protocol).
 */
export type OutboundFailure =
  | { readonly kind: 'refused'; readonly refusal: UrlRefusedError }
  | { readonly kind: 'redirect'; readonly redirect: RedirectRefusedError }
  | {
      readonly kind: 'dns' | 'connect' | 'tls';
      readonly code: string;
      readonly description: string;
    };

const DNS: Record<string, string> = {
  ENOTFOUND: 'the host name does not resolve',
  EAI_NONAME: 'the host name does not resolve',
  EAI_FAIL: 'the host name could not be resolved (DNS failure)',
  EAI_AGAIN: 'the host name could not be resolved (DNS failure)',
};

const CONNECT: Record<string, string> = {
  ECONNREFUSED: 'the connection was refused (nothing listens on that port?)',
  ECONNRESET: 'the connection was reset',
  EPIPE: 'the connection was closed while sending',
  EHOSTUNREACH: 'there is no route to the host',
  ENETUNREACH: 'the network is unreachable',
  ETIMEDOUT: 'the connection attempt timed out',
  UND_ERR_SOCKET: 'the connection was closed unexpectedly',
  UND_ERR_CONNECT_TIMEOUT: 'the connection attempt timed out',
};

const TLS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'the certificate chain ends in a self-signed certificate',
  CERT_HAS_EXPIRED: 'the certificate has expired',
  CERT_NOT_YET_VALID: 'the certificate is not valid yet',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the certificate does not cover this host name',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the certificate is not signed by a trusted authority',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'the certificate is not signed by a trusted authority',
  EPROTO: 'the server does not speak TLS on this port (is it http://?)',
  ERR_SSL_WRONG_VERSION_NUMBER: 'the server does not speak TLS on this port (is it http://?)',
};

const isTlsCode = (code: string) =>
  code in TLS ||
  code.startsWith('ERR_TLS_') ||
  code.startsWith('ERR_SSL_') ||
  code.startsWith('CERT_');

/** The error and its `cause` chain, outermost first (bounded: causes can be cyclic). */
export function errorChain(error: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e = error; e !== undefined && e !== null && out.length < 8;) {
    out.push(e);
    e = (e as { cause?: unknown }).cause;
  }
  return out;
}

const codeOf = (e: unknown): string | undefined => {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};

/**
 * Classifies what a `GuardedFetch` request (or any `node:http`/`fetch` request) failed with,
 * looking through `cause` chains; `undefined` for anything else (an abort, an HTTP-level error,
 * a bug). One table for every caller, so a model URL and an MCP URL that fail the same way are
 * reported the same way.
 */
export function classifyOutboundFailure(...errors: unknown[]): OutboundFailure | undefined {
  const all = errors.flatMap(errorChain);
  const refusal = all.find(isUrlRefusedError);
  if (refusal) return { kind: 'refused', refusal };
  const redirect = all.find((e): e is RedirectRefusedError => e instanceof RedirectRefusedError);
  if (redirect) return { kind: 'redirect', redirect };
  for (const e of all) {
    const code = codeOf(e);
    if (code && isTlsCode(code))
      return { kind: 'tls', code, description: TLS[code] ?? `TLS error ${code}` };
    if (code && DNS[code]) return { kind: 'dns', code, description: DNS[code] };
    if (code && CONNECT[code]) return { kind: 'connect', code, description: CONNECT[code] };
    if (e instanceof Error && /socket hang up|other side closed|terminated/i.test(e.message))
      return {
        kind: 'connect',
        code: 'ECONNRESET',
        description: 'the connection was closed unexpectedly',
      };
  }
  return undefined;
}
