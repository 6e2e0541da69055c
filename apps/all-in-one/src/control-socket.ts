import { createServer, request as httpRequest, type Server } from 'node:http';
import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ReservedUserIdError } from '@agent-backend/auth';
import type { AuditEntry } from '@agent-backend/store';

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

/** What `pnpm keys:rotate` reports of a rotation (no key material). */
export interface RotatedKey {
  kid: string;
  retired: string;
  active_from: string;
}

/** The audit events of the operator's commands, whichever way they reach the store. */
export const ISSUED_BY_CLI = (userId: string): AuditEntry => ({
  action: 'token.issued',
  userId,
  actor: 'cli',
  details: { via: 'token:issue' },
});
export const REVOKED_BY_CLI = (userId: string, count: number): AuditEntry => ({
  action: 'user.tokens_revoked',
  userId,
  actor: 'cli',
  details: { via: 'token:revoke', refresh_tokens_revoked: count },
});
export const KEY_ROTATED_BY_CLI = (key: RotatedKey): AuditEntry => ({
  action: 'key.rotated',
  userId: null,
  actor: 'cli',
  details: { via: 'keys:rotate', ...key },
});

/** What the running service does for each action of the socket. */
export interface ControlActions {
  issue(userId: string): Promise<{ refreshToken: string; accessToken: string }>;
  revokeUser(userId: string): Promise<RevokedUser>;
  /** Records `key.rotated` (the command wrote the key set file itself). */
  keyRotated(key: RotatedKey): Promise<void>;
}

/**
 * The socket's actions: `POST /tokens` (token:issue), `POST /revoke-user` (token:revoke) and
 * `POST /key-rotated` (keys:rotate's audit event).
 */
const ACTIONS = ['/tokens', '/revoke-user', '/key-rotated'] as const;
type Action = (typeof ACTIONS)[number];

export async function startControlSocket(
  dataDir: string,
  actions: ControlActions,
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
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return reply(400, { error: 'body must be JSON' });
      }
      let run: Promise<unknown>;
      if (action === '/key-rotated') {
        const { kid, retired, active_from } = body;
        if (
          typeof kid !== 'string' ||
          typeof retired !== 'string' ||
          typeof active_from !== 'string'
        )
          return reply(400, { error: 'kid, retired and active_from are required' });
        run = actions.keyRotated({ kid, retired, active_from }).then(() => ({}));
      } else {
        const userId = body.user_id;
        if (typeof userId !== 'string' || !isValidUserId(userId)) {
          return reply(400, { error: 'user_id must be 1-128 characters without spaces' });
        }
        run = action === '/tokens' ? actions.issue(userId) : actions.revokeUser(userId);
      }
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
  return requestControl(dataDir, '/tokens', { user_id: userId });
}

/** Asks a running all-in-one to revoke a user's tokens (its own cutoffs take effect at once). */
export function requestRevokeUser(dataDir: string, userId: string): Promise<RevokedUser> {
  return requestControl(dataDir, '/revoke-user', { user_id: userId });
}

/** Asks a running all-in-one to record a key rotation in its audit log. */
export async function requestKeyRotated(dataDir: string, key: RotatedKey): Promise<void> {
  await requestControl(dataDir, '/key-rotated', key);
}

function requestControl<T>(dataDir: string, action: Action, body: object): Promise<T> {
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
    req.end(JSON.stringify(body));
  });
}
