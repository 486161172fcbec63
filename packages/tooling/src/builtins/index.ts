import type { BuiltinTool } from './builtin-tool.js';
import { calculatorTool } from './calculator.js';
import { currentTimeTool } from './current-time.js';

export type { BuiltinContext, BuiltinTool } from './builtin-tool.js';
export { BuiltinToolError } from './builtin-tool.js';
export {
  ArithmeticError,
  MAX_EXPRESSION_LENGTH,
  MAX_NESTING_DEPTH,
  evaluateExpression,
} from './arithmetic.js';
export { calculatorTool } from './calculator.js';
export { currentTime, currentTimeTool } from './current-time.js';
export type { CurrentTime } from './current-time.js';

/** The tools every tenant has; their names are reserved. */
export const BUILTIN_TOOLS: readonly BuiltinTool[] = [currentTimeTool, calculatorTool];

const byName = new Map(BUILTIN_TOOLS.map((tool) => [tool.name, tool]));

/** The built-in tool called `name`, if there is one. */
export const findBuiltinTool = (name: string): BuiltinTool | undefined => byName.get(name);

/** True for names a tenant may not give its own tool (compared case-insensitively, so `Calculator` is taken too). */
export const isReservedToolName = (name: string): boolean => byName.has(name.toLowerCase());
