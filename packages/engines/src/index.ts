export { createEngines, type Engines, type CreateEnginesOptions } from './engines.js';
