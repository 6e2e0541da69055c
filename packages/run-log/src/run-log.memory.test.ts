import { describeRunLogContract } from './run-log.contract.js';
import { createMemoryRunLog } from './memory-run-log.js';

describeRunLogContract('memory', async (options) => {
  const log = createMemoryRunLog(options);
  return [log, log];
});
