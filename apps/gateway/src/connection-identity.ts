import type { IncomingMessage } from 'node:http';
import {
  connectionOrderOf,
  WS_CLOSE,
  WS_PATHS,
  type ConnectionOrder,
  type NodeType,
  type WsClientKind,
} from '@agent-backend/protocol';

/** Who a WebSocket connection is, once the URL and the token have been checked. */
export interface ConnectionIdentity {
  kind: WsClientKind;
  userId: string;
  /** Nodes only: from `node_id`, else `ext_<user>` / `desktop_<user>` (spec 4.3). */
  nodeId?: string;
  /**
   * Nodes only: the connection's order, when the URL names one (`instance_id`,
   * `connection_seq`): a connection never replaces a later one of the same client instance.
   */
  connection?: ConnectionOrder;
  /** False only when the legacy switch let an unauthenticated connection in. */
  authenticated: boolean;
  /** The token's `iat` (epoch seconds), when it has one: a later revocation closes the socket. */
  issuedAt?: number;
}

/** A refusal: the connection is accepted and closed at once with this code and reason. */
export interface IdentityRefusal {
  code: number;
  reason: string;
}

export interface IdentityOptions {
  /** The service's token verifier (`ServiceContext.verifyToken`): its own tokens and the identity provider's. */
  verify: (token: string) => Promise<{ userId: string; iat?: number }>;
  /** Origins allowed on /ws/web; empty allows any. */
  webOrigins: readonly string[];
  /** Legacy switch: accept connections that carry no token at all. */
  allowUnauthenticated: boolean;
  /** Whether the user revoked tokens issued at `iat` (revoke-user, sign out everywhere). */
  isRevoked?(userId: string, iat: number | undefined): boolean;
}

const KIND_BY_PATH = new Map<string, WsClientKind>(
  (Object.entries(WS_PATHS) as Array<[WsClientKind, string]>).map(([kind, path]) => [path, kind]),
);

const CLIENT_ID_PREFIX: Record<NodeType, string> = {
  extension: 'user_',
  desktop: 'desktop_',
};
const DEFAULT_NODE_PREFIX: Record<NodeType, string> = {
  extension: 'ext_',
  desktop: 'desktop_',
};

/** The client kind served at `pathname`, or undefined for any other path. */
export function kindOfPath(pathname: string): WsClientKind | undefined {
  return KIND_BY_PATH.get(pathname);
}

/**
 * Reads the identity from the URL (spec 4.3) and checks it against the access token: the `token`
 * query parameter or an `Authorization: Bearer` header, whose `sub` must be the URL's user.
 * Returns a refusal with the documented close code otherwise.
 */
export async function identify(
  request: IncomingMessage,
  kind: WsClientKind,
  url: URL,
  options: IdentityOptions,
): Promise<ConnectionIdentity | IdentityRefusal> {
  let userId: string;
  let nodeId: string | undefined;
  let connection: ConnectionOrder | undefined;
  if (kind === 'web') {
    const value = url.searchParams.get('user_id');
    if (!value) return { code: WS_CLOSE.missingIdentity, reason: 'user_id is required' };
    userId = value;
    const origin = request.headers.origin;
    if (options.webOrigins.length > 0 && (!origin || !options.webOrigins.includes(origin))) {
      return { code: WS_CLOSE.forbidden, reason: 'origin not allowed' };
    }
  } else {
    const clientId = url.searchParams.get('client_id');
    if (!clientId) return { code: WS_CLOSE.missingIdentity, reason: 'client_id is required' };
    const prefix = CLIENT_ID_PREFIX[kind];
    if (!clientId.startsWith(prefix) || clientId.length === prefix.length) {
      return { code: WS_CLOSE.invalidIdentity, reason: `client_id must be ${prefix}<user_id>` };
    }
    userId = clientId.slice(prefix.length);
    nodeId = url.searchParams.get('node_id') || `${DEFAULT_NODE_PREFIX[kind]}${userId}`;
    connection = connectionOrderOf(url.searchParams);
  }
  const named = connection ? { nodeId, connection } : { nodeId };
  if (userId.length > 128 || (nodeId !== undefined && nodeId.length > 128)) {
    return {
      code: WS_CLOSE.invalidIdentity,
      reason: 'user and node ids are at most 128 characters',
    };
  }

  const token = url.searchParams.get('token') || bearer(request.headers.authorization);
  if (!token) {
    if (options.allowUnauthenticated) return { kind, userId, ...named, authenticated: false };
    return { code: WS_CLOSE.unauthorized, reason: 'access token required' };
  }
  let issuedAt: number | undefined;
  try {
    const verified = await options.verify(token);
    if (verified.userId !== userId)
      return { code: WS_CLOSE.forbidden, reason: 'token does not belong to this user' };
    if (options.isRevoked?.(userId, verified.iat))
      return { code: WS_CLOSE.unauthorized, reason: 'token has been revoked' };
    issuedAt = verified.iat;
  } catch (error) {
    return { code: WS_CLOSE.unauthorized, reason: (error as Error).message };
  }
  return { kind, userId, ...named, authenticated: true, issuedAt };
}

function bearer(header: string | undefined): string | undefined {
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}
