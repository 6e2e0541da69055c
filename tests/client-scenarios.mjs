// Scenarios of the client SDK (@agent-backend/client), plain JavaScript so that the same code
// runs in Node.js (tests/client-sdk.test.ts) and in headless Chromium
// (tests/client-sdk.browser.test.ts). Each imports the SDK's built module from `moduleUrl`.

/**
 * A fetch that drops the first invoke stream after `cutAfter` events (as a network failure
 * would: the body errors, the connection closes), sends resume requests to `resumeBaseUrl`, and
 * records every request.
 */
function droppingFetch({ cutAfter, resumeBaseUrl, requests }) {
  let dropped = false;
  return async (input, init = {}) => {
    let url = String(input);
    const headers = new Headers(init.headers);
    if (resumeBaseUrl && url.includes('/api/agent/sessions/')) {
      url = resumeBaseUrl + new URL(url).pathname;
    }
    requests.push({
      method: init.method ?? 'GET',
      path: new URL(url).pathname,
      lastEventId: headers.get('last-event-id'),
      origin: new URL(url).origin,
    });
    const response = await fetch(url, init);
    if (dropped || !url.endsWith('/api/agent/invoke') || !response.body) return response;
    dropped = true;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let seen = 0;
    const body = new ReadableStream({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        const text = decoder.decode(value, { stream: true });
        // Pass whole events until `cutAfter` of them went through, then fail.
        let end = 0;
        for (let at = text.indexOf('\n\n'); at >= 0; at = text.indexOf('\n\n', at + 2)) {
          seen += 1;
          end = at + 2;
          if (seen >= cutAfter) break;
        }
        if (seen >= cutAfter) {
          controller.enqueue(new TextEncoder().encode(text.slice(0, end)));
          await reader.cancel();
          controller.error(new TypeError('network connection lost (test)'));
          return;
        }
        controller.enqueue(value);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

/** Streams a run whose connection drops after two events; the SDK resumes it. */
export async function streamAndResume(args) {
  const sdk = await import(args.moduleUrl);
  const requests = [];
  const client = new sdk.AgentBackendClient({
    baseUrl: args.baseUrl,
    token: args.token,
    fetch: droppingFetch({ cutAfter: 2, resumeBaseUrl: args.resumeBaseUrl, requests }),
    resume: { delayMs: 50 },
  });
  const run = client.invoke({
    message: 'Count slowly',
    llm_config: args.llm,
    sandbox_mode: 'none',
  });
  const events = [];
  for await (const event of run) events.push(event);
  return {
    types: events.map((e) => e.type),
    text: events
      .filter((e) => e.type === 'message_chunk')
      .map((e) => e.content)
      .join(''),
    last: events.at(-1),
    sessionId: run.sessionId,
    runId: run.runId,
    lastEventId: run.lastEventId,
    requests,
  };
}

/** A run with a held tool call, approved from the stream with `decide()`. */
export async function approveFromStream(args) {
  const sdk = await import(args.moduleUrl);
  const client = new sdk.AgentBackendClient({ baseUrl: args.baseUrl, token: args.token });
  const run = client.invoke({
    message: 'Plan it',
    llm_config: args.llm,
    sandbox_mode: 'none',
    hitl_config: {},
  });
  const types = [];
  let decision;
  for await (const event of run) {
    types.push(event.type);
    if (event.type === 'approval_request') {
      decision = await client.decide(event.request_id, { decision: 'approve' });
    }
  }
  return { types, decision };
}

/**
 * A client whose token is refused, so its first request (or connection) gets 401 (4401) and
 * `onUnauthorized` supplies `args.freshToken`; `calls()` counts those calls.
 */
function refusedThenRefreshed(sdk, args) {
  let calls = 0;
  const client = new sdk.AgentBackendClient({
    baseUrl: args.baseUrl,
    token: 'not.a.token',
    onUnauthorized: async () => {
      calls += 1;
      return args.freshToken;
    },
  });
  return { client, calls: () => calls };
}

/** A refused token refreshed through `onUnauthorized`, and tokens from a refresh token. */
export async function refreshOnUnauthorized(args) {
  const sdk = await import(args.moduleUrl);
  const { client, calls } = refusedThenRefreshed(sdk, args);
  const user = await client.whoami();
  const nodes = await client.nodes.list();
  const fromRefresh = new sdk.AgentBackendClient({
    baseUrl: args.baseUrl,
    ...sdk.refreshTokenAuth({ baseUrl: args.baseUrl, refreshToken: args.refreshToken }),
  });
  const refreshedUser = await fromRefresh.whoami();
  let refused;
  try {
    await new sdk.AgentBackendClient({
      baseUrl: args.baseUrl,
      ...sdk.refreshTokenAuth({ baseUrl: args.baseUrl, refreshToken: 'rt_unknown' }),
    }).whoami();
  } catch (error) {
    refused = { name: error.name, status: error.status, code: error.code, message: error.message };
  }
  return { user, calls: calls(), total: nodes.total, refreshedUser, refused };
}

/**
 * The web page's gateway connection (`client.webSocket()`, a BrowserWebClient on the platform's
 * WebSocket; browser only: Node.js 20 has none). Starts with a refused token, so the first
 * connection ends with 4401 and `onUnauthorized` supplies the fresh one; resolves at the first
 * `workflows_list`. The client stays in `globalThis.__webClient` for {@link webSocketAgain}.
 */
export async function webSocketConnect(args) {
  const sdk = await import(args.moduleUrl);
  const { client, calls } = refusedThenRefreshed(sdk, args);
  const events = [];
  const web = client.webSocket({
    url: args.gatewayUrl,
    userId: args.userId,
    reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
  });
  globalThis.__webClient = { web, events };
  web.on((event) =>
    events.push(
      event.type === 'message'
        ? { type: 'message', message: event.message }
        : event.type === 'close'
          ? { type: 'close', code: event.code, reconnecting: event.reconnecting }
          : { type: event.type },
    ),
  );
  const list = await workflowsList(web);
  return { calls: calls(), list, events: [...events] };
}

/**
 * After the test cut the connection: waits for the client to be back (a close, then an open,
 * after the `since` events of {@link webSocketConnect}) and asks again.
 */
export async function webSocketAgain({ since }) {
  const { web, events } = globalThis.__webClient;
  const after = () => events.slice(since);
  const back = () => {
    const seen = after();
    const closed = seen.findIndex((e) => e.type === 'close');
    return closed >= 0 && seen.slice(closed).some((e) => e.type === 'open') && web.connected;
  };
  const list = await workflowsList(web, back());
  web.close();
  return { list, events: after() };
}

/** Sends `get_workflows` once the socket is open (now, if it is) and resolves with the `workflows_list`. */
function workflowsList(web, openNow = false) {
  return new Promise((resolve) => {
    const off = web.on((event) => {
      if (event.type === 'open') web.send({ type: 'get_workflows' });
      if (event.type === 'message' && event.message.type === 'workflows_list') {
        off();
        resolve(event.message);
      }
    });
    if (openNow) web.send({ type: 'get_workflows' });
  });
}
