import { createServer, request as httpRequest, type Server } from 'node:http';
import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ReservedUserIdError, type RefreshTokenService } from '@agent-backend/auth';

/**
 * The embedded engine's PGlite files belong to one process, so `pnpm token:issue` (and
 * `token:revoke`) cannot open them while the service runs. The running all-in-one instead answers on a Unix socket inside
 * `DATA_DIR` (mode 0600: only the owner of the data directory can mint tokens, the same people
 * who could read its private key anyway). Nothing listens on the network for this.
 */
export function controlSocketPath(dataDir: string): string {
  return join(dataDir, 'control.sock');
}

const USER_ID = /^[^\s]{1,128}$/;

export function isValidUserId(userId: string): boolean {
  return USER_ID.test(userId);
}

/** What `pnpm token:revoke` prints: the user, and how many refresh tokens were live. */
export interface RevokedUser {
  user_id: string;
  refresh_tokens_revoked: number;
}

/** The socket's two actions: `POST /tokens` (token:issue) and `POST /revoke-user` (token:revoke). */
const ACTIONS = ['/tokens', '/revoke-user'] as const;
type Action = (typeof ACTIONS)[number];

export async function startControlSocket(
  dataDir: string,
  tokens: RefreshTokenService,
  revokeUser: (userId: string) => Promise<RevokedUser>,
): Promise<Server> {
  const path = controlSocketPath(dataDir);
  // We hold the data directory's lock, so a socket file here is a leftover of a killed process.
  if (existsSync(path)) unlinkSync(path);
  const server = createServer((req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const action = ACTIONS.find((path) => path === req.url);
    if (req.method !== 'POST' || !action) return reply(404, { error: 'not found' });
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      raw += chunk;
      if (raw.length > 4096) req.destroy();
    });
    req.on('end', () => {
      let userId: unknown;
      try {
        userId = (JSON.parse(raw) as { user_id?: unknown }).user_id;
      } catch {
        return reply(400, { error: 'body must be JSON' });
      }
      if (typeof userId !== 'string' || !isValidUserId(userId)) {
        return reply(400, { error: 'user_id must be 1-128 characters without spaces' });
      }
      const run = action === '/tokens' ? tokens.issuePair(userId) : revokeUser(userId);
      run.then(
        (pair) => reply(200, pair),
        (error: Error) =>
          reply(error instanceof ReservedUserIdError ? 400 : 500, { error: error.message }),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  return server;
}

/** Asks a running all-in-one to mint tokens; rejects when nothing answers on the socket. */
export function requestTokens(
  dataDir: string,
  userId: string,
): Promise<{ refreshToken: string; accessToken: string }> {
  return requestControl(dataDir, '/tokens', userId);
}

/** Asks a running all-in-one to revoke a user's tokens (its own cutoffs take effect at once). */
export function requestRevokeUser(dataDir: string, userId: string): Promise<RevokedUser> {
  return requestControl(dataDir, '/revoke-user', userId);
}

function requestControl<T>(dataDir: string, action: Action, userId: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { socketPath: controlSocketPath(dataDir), method: 'POST', path: action, timeout: 10_000 },
      (res) => {
        let raw = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (raw += chunk));
        res.on('end', () => {
          try {
            const body = JSON.parse(raw) as T & { error?: string };
            if (res.statusCode === 200) resolve(body);
            else reject(new Error(body.error ?? `control socket answered ${res.statusCode}`));
          } catch (error) {
            reject(error as Error);
          }
        });
      },
    );
    req.on('timeout', () =>
      req.destroy(new Error('the running service did not answer within 10 s')),
    );
    req.on('error', reject);
    req.end(JSON.stringify({ user_id: userId }));
  });
}
