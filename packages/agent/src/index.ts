/** The agent every kind of run uses, assembled once per role (docs/agent.md, "Assembly"). */
export { createAgent, type Agent, type AgentDeps, type AgentOptions } from './create-agent.js';
export { agentSettings, type AgentServiceSettings } from './settings.js';
