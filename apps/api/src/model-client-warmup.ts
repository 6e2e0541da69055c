import type { RequestHandler } from 'express';
import { preloadOpenai } from '@agent-backend/agent-runtime';

/** What an idle replica is asked: probes and scrapes, after which no run is expected. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Starts loading the model client's SDK at the first request that is not a probe: an idle
 * replica (probes and scrapes only) never loads it, which keeps it 6-8 MB smaller
 * (docs/BENCHMARKS.md, "Footprint"), while a client's run, which comes after its token, session
 * or list requests, seldom waits for the import. A run that comes first loads it itself.
 */
export const warmModelClient: RequestHandler = (req, _res, next) => {
  if (!PROBES.has(req.path)) preloadOpenai();
  next();
};
