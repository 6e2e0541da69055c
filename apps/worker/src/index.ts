export { mountWorker } from './worker-role.js';
export {
  sweepRetention,
  type RetentionDeps,
  type RetentionKind,
  type RetentionSettings,
} from './retention.js';
