import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './cluster.js';
import { ofType, openSocket, type TestSocket } from './ws-client.js';

const ORIGIN = 'https://app.example';

/**
 * The frame rate of one WebSocket connection (docs/limits.md): over it frames are dropped with
 * one `error` `rate_limited`, a flood is closed with 1008, and other connections of the same
 * user are untouched.
 */
describe('gateway frame rate', () => {
  let cluster: Cluster;
  const open: TestSocket[] = [];
  const connect = async (userId: string) => {
    const token = await cluster.token(userId);
    const socket = await openSocket(cluster.wsUrl(0, '/ws/web', { user_id: userId, token }), {
      origin: ORIGIN,
    });
    open.push(socket);
    return socket;
  };

  beforeAll(async () => {
    cluster = await startCluster({
      gateways: 1,
      apis: 0,
      env: { GATEWAY_WEB_ORIGINS: ORIGIN, GATEWAY_FRAMES_PER_SECOND: '5' },
    });
  });
  afterAll(async () => {
    for (const socket of open) socket.ws.terminate();
    await cluster?.stop();
  });

  it('drops frames over the rate with one rate_limited error, and closes a flood with 1008', async () => {
    const flooding = await connect('frames-alice');
    const calm = await connect('frames-alice');

    for (let i = 0; i < 12; i++) flooding.send({ type: 'ping' });
    expect(await flooding.next(ofType('error'))).toMatchObject({
      type: 'error',
      code: 'rate_limited',
    });
    calm.send({ type: 'ping' });
    expect(await calm.next(ofType('pong'))).toEqual({ type: 'pong' });

    for (let i = 0; i < 100; i++) flooding.send({ type: 'ping' });
    expect((await flooding.closed).code).toBe(1008);
    // Fewer answers than frames, and one error for the run of dropped frames before the close.
    const pongs = flooding.received.filter((f) => f.type === 'pong').length;
    expect(pongs).toBeLessThan(112);
    expect(flooding.received.filter((f) => f.type === 'error')).toHaveLength(1);

    calm.send({ type: 'ping' });
    expect(await calm.next(ofType('pong'))).toEqual({ type: 'pong' });
    const metrics = await (await fetch(`${cluster.gateways[0]!.url}/metrics`)).text();
    expect(metrics).toMatch(
      /^agent_backend_rate_limited_total\{[^}]*limit="gateway_frames"[^}]*\} [1-9]/m,
    );
  });
});
