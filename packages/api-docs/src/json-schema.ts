import { z } from 'zod';
import * as protocol from '@agent-backend/protocol';

/** A JSON Schema object, as the documents carry it. */
export type JsonSchema = Record<string, unknown>;

/** Which side of a schema a document shows: what a sender may send, or what a parse produces. */
export type SchemaSide = 'input' | 'output';

/**
 * Every schema the protocol package exports, by its export name: the names of the documents'
 * components. A schema that is not exported from the protocol is inlined where it is used.
 */
export const NAMED_SCHEMAS: ReadonlyMap<z.ZodType, string> = new Map(
  (Object.entries(protocol) as Array<[string, unknown]>)
    .filter((entry): entry is [string, z.ZodType] => entry[1] instanceof z.ZodType)
    .map(([name, schema]) => [schema, name]),
);

/** Suffix of a component's input variant when it differs from its output (defaults, transforms). */
const INPUT_SUFFIX = 'Input';
/** Marks the input side's references until each is known to differ from its output or not. */
const INPUT_MARK = '@@input';

export interface SchemaCollectorOptions {
  /** `draft-2020-12` for OpenAPI 3.1, `draft-07` for AsyncAPI 3.0's default schema format. */
  target: 'draft-2020-12' | 'draft-07';
  /** Where components live: `#/components/schemas/`. */
  refPrefix: string;
}

/**
 * Turns the protocol's zod schemas into the components of a document (with zod's own
 * `z.toJSONSchema`, so the documents say what the service validates with). Each named schema is
 * one component; where what a sender may send differs from what a parse produces (defaults make
 * fields optional to send, transforms change types) the input side is a second component,
 * `<Name>Input`. Only the components a document refers to (directly or through others) are kept.
 */
export class SchemaCollector {
  private readonly output: Record<string, JsonSchema>;
  private readonly input: Record<string, JsonSchema>;
  private readonly differs = new Map<string, boolean>();

  constructor(private readonly options: SchemaCollectorOptions) {
    const registry = z.registry<{ id: string }>();
    for (const [schema, name] of NAMED_SCHEMAS) {
      if (name.endsWith(INPUT_SUFFIX)) throw new Error(`schema name ${name} clashes with inputs`);
      registry.add(schema, { id: name });
    }
    const convert = (io: SchemaSide, mark: string) => {
      const converted = z.toJSONSchema(registry, {
        target: options.target,
        io,
        unrepresentable: 'any',
        uri: (id) => `${options.refPrefix}${id}${mark}`,
        override: io === 'output' ? openOutputObjects : undefined,
      }).schemas as Record<string, JsonSchema>;
      for (const schema of Object.values(converted)) {
        delete schema.$schema;
        delete schema.$id;
      }
      return converted;
    };
    this.output = convert('output', '');
    this.input = convert('input', INPUT_MARK);
  }

  /** A reference to a named schema's component (its input or output side). */
  ref(schema: z.ZodType, side: SchemaSide): JsonSchema {
    const name = NAMED_SCHEMAS.get(schema);
    if (!name) throw new Error('only schemas exported by @agent-backend/protocol are documented');
    return { $ref: `${this.options.refPrefix}${this.componentName(name, side)}` };
  }

  /** A schema written out in place (small ones: query and path parameters), no references. */
  inline(schema: z.ZodType, side: SchemaSide): JsonSchema {
    const json = z.toJSONSchema(schema, {
      target: this.options.target,
      io: side,
      unrepresentable: 'any',
    }) as JsonSchema;
    delete json.$schema;
    return json;
  }

  /**
   * The components `document` refers to, and those they refer to, by name. References in
   * `document` must already point at them (written by {@link ref}).
   */
  components(document: unknown): Record<string, JsonSchema> {
    const all = new Map<string, JsonSchema>();
    for (const name of Object.keys(this.output)) {
      all.set(name, this.output[name]!);
      if (this.inputDiffers(name)) all.set(`${name}${INPUT_SUFFIX}`, this.finishInput(name));
    }
    const kept = new Map<string, JsonSchema>();
    const visit = (value: unknown): void => {
      if (Array.isArray(value)) return value.forEach(visit);
      if (value === null || typeof value !== 'object') return;
      for (const [key, child] of Object.entries(value)) {
        if (
          key === '$ref' &&
          typeof child === 'string' &&
          child.startsWith(this.options.refPrefix)
        ) {
          const name = child.slice(this.options.refPrefix.length);
          const schema = all.get(name);
          if (!schema) throw new Error(`no component ${name}`);
          if (!kept.has(name)) {
            kept.set(name, schema);
            visit(schema);
          }
        } else visit(child);
      }
    };
    visit(document);
    return Object.fromEntries([...kept].sort(([a], [b]) => a.localeCompare(b)));
  }

  private componentName(name: string, side: SchemaSide): string {
    return side === 'input' && this.inputDiffers(name) ? `${name}${INPUT_SUFFIX}` : name;
  }

  /** Whether a component's input side differs from its output, here or in a component it uses. */
  private inputDiffers(name: string, visiting = new Set<string>()): boolean {
    const known = this.differs.get(name);
    if (known !== undefined) return known;
    if (visiting.has(name)) return false;
    visiting.add(name);
    const text = JSON.stringify(this.input[name]);
    const own = text.replaceAll(INPUT_MARK, '') !== JSON.stringify(this.output[name]);
    const used = [...text.matchAll(new RegExp(`"\\$ref":"[^"]*/([^"/]+)${INPUT_MARK}"`, 'g'))];
    const result = own || used.some((match) => this.inputDiffers(match[1]!, visiting));
    visiting.delete(name);
    if (visiting.size === 0 || result) this.differs.set(name, result);
    return result;
  }

  /** The input side of a component with its references resolved to input or shared components. */
  private finishInput(name: string): JsonSchema {
    const prefix = this.options.refPrefix;
    const text = JSON.stringify(this.input[name]).replace(
      new RegExp(`"\\$ref":"[^"]*/([^"/]+)${INPUT_MARK}"`, 'g'),
      (_all, used: string) => `"$ref":"${prefix}${this.componentName(used, 'input')}"`,
    );
    return JSON.parse(text) as JsonSchema;
  }
}

/**
 * Answers may gain fields (clients ignore those they do not know), so an output object is only
 * closed (`additionalProperties: false`) when its schema is strict; zod closes every object.
 */
function openOutputObjects(context: {
  zodSchema: z.core.$ZodType;
  jsonSchema: z.core.JSONSchema.BaseSchema;
}): void {
  const def = context.zodSchema._zod.def;
  if (def.type === 'object' && (def as z.core.$ZodObjectDef).catchall === undefined) {
    if (context.jsonSchema.additionalProperties === false) {
      delete context.jsonSchema.additionalProperties;
    }
  }
}
