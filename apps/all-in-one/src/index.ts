export { controlSocketPath } from './control-socket.js';
export { nextStep, startDemoModel, type DemoModel } from './demo-model.js';
