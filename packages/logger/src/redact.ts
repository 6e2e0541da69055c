/** Placeholder written instead of a secret. */
export const REDACTED = '[REDACTED]';

/**
 * Object keys whose values are secrets wherever they appear (headers, bodies, errors, config),
 * compared case-insensitively. A key list rather than pino's path list, because secrets arrive
 * nested at any depth (`tools[3].api_key`, `llm_config.apiKey`).
 */
const SECRET_KEYS = new Set(
  [
    'authorization',
    'proxy-authorization',
    'cookie',
    'set-cookie',
    'x-internal-secret',
    'apikey',
    'api_key',
    'api-key',
    'x-api-key',
    'access_token',
    'accesstoken',
    'refresh_token',
    'refreshtoken',
    'id_token',
    'token',
    'password',
    'sentinelpassword',
    'redis_sentinel_password',
    'secret',
    'client_secret',
    'app_secret',
    'encrypt_key',
    'private_key',
    'privatekey',
  ].map((k) => k.toLowerCase()),
);

/**
 * Query parameters that carry credentials in URLs: any whose name contains `token`, `key`,
 * `secret` or `password`, whatever else it says (`token`, `api_key`, `x-internal-secret`,
 * `db_password`), and OAuth's `code`; the name is compared percent-decoded (`s%65cret` is the
 * `secret` the server reads). Over-redacting a harmless `monkey=` is the cheap side.
 */
const SECRET_NAME = /token|key|secret|password|^code$/i;
const QUERY_PARAMETER = /([?&])([^=&#\s"]*)=([^&#\s"]*)/g;

/** The name as a server reads it: `+` and percent-escapes decoded (twice over, for `%2565`). */
function decodedName(name: string): string {
  let decoded = name.replace(/\+/g, ' ');
  for (let round = 0; round < 3 && decoded.includes('%'); round++) {
    const next = decoded.replace(/%([0-9a-f]{2})/gi, (_, hex: string) =>
      String.fromCharCode(parseInt(hex, 16)),
    );
    if (next === decoded) break;
    decoded = next;
  }
  return decoded;
}

export function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(key.toLowerCase());
}

/** Replaces credential query-parameter values in any string that contains a URL or query. */
export function redactUrl(value: string): string {
  if (!value.includes('=')) return value;
  return value.replace(QUERY_PARAMETER, (whole, separator: string, name: string) =>
    SECRET_NAME.test(decodedName(name)) ? `${separator}${name}=${REDACTED}` : whole,
  );
}

const MAX_DEPTH = 8;

/**
 * Returns a copy of `value` with secret keys replaced by {@link REDACTED} and credential query
 * parameters removed from strings. Errors keep their message, name, code and stack. Depth is
 * bounded so a cyclic or huge object cannot stall logging.
 */
export function redactSecrets(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return redactUrl(value);
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Truncated]';
  seen.add(value);
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item, depth + 1, seen));
  if (value instanceof Date || Buffer.isBuffer(value)) return value;
  const out: Record<string, unknown> = {};
  if (value instanceof Error) {
    out.type = value.name;
    out.message = redactUrl(value.message);
    if (value.stack) out.stack = redactUrl(value.stack);
  }
  for (const [key, item] of Object.entries(value)) {
    out[key] = isSecretKey(key) ? REDACTED : redactSecrets(item, depth + 1, seen);
  }
  return out;
}
