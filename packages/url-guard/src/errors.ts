import type { AddressCategory } from './address-ranges.js';

/** Why a URL was refused: a non-public address category, or a URL shape the guard does not take. */
export type RefusalReason = AddressCategory | 'scheme' | 'credentials';

const DESCRIBE: Record<RefusalReason, string> = {
  loopback: 'a loopback address',
  private: 'a private-network address',
  'link-local': 'a link-local address',
  unspecified: 'an unspecified address (0.0.0.0 / ::)',
  metadata: 'a cloud metadata address',
  multicast: 'a multicast address',
  reserved: 'a reserved or special-purpose address',
  scheme: 'not an http or https URL',
  credentials: 'a URL with user:password@ credentials (send them as a header instead)',
};

/**
 * A user-supplied URL that the guard will not connect to. Thrown before any byte leaves the
 * process: at the URL check, at DNS resolution (every resolved address is vetted) or when a
 * redirect points somewhere refused. The message names the host and the resolved address (both
 * chosen by the user, so neither is a secret) but never the path, query or credentials.
 */
export class UrlRefusedError extends Error {
  /** Stable code, for callers that map errors to responses. */
  readonly code = 'url_refused';

  constructor(
    /** The host as the user wrote it (after URL normalisation). */
    readonly host: string,
    readonly reason: RefusalReason,
    /** The resolved address that was refused, when the host is a name. */
    readonly address?: string,
  ) {
    super(
      address && address !== host
        ? `${host} resolves to ${address}, ${DESCRIBE[reason]}`
        : `${host} is ${DESCRIBE[reason]}`,
    );
    this.name = 'UrlRefusedError';
  }
}

/** True for a {@link UrlRefusedError}, also one that crossed a package boundary (duplicate copies). */
export function isUrlRefusedError(error: unknown): error is UrlRefusedError {
  return (
    error instanceof UrlRefusedError ||
    (error instanceof Error && (error as { code?: unknown }).code === 'url_refused')
  );
}

/**
 * A redirect that a request made with `redirect: 'error'` received. A `TypeError`, as `fetch`
 * throws for that mode, with what the caller needs to tell the user: the status and where the
 * redirect pointed (its origin only; the path may carry tokens). The target was never contacted.
 */
export class RedirectRefusedError extends TypeError {
  readonly code = 'redirect_refused';

  constructor(
    readonly status: number,
    /** The origin the `Location` header pointed to, or `an invalid URL`. */
    readonly location: string,
  ) {
    super(`redirect (HTTP ${status}) to ${location} refused`);
    this.name = 'RedirectRefusedError';
  }
}
