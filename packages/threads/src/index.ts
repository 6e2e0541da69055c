export { spawnModuleWorker, TaskThread, type TaskAnswer } from './task-thread.js';
