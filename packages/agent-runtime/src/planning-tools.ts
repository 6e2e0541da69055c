import { z } from 'zod';
import { TodoItem } from '@agent-backend/protocol';
import { defineTool } from './builtin-tool.js';
import type { AgentTool } from './tool.js';

/** Name of the planning tool of `agent` mode. */
export const WRITE_TODOS = 'write_todos';
/** Name of the tool that ends a `plan`-mode run with a plan for the user. */
export const PROPOSE_PLAN = 'propose_plan';

/** At most this many todos; a longer list is refused so the model keeps plans readable. */
export const MAX_TODOS = 50;

/** The todo list as numbered lines, for tool results and the system prompt. */
export const formatTodos = (todos: readonly TodoItem[]) =>
  todos.map((todo, i) => `${i + 1}. [${todo.status}] ${todo.content}`).join('\n');

// Each built once per process (a JSON Schema from zod per run was a share of every run's CPU
// before its model request): the tools keep no state of their own, a run's is in the context.
let writeTodos: AgentTool | undefined;
let proposePlan: AgentTool | undefined;

/**
 * "Automatic planning" (the deepagents `write_todos` pattern): the model keeps a todo list for
 * multi-step work and rewrites it whole as it progresses. The list is session state (it
 * survives across invokes and is shown in the system prompt) and every change is streamed as a
 * `todos` event. It changes nothing outside the conversation, so it is not a write tool.
 */
export function writeTodosTool(): AgentTool {
  return (writeTodos ??= defineTool({
    name: WRITE_TODOS,
    description:
      'Create or update your todo list for the current task. Use it for work with three or ' +
      'more steps: send the whole list each time, mark one item in_progress while you work on ' +
      'it and completed as soon as it is done. Skip it for simple questions.',
    schema: z.object({ todos: z.array(TodoItem).max(MAX_TODOS) }),
    writes: false,
    repeatSafe: true,
    modes: ['agent'],
    run({ todos }, context) {
      context.state.todos = todos;
      context.emit({ type: 'todos', todos });
      return {
        content: todos.length ? `Todo list updated:\n${formatTodos(todos)}` : 'Todo list cleared.',
      };
    },
  }));
}

/**
 * The `plan` mode's way to finish: the model proposes a plan, the stream gets a `plan` event
 * (`status: 'proposed'`), the plan is stored as the session's pending plan and the run ends.
 * The user accepts it by invoking the session in `agent` mode, or revises it by invoking in
 * `plan` mode again with feedback.
 */
export function proposePlanTool(): AgentTool {
  return (proposePlan ??= defineTool({
    name: PROPOSE_PLAN,
    description:
      'Propose your plan to the user and stop. Call it once, when your research is done: a ' +
      'one-sentence summary and the ordered steps you will carry out once the user accepts.',
    schema: z.object({
      summary: z.string().min(1).max(1_000),
      steps: z.array(z.string().min(1).max(1_000)).min(1).max(MAX_TODOS),
    }),
    writes: false,
    repeatSafe: true,
    modes: ['plan'],
    run({ summary, steps }, context) {
      context.state.pendingPlan = { summary, steps };
      context.emit({ type: 'plan', status: 'proposed', summary, steps });
      return {
        content: 'The plan was shown to the user. Wait for their decision; do not carry it out.',
        endRun: true,
      };
    },
  }));
}
