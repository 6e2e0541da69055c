/**
 * Preloaded into a gateway process by bench/gateway-100k.ts (`--import`): the server listening on
 * `BENCH_REUSE_PORT` binds with SO_REUSEPORT, so several gateway processes share one port and the
 * kernel spreads new connections over them, as an L4 load balancer would; when one dies, new
 * connections go to the others. Reports `{ listening }` over IPC once bound.
 */
import { Server } from 'node:net';

const shared = Number(process.env.BENCH_REUSE_PORT);
const listen = Server.prototype.listen;
Server.prototype.listen = function (this: Server, ...args: unknown[]) {
  if (args[0] !== shared) return listen.apply(this, args as Parameters<Server['listen']>);
  const [port, host, callback] = args as [number, string, (() => void) | undefined];
  this.once('listening', () => process.send?.({ listening: port }));
  return listen.call(this, { port, host, reusePort: true }, callback);
} as Server['listen'];
