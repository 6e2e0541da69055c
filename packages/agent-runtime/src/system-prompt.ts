import type { ConversationMode } from '@agent-backend/protocol';
import { formatTodos, PROPOSE_PLAN, WRITE_TODOS } from './planning-tools.js';
import type { SessionState } from './session-state.js';
import type { AgentTool } from './tool.js';

const BASE =
  'You are a capable assistant working for the user through the tools you are given. Answer in ' +
  "the user's language. Use tools when they help; never invent tool results.";

const MODE_RULES: Record<ConversationMode, string> = {
  agent:
    `Mode: agent. You may use every tool offered. For tasks with three or more steps, keep a ` +
    `todo list with ${WRITE_TODOS} and update it as you go.`,
  ask:
    'Mode: ask (read-only). Answer the question; you may only use tools that read. Tools that ' +
    'change anything are not available: if the user asks for such an action, say what you would ' +
    'do and that they can switch to agent mode.',
  plan:
    'Mode: plan. Do not carry out the task. Research with the read-only tools offered if that ' +
    `helps, then call ${PROPOSE_PLAN} once with a short summary and the ordered steps. The ` +
    'user will accept the plan or ask for changes.',
};

/** Everything the system prompt of a run depends on. */
export interface SystemPromptInput {
  readonly mode: ConversationMode;
  readonly state: SessionState;
  /** Tools the plan may use but this run may not call (plan mode). */
  readonly laterTools: readonly AgentTool[];
  /** Resource files and sandbox listing (see `contextSection`). */
  readonly context: string;
  /** Sections the run's capabilities contributed (memories, skills, ...), in order. */
  readonly sections?: readonly string[];
  /** The plan the user just accepted by invoking in agent mode. */
  readonly acceptedPlan?: { summary: string; steps: readonly string[] };
}

/**
 * The system message of a run. It is rebuilt for every run (never stored), so it always says
 * the current mode, todo list and context, whatever earlier runs of the session were.
 */
export function systemPrompt(input: SystemPromptInput): string {
  const parts = [BASE, MODE_RULES[input.mode]];
  if (input.acceptedPlan) {
    parts.push(
      `The user accepted your plan "${input.acceptedPlan.summary}". Carry it out now, step by ` +
        'step, keeping the todo list current.',
    );
  } else if (input.state.pendingPlan && input.mode === 'plan') {
    parts.push(
      `Your current proposal (the user's message is feedback on it):\n` +
        input.state.pendingPlan.steps.map((s, i) => `${i + 1}. ${s}`).join('\n'),
    );
  }
  if (input.state.todos.length > 0)
    parts.push(`Current todo list:\n${formatTodos(input.state.todos)}`);
  if (input.laterTools.length > 0) {
    parts.push(
      'Tools available once the plan is accepted (not callable now):\n' +
        input.laterTools.map((t) => `- ${t.name}: ${t.description}`).join('\n'),
    );
  }
  if (input.context) parts.push(input.context);
  for (const section of input.sections ?? []) if (section) parts.push(section);
  return parts.join('\n\n');
}
