import { createHash } from 'node:crypto';
import { NodeCallError, type NodeToolCaller, type NodeTools } from '@agent-backend/node-rpc';
import {
  CANCELLED_CONTENT,
  sanitizeToolName,
  Semaphore,
  TOOL_NAME,
  type AgentTool,
  type ToolOutput,
} from '@agent-backend/agent-runtime';

/** Arguments schema for node tools that announce only a name. */
const ANY_OBJECT = { type: 'object', additionalProperties: true } as const;

function suffixed(base: string, nodeId: string, toolName: string): string {
  const hash = createHash('sha256').update(`${nodeId}\0${toolName}`).digest('hex').slice(0, 8);
  return `${base.slice(0, 54)}__${hash}`;
}

/**
 * Turns the tools of a user's online nodes into registry tools that call them through the
 * gateway (spec 4.3 rule 3: addressed by user, node type, node id and tool name, with the
 * session id).
 *
 * Naming: a tool keeps its own name when that is a valid OpenAI function name no other tool of
 * the run uses (the common case: one extension). Otherwise the name is sanitized and, if still
 * taken (two nodes offering `click`, or a clash with a built-in), suffixed with `__` and 8 hex
 * digits of a hash of node id and tool name, which is stable across runs. Every call is pinned
 * to the node that offered the tool, and the description names that node.
 *
 * Node tools act on the user's device, so they count as write tools (not offered in `ask`,
 * not run in `plan`) unless their descriptor says `writes: false`. Descriptors may be bare names or carry a description and an input JSON
 * Schema; a schema that is not an object schema is replaced by "any object".
 *
 * Called once per run: the tools of one node share a semaphore of the node's
 * `maxConcurrentTasks`, so the run's calls to a node never exceed what the node accepts (the
 * node refuses more with a busy error). Calls of other runs are not counted here; the node
 * counts those itself.
 */
export function nodeToolsToAgentTools(
  userId: string,
  nodes: readonly NodeTools[],
  caller: NodeToolCaller,
  taken: ReadonlySet<string>,
): AgentTool[] {
  const used = new Set(taken);
  const tools: AgentTool[] = [];
  for (const node of nodes) {
    const slots = node.maxConcurrentTasks ? new Semaphore(node.maxConcurrentTasks) : undefined;
    for (const descriptor of node.tools) {
      const original = descriptor.name;
      let name = sanitizeToolName(original);
      if (name !== original || used.has(name)) name = suffixed(name, node.nodeId, original);
      if (used.has(name) || !TOOL_NAME.test(name)) continue;
      used.add(name);
      const where = `the user's ${node.nodeType} "${node.nodeId}"`;
      const schema = descriptor.inputSchema;
      tools.push({
        name,
        description: descriptor.description
          ? `${descriptor.description} (runs on ${where})`
          : `Tool "${original}" on ${where}.`,
        parameters: schema && schema.type === 'object' ? schema : { ...ANY_OBJECT },
        writes: descriptor.writes !== false,
        async execute(args, context): Promise<ToolOutput> {
          const release = slots ? await slots.acquire(context.signal) : undefined;
          if (release === null) return { content: CANCELLED_CONTENT, isError: true };
          try {
            const result = await caller.callTool({
              userId,
              nodeType: node.nodeType,
              nodeId: node.nodeId,
              toolName: original,
              arguments: args,
              sessionId: context.sessionId,
              signal: context.signal,
            });
            // A node may send its capture both as an image item and as `_screenshot`: once.
            const images = [...result.images];
            if (result.screenshot && !images.some((image) => image.data === result.screenshot)) {
              images.push({ data: result.screenshot, mimeType: 'image/png' });
            }
            const note =
              images.length > 0 ? `\n[${images.length} image(s) returned to the user]` : '';
            return {
              content: `${result.text}${note}` || '(no output)',
              isError: !result.success,
              ...(images.length > 0 ? { images } : {}),
            };
          } catch (error) {
            if (error instanceof NodeCallError) {
              return {
                content: `Node tool failed (${error.code}): ${error.message}`,
                isError: true,
              };
            }
            throw error;
          } finally {
            release?.();
          }
        },
      });
    }
  }
  return tools;
}
