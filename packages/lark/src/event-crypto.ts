import {
  createDecipheriv,
  createHash,
  timingSafeEqual,
  createCipheriv,
  randomBytes,
} from 'node:crypto';

/**
 * Decrypts an encrypted event body (`{ "encrypt": "<base64>" }`): AES-256-CBC with PKCS#7
 * padding, key = SHA-256(encrypt key), the first 16 bytes of the decoded data are the IV.
 * Returns undefined for anything malformed (bad base64, wrong length, bad padding, not UTF-8).
 */
export function decryptEvent(encryptKey: string, encrypted: string): string | undefined {
  const data = Buffer.from(encrypted, 'base64');
  if (data.length <= 16 || data.length % 16 !== 0) return undefined;
  try {
    const key = createHash('sha256').update(encryptKey, 'utf8').digest();
    const decipher = createDecipheriv('aes-256-cbc', key, data.subarray(0, 16));
    const plain = Buffer.concat([decipher.update(data.subarray(16)), decipher.final()]);
    return new TextDecoder('utf-8', { fatal: true }).decode(plain);
  } catch {
    return undefined;
  }
}

/** The platform's side of {@link decryptEvent}: for tests and the fake platform server. */
export function encryptEvent(encryptKey: string, plaintext: string): string {
  const key = createHash('sha256').update(encryptKey, 'utf8').digest();
  const iv = randomBytes(16);
  const cipher = createCipheriv('aes-256-cbc', key, iv);
  return Buffer.concat([iv, cipher.update(plaintext, 'utf8'), cipher.final()]).toString('base64');
}

/**
 * The `X-Lark-Signature` of an event: hex SHA-256 of timestamp + nonce + encrypt key + the raw
 * request body, exactly as received (a re-serialized body would not match).
 */
export function eventSignature(
  timestamp: string,
  nonce: string,
  encryptKey: string,
  rawBody: string,
): string {
  return createHash('sha256')
    .update(timestamp + nonce + encryptKey + rawBody, 'utf8')
    .digest('hex');
}

/** Constant-time comparison of two secrets or digests given as strings. */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  // Compare against itself on a length mismatch so the time does not depend on where they differ.
  return left.length === right.length
    ? timingSafeEqual(left, right)
    : (timingSafeEqual(left, left), false);
}
