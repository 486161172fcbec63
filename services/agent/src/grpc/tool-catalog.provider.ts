import { ArgsValidator, BUILTIN_TOOLS } from '@keel/tooling';
import { ValidationError, messageOf } from '@keel/core';
import type { BuiltinToolInfo, ToolCatalog } from '../turn/tool-catalog.js';

/** Nest injection token of the agent's ToolCatalog. */
export const TOOL_CATALOG = Symbol.for('keel.agent.tool-catalog');

/**
 * The agent's tool catalog on @keel/tooling, the definitions the tools service runs: the
 * built-ins' metadata for prompts and ListTools, and the same ajv 8 argument check (each
 * schema compiled once, cached by its hash), so the agent's guard and the tools service agree.
 */
export class AjvToolCatalog implements ToolCatalog {
  readonly builtins: BuiltinToolInfo[] = BUILTIN_TOOLS.map(({ name, description, inputSchema }) => ({
    name,
    description,
    inputSchema,
  }));
  readonly #validator: ArgsValidator = new ArgsValidator();

  validate(schema: Record<string, unknown>, args: unknown): Array<{ path: string; message: string }> {
    try {
      const verdict = this.#validator.validate(schema, args);
      return verdict.ok ? [] : verdict.errors;
    } catch (error) {
      // A schema that does not compile must not fail the turn: the model learns the tool is broken.
      return [{ path: '$', message: messageOf(error) }];
    }
  }

  /** For PutTool: an object schema within the size limit that compiles; a ValidationError naming `inputSchema` otherwise. */
  assertToolSchema(schema: unknown): void {
    this.#validator.assertToolSchema(schema);
  }

  /** For PutTool: a client tool's outputSchema compiles; a ValidationError naming `outputSchema` otherwise. */
  assertOutputSchema(schema: Record<string, unknown>): void {
    try {
      this.#validator.compile(schema);
    } catch (error) {
      throw new ValidationError(`outputSchema is not a valid JSON Schema: ${messageOf(error)}`, {
        field: 'outputSchema',
      });
    }
  }

  /**
   * A client's answer against its tool's outputSchema: a ValidationError naming the first field
   * off it (`result.title`, `result` for the whole value).
   */
  assertResult(schema: Record<string, unknown>, result: unknown): void {
    const [problem, ...more] = this.validate(schema, result);
    if (!problem) return;
    const field = `result${problem.path.replace(/^\$/, '')}`;
    const others = more.length > 0 ? ` (and ${more.length} more)` : '';
    throw new ValidationError(`${field} ${problem.message}${others}`, { field });
  }
}
