import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closedLoopbackPort,
  startCountingServer,
  startScriptedModel,
  startSelfSignedServer,
  textReply,
  type LoopbackServer,
  type ScriptedModel,
} from '@agent-backend/testing';
import { createUrlGuard, UrlRefusedError, type Resolve } from '@agent-backend/url-guard';
import { AgentRunError } from './errors.js';
import { createLlmClient } from './llm-client.js';
import { streamModelTurn } from './model-turn.js';
import { modelUrlFailure, ModelUrlGuard } from './model-url-guard.js';

const API_KEY = 'sk-guard-secret-5f6e7d';

/**
 * The SSRF policy on model base URLs, with the real openai client. Every server here is on
 * loopback, which the guard refuses by default: `allowedOrigins` (LLM_ALLOWED_ORIGINS) opens
 * exactly the ports a test names, so a regressed guard can only ever reach this machine.
 */
describe('ModelUrlGuard', () => {
  let model: ScriptedModel;
  /** Not allowed anywhere: where redirects point. Counts connections to show it was never reached. */
  let target: LoopbackServer;
  let redirector: LoopbackServer;
  let tls: LoopbackServer;
  const guards: ModelUrlGuard[] = [];
  const guardOf = (...args: Parameters<typeof createUrlGuard>) => {
    const guard = new ModelUrlGuard(createUrlGuard(...args));
    guards.push(guard);
    return guard;
  };

  beforeAll(async () => {
    model = await startScriptedModel();
    target = await startCountingServer();
    redirector = await startCountingServer((req, res) =>
      res.writeHead(302, { location: `${target.origin}${req.url}` }).end(),
    );
    tls = await startSelfSignedServer();
  });
  afterAll(async () => {
    for (const guard of guards) guard.close();
    await Promise.all([model.close(), target.close(), redirector.close(), tls.close()]);
  });

  let counter = 0;
  /** One streamed turn through `guard`; resolves with the text or rejects with the run error. */
  async function ask(guard: ModelUrlGuard, baseUrl: string): Promise<string> {
    const name = `guard-${++counter}`;
    model.script(name, [textReply('Hello there.')]);
    const client = await createLlmClient(
      { baseUrl, apiKey: API_KEY, modelName: name, temperature: 0 },
      { guard, maxRetries: 0, timeoutMs: 5_000 },
    );
    const turn = await streamModelTurn({
      client,
      model: name,
      temperature: 0,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      signal: new AbortController().signal,
      idleTimeoutMs: 5_000,
      apiKey: API_KEY,
      onText: () => {},
    });
    return turn.content;
  }

  async function failure(promise: Promise<unknown>): Promise<AgentRunError> {
    const error = await promise.then(
      () => expect.fail('expected the model request to fail'),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AgentRunError);
    expect((error as Error).message).not.toContain(API_KEY);
    return error as AgentRunError;
  }

  it('refuses a loopback model by default, naming the setting that would allow it', async () => {
    const before = model.requests().length;
    const error = await failure(ask(guardOf(), model.baseUrl));
    const origin = new URL(model.baseUrl).origin;
    expect(error.code).toBe('llm_base_url_refused');
    expect(error.message).toBe(
      `the model base URL is not allowed on this server: 127.0.0.1 is a loopback address; the operator can allow this model server with LLM_ALLOWED_ORIGINS=${origin}`,
    );
    expect(model.requests()).toHaveLength(before);
  });

  it('reaches an allowed origin, and only that origin', async () => {
    const guard = guardOf({ allowedOrigins: [new URL(model.baseUrl).origin] });
    expect(await ask(guard, model.baseUrl)).toBe('Hello there.');
    const other = await failure(ask(guard, `${target.origin}/v1`));
    expect(other.code).toBe('llm_base_url_refused');
    expect(target.connections).toBe(0);
  });

  it('refuses a redirect without contacting its target, even an allowed one', async () => {
    const strict = guardOf({ allowedOrigins: [redirector.origin] });
    const error = await failure(ask(strict, `${redirector.origin}/v1`));
    expect(error.code).toBe('llm_redirect_refused');
    expect(error.message).toBe(
      `the model base URL answered with a redirect, which is not followed (HTTP 302 to ${target.origin}); use the final URL as baseUrl`,
    );
    expect(redirector.connections).toBeGreaterThan(0);
    // Redirects are never followed, so allowing the target too changes nothing.
    const both = guardOf({ allowedOrigins: [redirector.origin, target.origin] });
    expect((await failure(ask(both, `${redirector.origin}/v1`))).code).toBe('llm_redirect_refused');
    expect(target.connections).toBe(0);
  });

  it('reports a closed port as llm_connect_failed', async () => {
    const port = await closedLoopbackPort();
    const origin = `http://127.0.0.1:${port}`;
    const error = await failure(ask(guardOf({ allowedOrigins: [origin] }), `${origin}/v1`));
    expect(error.code).toBe('llm_connect_failed');
    expect(error.message).toBe(
      `could not connect to the model base URL (127.0.0.1:${port}: the connection was refused (nothing listens on that port?))`,
    );
  });

  it('reports a self-signed certificate as llm_tls_failed', async () => {
    const error = await failure(ask(guardOf({ allowedOrigins: [tls.origin] }), `${tls.origin}/v1`));
    expect(error.code).toBe('llm_tls_failed');
    expect(error.message).toContain('the certificate is self-signed');
  });

  // Name resolution goes through the guard's injectable `resolve`, never the system resolver:
  // a real `.invalid` lookup would ask the machine's DNS server, i.e. send traffic off the host.
  it('reports a name that does not resolve as llm_dns_failed, before and at connect time', async () => {
    const notFound: Resolve = async (hostname) => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    };
    const before = await failure(ask(guardOf({ resolve: notFound }), 'http://model.invalid/v1'));
    expect(before.code).toBe('llm_dns_failed');
    expect(before.message).toBe(
      'the host name of the model base URL does not resolve (model.invalid: the host name does not resolve)',
    );

    // Resolves for the check before the client is built, then no longer when it connects.
    let lookups = 0;
    const flaky: Resolve = async (hostname) =>
      lookups++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : notFound(hostname);
    const port = new URL(model.baseUrl).port;
    const guard = guardOf({ resolve: flaky, allowedOrigins: [`http://model.test:${port}`] });
    const later = await failure(ask(guard, `http://model.test:${port}/v1`));
    expect(later.code).toBe('llm_dns_failed');
    expect(lookups).toBe(2);
  });

  it('refuses a name that resolves to loopback unless its origin is allowed', async () => {
    const resolve: Resolve = async () => [{ address: '127.0.0.1', family: 4 }];
    const port = new URL(model.baseUrl).port;
    const url = `http://model.test:${port}/v1`;
    const refused = await failure(ask(guardOf({ resolve }), url));
    expect(refused.code).toBe('llm_base_url_refused');
    expect(refused.message).toContain('model.test resolves to 127.0.0.1, a loopback address');
    expect(refused.message).toContain(`LLM_ALLOWED_ORIGINS=http://model.test:${port}`);
    const allowed = guardOf({ resolve, allowedOrigins: [`http://model.test:${port}`] });
    expect(await ask(allowed, url)).toBe('Hello there.');
  });

  it('names no setting for addresses no setting opens', () => {
    const url = new URL('http://metadata.test/v1');
    const metadata = modelUrlFailure(new UrlRefusedError('metadata.test', 'metadata'), url);
    expect(metadata?.message).toBe(
      'the model base URL is not allowed on this server: metadata.test is a cloud metadata address; cloud metadata addresses are never allowed',
    );
    expect(modelUrlFailure(new Error('a bug'), url)).toBeUndefined();
  });
});
