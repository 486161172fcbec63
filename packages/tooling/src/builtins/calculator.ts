import { MAX_EXPRESSION_LENGTH, evaluateExpression } from './arithmetic.js';
import type { BuiltinTool } from './builtin-tool.js';
import { BuiltinToolError } from './builtin-tool.js';

/** `calculator`: exact-enough arithmetic for a model that should not do sums in its head. */
export const calculatorTool: BuiltinTool = {
  name: 'calculator',
  description:
    'Evaluates an arithmetic expression and returns the number. Supports + - * / % ^ (power, ' +
    'right-associative; ** also works), unary minus, parentheses, the constants pi and e, and the ' +
    'functions sqrt, abs, round(x[, digits]), floor, ceil, min, max, ln, log10, exp, sin, cos, tan ' +
    '(radians). Example: "(3 + 4) * 2^3 / sqrt(16)".',
  inputSchema: {
    type: 'object',
    properties: {
      expression: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_EXPRESSION_LENGTH,
        description: 'The expression to evaluate, e.g. "17.5 * 3 - 2^10".',
      },
    },
    required: ['expression'],
    additionalProperties: false,
  },
  execute(args) {
    const { expression } = args;
    if (typeof expression !== 'string') {
      throw new BuiltinToolError('invalid_arguments', 'expression must be a string', { field: 'expression' });
    }
    return { expression, result: evaluateExpression(expression) };
  },
};
