/** A JSON Schema as a tool declares its input (`inputSchema`), as in MCP tool descriptors. */
export type JsonSchema = Readonly<Record<string, unknown>>;

const TYPE_CHECKS: Readonly<Record<string, (value: unknown) => boolean>> = {
  string: (value) => typeof value === 'string',
  number: (value) => typeof value === 'number' && Number.isFinite(value),
  integer: (value) => Number.isInteger(value),
  boolean: (value) => typeof value === 'boolean',
  object: (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  array: (value) => Array.isArray(value),
  null: (value) => value === null,
};

/**
 * Checks tool arguments against the top level of a tool's JSON Schema: `required` properties
 * are present, and each given property declared in `properties` has the declared `type` (one
 * type or a list). Returns the problems, empty when the arguments pass.
 *
 * Deliberately shallow: a node must answer a malformed call with -32602 instead of running the
 * tool on garbage, and these checks catch what a model gets wrong in practice (a missing or
 * mistyped argument) without pulling a full JSON Schema validator into every node and browser
 * bundle. Nested rules are the handler's business; it can throw {@link ToolParamsError}.
 */
export function checkArguments(schema: JsonSchema, args: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const required = Array.isArray(schema.required) ? schema.required : [];
  for (const name of required)
    if (typeof name === 'string' && !(name in args)) problems.push(`${name}: required`);
  const properties = isRecord(schema.properties) ? schema.properties : {};
  for (const [name, value] of Object.entries(args)) {
    const property = properties[name];
    if (!isRecord(property)) continue;
    const declared = property.type;
    const types = Array.isArray(declared) ? declared : declared === undefined ? [] : [declared];
    const known = types.filter((t): t is string => typeof t === 'string' && t in TYPE_CHECKS);
    if (known.length > 0 && !known.some((t) => TYPE_CHECKS[t]?.(value)))
      problems.push(`${name}: expected ${known.join(' or ')}`);
  }
  return problems;
}

/**
 * Thrown by a tool handler when its arguments are unusable; the node answers JSON-RPC -32602
 * (invalid params) with this message instead of -32603 (the tool failed).
 */
export class ToolParamsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolParamsError';
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
