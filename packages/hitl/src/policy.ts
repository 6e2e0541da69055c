import type { HitlConfig, HitlDecision } from '@agent-backend/protocol';

/** What the HITL settings say about one tool call. */
export type ApprovalPolicy =
  | { readonly interrupt: false }
  | {
      readonly interrupt: true;
      readonly allowedDecisions: readonly HitlDecision[];
      readonly timeoutMs: number;
    };

/** Decisions offered when the tool has no entry in `tools`. */
export const ALL_DECISIONS: readonly HitlDecision[] = ['approve', 'edit', 'reject'];

const NEVER: ApprovalPolicy = { interrupt: false };

/**
 * Combines `hitl_config` (spec 2.5) for one tool, in this order (first match wins):
 * 1. no `hitl_config` on the request: never interrupted;
 * 2. the tool is in `allowlist`: never interrupted, whatever `tools` says;
 * 3. the tool has an entry in `tools` with `enabled: false`: HITL is off for it, it runs
 *    without interruption (the entry does not disable the tool itself);
 * 4. an entry with `enabled: true`: interrupted when `requires_interrupt` (or, unset,
 *    `default_requires_interrupt`) is true, with its `allowed_decisions` and `timeout`
 *    (unset: `default_timeout`);
 * 5. no entry: interrupted when `default_requires_interrupt`, all three decisions,
 *    `default_timeout`.
 */
export function approvalPolicy(config: HitlConfig | undefined, toolName: string): ApprovalPolicy {
  if (!config) return NEVER;
  if (config.allowlist.includes(toolName)) return NEVER;
  const entry = Object.hasOwn(config.tools, toolName) ? config.tools[toolName] : undefined;
  if (entry && !entry.enabled) return NEVER;
  const interrupt = entry?.requires_interrupt ?? config.default_requires_interrupt;
  if (!interrupt) return NEVER;
  return {
    interrupt: true,
    allowedDecisions: entry ? [...new Set(entry.allowed_decisions)] : ALL_DECISIONS,
    timeoutMs: Math.round((entry?.timeout ?? config.default_timeout) * 1000),
  };
}
