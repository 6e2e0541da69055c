import { z } from 'zod';

/**
 * The general error body of the service's HTTP endpoints.
 *
 * Every failure answers with this shape unless the spec fixes another one for that endpoint
 * (the refresh endpoint's {@link AuthErrorBody}, the MCP validation timeout's
 * {@link DetailErrorBody}). `code` is stable and meant for programs; `message` is for people and
 * may change. Validation failures put a {@link FieldError} list in `details`.
 */
export const ErrorBody = z.object({
  error: z.object({
    code: z.string().min(1),
    message: z.string(),
    details: z.unknown().optional(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/**
 * One problem with one input field. `path` is dot-joined with array indexes as numbers
 * (`tools.0.base_url`), and `''` for the body itself, so clients can attach it to a form field.
 */
export const FieldError = z.object({
  path: z.string(),
  message: z.string(),
});
export type FieldError = z.infer<typeof FieldError>;

type IssueLike = z.core.$ZodIssue;

/**
 * Turns a failed parse into field errors, in the order zod reports them.
 *
 * A plain union that fails (no discriminator to pick a branch) is reported through the branch
 * that came closest (fewest issues, first on a tie) instead of a bare "Invalid input" at the
 * union's path: for `{ jsonrpc: '1.0', id, result }` that names `jsonrpc`, which is what the
 * sender got wrong. Discriminated unions already report the discriminator (`type`).
 */
export function fieldErrors(error: { readonly issues: readonly IssueLike[] }): FieldError[] {
  return flatten(error.issues, []);
}

function flatten(issues: readonly IssueLike[], prefix: readonly PropertyKey[]): FieldError[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const closest = issue.errors.reduce((best, branch) =>
        branch.length < best.length ? branch : best,
      );
      return flatten(closest, path);
    }
    return [{ path: path.map(String).join('.'), message: issue.message }];
  });
}
