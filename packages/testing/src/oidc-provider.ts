import { generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/** A signing key of the test's identity provider, private half included (to forge tokens with). */
export interface ProviderSigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** The public key as a PEM (what an HS256-with-the-public-key attack would use as secret). */
  publicPem: string;
  /** The private JWK handed to oidc-provider. */
  jwk: JsonWebKey;
}

/** Makes a signing key for {@link startOidcProvider}. */
export function providerSigningKey(
  kid: string,
  alg: 'RS256' | 'ES256' = 'RS256',
): ProviderSigningKey {
  const { privateKey, publicKey } =
    alg === 'RS256'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    kid,
    alg,
    privateKey,
    publicKey,
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' },
  };
}

export interface OidcProviderOptions {
  /** Keys published in its JWKS; the first signs. */
  keys: readonly ProviderSigningKey[];
  /** The API's identifier (the tokens' `aud`). @default 'urn:agent-backend' */
  audience?: string;
  /** Listen on this port (to restart on the same address); 0: any free port. @default 0 */
  port?: number;
  /** Client ids it knows (client credentials grant; the secret is `<id>-secret`). @default ['app-user'] */
  clients?: readonly string[];
}

export interface OidcProvider {
  /** `http://127.0.0.1:<port>`: the issuer. */
  readonly issuer: string;
  readonly port: number;
  readonly discoveryUrl: string;
  readonly jwksUrl: string;
  /** Requests made to its JWKS endpoint so far. */
  readonly jwksRequests: () => number;
  /** A JWT access token for `clientId` (its `sub`) via the client credentials grant. */
  accessToken(clientId?: string): Promise<string>;
  stop(): Promise<void>;
}

/**
 * A real OpenID provider (`oidc-provider`, the certified Node implementation) on loopback, issuing
 * JWT access tokens through the client credentials grant with a resource indicator (without one
 * it issues opaque tokens). For client credentials the token's `sub` is the client id.
 */
export async function startOidcProvider(options: OidcProviderOptions): Promise<OidcProvider> {
  const audience = options.audience ?? 'urn:agent-backend';
  const clients = options.clients ?? ['app-user'];
  let jwksRequests = 0;
  const server: Server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: clients.map((clientId) => ({
      client_id: clientId,
      client_secret: `${clientId}-secret`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
    })),
    jwks: { keys: options.keys.map((key) => key.jwk) as never },
    ttl: { ClientCredentials: 600 },
    features: {
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'api',
          audience,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 600,
          jwt: { sign: { alg: options.keys[0]!.alg } },
        }),
      },
    },
  });
  const callback = provider.callback();
  server.on('request', (request, response) => {
    if (request.url?.startsWith('/jwks')) jwksRequests += 1;
    void callback(request, response);
  });
  return {
    issuer,
    port,
    discoveryUrl: `${issuer}/.well-known/openid-configuration`,
    jwksUrl: `${issuer}/jwks`,
    jwksRequests: () => jwksRequests,
    async accessToken(clientId = clients[0]!) {
      const form = new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: clientId,
        client_secret: `${clientId}-secret`,
        resource: audience,
        scope: 'api',
      }).toString();
      const { status, body } = await postForm(`${issuer}/token`, form);
      const parsed = JSON.parse(body) as { access_token?: string };
      if (status !== 200 || !parsed.access_token) {
        throw new Error(`token request failed: ${status} ${body}`);
      }
      return parsed.access_token;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A form POST on a connection of its own: a provider restarted on the same port in a test must
 * not be reached through a pooled connection to the stopped one.
 */
function postForm(url: string, form: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(form);
  });
}
