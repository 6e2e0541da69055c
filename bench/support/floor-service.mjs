// The floor a Node service stands on, for bench/footprint.ts: express answering `/healthz` on
// PORT and one ioredis connection to REDIS_URL, nothing of ours. Plain JavaScript, so it runs
// on `node` alone like the built entries.
import { createRequire } from 'node:module';

const from = (pkg) => createRequire(new URL(`../../packages/${pkg}/package.json`, import.meta.url));
const express = from('http-server')('express');
const { Redis } = from('redis')('ioredis');

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const app = express();
app.get('/healthz', async (_req, res) => {
  res.json({ ok: (await redis.ping()) === 'PONG' });
});
app.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
