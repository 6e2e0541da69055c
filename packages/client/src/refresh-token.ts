import type { RefreshResponse } from '@agent-backend/protocol';
import type { ClientOptions } from './client.js';
import { apiError } from './errors.js';

/**
 * Access tokens from a refresh token (`POST /api/auth/refresh`): the first request gets one,
 * a 401 gets a new one. Spread it into {@link ClientOptions}.
 */
export function refreshTokenAuth(options: {
  baseUrl: string;
  refreshToken: string;
  fetch?: typeof fetch;
}): Pick<ClientOptions, 'token' | 'onUnauthorized'> {
  const fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  let current: Promise<string> | undefined;
  const refresh = () => {
    current = (async () => {
      const response = await fetchImpl(`${options.baseUrl.replace(/\/+$/, '')}/api/auth/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refreshToken: options.refreshToken }),
      });
      if (!response.ok) throw await apiError(response);
      return ((await response.json()) as RefreshResponse).accessToken;
    })();
    current.catch(() => (current = undefined));
    return current;
  };
  return {
    token: () => current ?? refresh(),
    onUnauthorized: () => refresh(),
  };
}
