import { z } from 'zod';

/*
 * A user's data, exported or erased (docs/operations.md#export-and-erasure): `GET /api/me/export`
 * answers with a tar archive (its layout is described there), `DELETE /api/me` erases.
 */

/**
 * Body of `DELETE /api/me`: `confirm` must be the caller's own user id (the `sub` of the token,
 * as `GET /api/auth/whoami` says it), so no request erases a user by accident. Missing or
 * different: 400 `confirmation_required`, nothing erased.
 */
export const EraseMeRequest = z.object({ confirm: z.string().max(256).optional() });
export type EraseMeRequest = z.infer<typeof EraseMeRequest>;

/** 200 answer of `DELETE /api/me` (and the operator's equivalent): what was removed. */
export const ErasureResponse = z.object({
  erasure_id: z.string(),
  user_id: z.string(),
  status: z.literal('done'),
  /**
   * Counts per kind of data removed (`sessions`, `messages`, `runs`, `run_logs`, `memories`,
   * `knowledge_documents`, `queued_jobs`, `nodes`, ...); a kind the user had none of is absent.
   * All absent: there was nothing left to erase.
   */
  removed: z.record(z.string(), z.number().int().nonnegative()),
  requested_at: z.string(),
  finished_at: z.string(),
});
export type ErasureResponse = z.infer<typeof ErasureResponse>;
