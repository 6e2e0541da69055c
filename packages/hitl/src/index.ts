export { approvalPolicy, ALL_DECISIONS, type ApprovalPolicy } from './policy.js';
export {
  ApprovalStore,
  ApprovalRecord,
  ApprovalResolution,
  APPROVAL_RETAIN_MS,
  approvalKeys,
  resolvedChannel,
} from './approval-store.js';
export { waitForResolution, DEFAULT_POLL_MS } from './wait-for-resolution.js';
export {
  createApprovalHook,
  createResumeApproval,
  type ApprovalHookOptions,
} from './approval-hook.js';
export {
  DecisionService,
  DecisionError,
  REPLICA_LOST,
  type DecisionErrorCode,
  type DecisionServiceOptions,
} from './submit-decision.js';
