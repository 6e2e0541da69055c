export {
  spawnModuleWorker,
  TASK_THREAD_IDLE_MS,
  TaskThread,
  type TaskAnswer,
} from './task-thread.js';
