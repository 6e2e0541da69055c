import { decryptEvent, eventSignature, safeEqual } from './event-crypto.js';

export interface EventVerification {
  /** `LARK_ENCRYPT_KEY`: when set, bodies are decrypted and events must carry a valid signature. */
  encryptKey?: string;
  /** `LARK_VERIFICATION_TOKEN`: when set, the token in the body must match. */
  verificationToken?: string;
  /** How far the signed timestamp may be from now. @default 300 (seconds) */
  replayWindowSeconds?: number;
  /** @default Date.now */
  now?: () => number;
}

/** Request headers that carry the signature (lower-case names, as Node gives them). */
export interface SignatureHeaders {
  'x-lark-request-timestamp'?: string;
  'x-lark-request-nonce'?: string;
  'x-lark-signature'?: string;
}

export type VerifiedEvent =
  { ok: true; body: Record<string, unknown> } | { ok: false; status: 400 | 401; reason: string };

/**
 * Checks one webhook request and returns its plaintext body.
 *
 * - Not JSON, or not an object: 400.
 * - With an encrypt key: an `encrypt` body is decrypted (400 when it does not decrypt; a
 *   plaintext body is refused with 400, since the platform encrypts everything once a key is
 *   set). Every event except `url_verification` (which the platform does not sign) must carry
 *   `X-Lark-Request-Timestamp`, `-Nonce` and `X-Lark-Signature` matching the raw body, with a
 *   timestamp within the replay window: 401 otherwise.
 * - Without an encrypt key: an `encrypt` body is 400 (nothing to decrypt with).
 * - With a verification token: the body's token (`header.token` in schema 2.0, `token`
 *   otherwise) must match, compared in constant time: 401 otherwise.
 */
export function verifyEvent(
  rawBody: string,
  headers: SignatureHeaders,
  options: EventVerification,
): VerifiedEvent {
  let outer: unknown;
  try {
    outer = JSON.parse(rawBody);
  } catch {
    return { ok: false, status: 400, reason: 'body is not JSON' };
  }
  if (!isObject(outer)) return { ok: false, status: 400, reason: 'body is not a JSON object' };

  let body = outer;
  if (options.encryptKey) {
    if (typeof outer.encrypt !== 'string') {
      return {
        ok: false,
        status: 400,
        reason: 'expected an encrypted body (an encrypt key is configured)',
      };
    }
    const plain = decryptEvent(options.encryptKey, outer.encrypt);
    let parsed: unknown;
    try {
      parsed = plain === undefined ? undefined : JSON.parse(plain);
    } catch {
      parsed = undefined;
    }
    if (!isObject(parsed))
      return {
        ok: false,
        status: 400,
        reason: 'encrypted body does not decrypt with the configured key',
      };
    body = parsed;
    if (body.type !== 'url_verification') {
      const failure = checkSignature(rawBody, headers, options.encryptKey, options);
      if (failure) return { ok: false, status: 401, reason: failure };
    }
  } else if ('encrypt' in outer) {
    return { ok: false, status: 400, reason: 'encrypted body, but no encrypt key is configured' };
  }

  if (options.verificationToken) {
    const header = isObject(body.header) ? body.header : undefined;
    const token = typeof header?.token === 'string' ? header.token : body.token;
    if (typeof token !== 'string' || !safeEqual(token, options.verificationToken)) {
      return { ok: false, status: 401, reason: 'verification token does not match' };
    }
  }
  return { ok: true, body };
}

function checkSignature(
  rawBody: string,
  headers: SignatureHeaders,
  encryptKey: string,
  options: EventVerification,
): string | undefined {
  const timestamp = headers['x-lark-request-timestamp'];
  const nonce = headers['x-lark-request-nonce'];
  const signature = headers['x-lark-signature'];
  if (!timestamp || !nonce || !signature) return 'missing signature headers';
  const seconds = Number(timestamp);
  const now = (options.now ?? Date.now)() / 1000;
  if (!Number.isFinite(seconds) || Math.abs(now - seconds) > (options.replayWindowSeconds ?? 300)) {
    return 'signature timestamp outside the replay window';
  }
  return safeEqual(eventSignature(timestamp, nonce, encryptKey, rawBody), signature)
    ? undefined
    : 'signature does not match';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
