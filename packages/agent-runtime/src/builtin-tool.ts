import { z } from 'zod';
import { fieldErrors } from '@agent-backend/protocol';
import type { AgentTool, ToolContext, ToolOutput } from './tool.js';

/**
 * Defines a built-in tool from a zod schema: the JSON Schema offered to the model is generated
 * from it, and the model's arguments are parsed with it, so the two cannot drift apart. Invalid
 * arguments become an error tool message naming the fields, which lets the model correct itself.
 */
export function defineTool<S extends z.ZodObject>(definition: {
  name: string;
  description: string;
  schema: S;
  writes: boolean;
  modes?: AgentTool['modes'];
  /** @see AgentTool.repeatSafe */
  repeatSafe?: boolean;
  run(args: z.output<S>, context: ToolContext): Promise<ToolOutput> | ToolOutput;
}): AgentTool {
  const parameters = z.toJSONSchema(definition.schema, { io: 'input' }) as Record<string, unknown>;
  delete parameters.$schema;
  return {
    name: definition.name,
    description: definition.description,
    parameters,
    writes: definition.writes,
    ...(definition.modes ? { modes: definition.modes } : {}),
    ...(definition.repeatSafe ? { repeatSafe: true } : {}),
    async execute(args, context) {
      const parsed = definition.schema.safeParse(args);
      if (!parsed.success) {
        const problems = fieldErrors(parsed.error)
          .map((e) => `${e.path || '(arguments)'}: ${e.message}`)
          .join('; ');
        return { content: `Invalid arguments for ${definition.name}: ${problems}`, isError: true };
      }
      return definition.run(parsed.data, context);
    },
  };
}
