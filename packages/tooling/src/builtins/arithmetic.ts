import { ArithmeticError, Lexer, describeToken } from './arithmetic-lexer.js';
import type { Operator, Token } from './arithmetic-lexer.js';
import { CONSTANTS, FUNCTIONS } from './arithmetic-functions.js';

export { ArithmeticError } from './arithmetic-lexer.js';

/** Longest expression the calculator reads. */
export const MAX_EXPRESSION_LENGTH = 500;
/** Deepest nesting (parentheses, unary signs, powers, function arguments) it follows. */
export const MAX_NESTING_DEPTH = 100;

const KNOWN_NAMES = [...CONSTANTS.keys(), ...FUNCTIONS.keys()].join(', ');

/** Left and right binding powers of the infix operators; `^` binds right (2^3^2 = 2^9). */
const INFIX: Partial<Record<Operator, readonly [number, number]>> = {
  '+': [1, 2],
  '-': [1, 2],
  '*': [3, 4],
  '/': [3, 4],
  '%': [3, 4],
  '^': [6, 5],
};
/** Unary signs bind looser than `^` (-2^2 = -4) and tighter than `*` ((-2)*3). */
const PREFIX_BINDING = 5;

/**
 * Evaluates an arithmetic expression with a hand-written Pratt parser — no `eval`, no `Function`,
 * no property lookups on objects. Throws ArithmeticError (with the 1-based position) for syntax
 * errors, unknown names, division by zero and any result that is not a finite real number.
 */
export const evaluateExpression = (source: string): number => {
  if (source.length > MAX_EXPRESSION_LENGTH) {
    throw new ArithmeticError(
      'expression_too_long',
      `the expression is ${source.length} characters long; the limit is ${MAX_EXPRESSION_LENGTH}`,
      MAX_EXPRESSION_LENGTH + 1,
    );
  }
  const lexer = new Lexer(source);
  if (lexer.peek().kind === 'end') throw new ArithmeticError('syntax_error', 'the expression is empty', 1);
  const value = parse({ lexer, open: [] }, 0, 1);
  const rest = lexer.peek();
  if (rest.kind === 'operator' && rest.operator === ')') {
    throw new ArithmeticError('unbalanced_parentheses', "')' has no matching '('", rest.position);
  }
  if (rest.kind !== 'end') {
    throw new ArithmeticError(
      'syntax_error',
      `unexpected ${describeToken(rest)}; an operator is missing`,
      rest.position,
    );
  }
  // 15 significant digits: 0.1 + 0.2 reads 0.3, as a person expects; -0 reads 0.
  return Number(value.toPrecision(15)) + 0;
};

/** The parser's state: the tokens, and the `(` still waiting for their `)`. */
interface Parser {
  lexer: Lexer;
  open: Token[];
}

const parse = (parser: Parser, minBinding: number, depth: number): number => {
  const { lexer } = parser;
  if (depth > MAX_NESTING_DEPTH) {
    throw new ArithmeticError(
      'expression_too_deep',
      `the expression nests deeper than ${MAX_NESTING_DEPTH} levels`,
      lexer.peek().position,
    );
  }
  let left = parsePrefix(parser, depth);
  for (;;) {
    const token = lexer.peek();
    if (token.kind !== 'operator') return left;
    const binding = INFIX[token.operator];
    if (!binding || binding[0] < minBinding) return left;
    lexer.next();
    const right = parse(parser, binding[1], depth + 1);
    left = applyInfix(token.operator, left, right, token.position);
  }
};

const parsePrefix = (parser: Parser, depth: number): number => {
  const token = parser.lexer.next();
  switch (token.kind) {
    case 'number':
      return token.value;
    case 'name':
      return parseName(parser, token, depth);
    case 'end': {
      const unclosed = parser.open.at(-1);
      if (unclosed) {
        throw new ArithmeticError(
          'unbalanced_parentheses',
          "the expression ends where a number was expected; this '(' is never closed",
          unclosed.position,
        );
      }
      throw new ArithmeticError(
        'syntax_error',
        'the expression ends where a number was expected',
        token.position,
      );
    }
    case 'operator':
      switch (token.operator) {
        case '-':
          return -parse(parser, PREFIX_BINDING, depth + 1);
        case '+':
          return parse(parser, PREFIX_BINDING, depth + 1);
        case '(':
          return parseEnclosed(parser, token, () => parse(parser, 0, depth + 1));
        case ')':
          if (parser.open.length === 0) {
            throw new ArithmeticError('unbalanced_parentheses', "')' has no matching '('", token.position);
          }
          throw new ArithmeticError(
            'syntax_error',
            "unexpected ')' where a number was expected",
            token.position,
          );
        default:
          throw new ArithmeticError(
            'syntax_error',
            `unexpected '${token.operator}' where a number was expected`,
            token.position,
          );
      }
  }
};

const parseName = (parser: Parser, token: Extract<Token, { kind: 'name' }>, depth: number): number => {
  const { lexer } = parser;
  const key = token.name.toLowerCase();
  const constant = CONSTANTS.get(key);
  const fn = FUNCTIONS.get(key);
  // Refused before reading on, so `process.exit()` is about `process`, not about the `.`.
  if (constant === undefined && !fn) {
    throw new ArithmeticError(
      'unknown_identifier',
      `unknown name '${token.name.slice(0, 40)}'; known names are ${KNOWN_NAMES}`,
      token.position,
    );
  }
  const next = lexer.peek();
  const called = next.kind === 'operator' && next.operator === '(';
  if (!fn) {
    if (called) {
      throw new ArithmeticError(
        'syntax_error',
        `${token.name} is a constant, not a function`,
        token.position,
      );
    }
    return constant ?? NaN;
  }
  if (!called) {
    throw new ArithmeticError('syntax_error', `${token.name} is a function: write ${key}(…)`, token.position);
  }
  const args = parseEnclosed(parser, lexer.next(), () => {
    const values: number[] = [];
    for (;;) {
      values.push(parse(parser, 0, depth + 1));
      const separator = lexer.peek();
      if (separator.kind !== 'operator' || separator.operator !== ',') return values;
      lexer.next();
    }
  });
  if (args.length < fn.minArgs || args.length > fn.maxArgs) {
    const expected =
      fn.maxArgs === Infinity
        ? `at least ${fn.minArgs}`
        : fn.minArgs === fn.maxArgs
          ? `${fn.minArgs}`
          : `${fn.minArgs} to ${fn.maxArgs}`;
    throw new ArithmeticError(
      'syntax_error',
      `${key} takes ${expected} argument${fn.maxArgs === 1 ? '' : 's'}, got ${args.length}`,
      token.position,
    );
  }
  return finite(fn.apply(args, token.position), `${key}(…)`, token.position);
};

/** Reads what `inner` reads after the `(` token `open`, then the `)` closing it. */
const parseEnclosed = <T>(parser: Parser, open: Token, inner: () => T): T => {
  parser.open.push(open);
  const value = inner();
  const token = parser.lexer.peek();
  if (token.kind === 'end')
    throw new ArithmeticError('unbalanced_parentheses', "'(' is never closed", open.position);
  if (token.kind !== 'operator' || token.operator !== ')') {
    throw new ArithmeticError(
      'syntax_error',
      `expected ')' but found ${describeToken(token)}`,
      token.position,
    );
  }
  parser.lexer.next();
  parser.open.pop();
  return value;
};

const applyInfix = (operator: Operator, left: number, right: number, position: number): number => {
  switch (operator) {
    case '+':
      return finite(left + right, 'the sum', position);
    case '-':
      return finite(left - right, 'the difference', position);
    case '*':
      return finite(left * right, 'the product', position);
    case '/':
      if (right === 0) throw new ArithmeticError('division_by_zero', 'division by zero', position);
      return finite(left / right, 'the quotient', position);
    case '%':
      if (right === 0) throw new ArithmeticError('division_by_zero', 'modulo by zero', position);
      return finite(left % right, 'the remainder', position);
    case '^':
      return finite(left ** right, 'the power', position);
    default:
      throw new ArithmeticError('syntax_error', `'${operator}' is not an infix operator`, position);
  }
};

const finite = (value: number, what: string, position: number): number => {
  if (Number.isNaN(value)) throw new ArithmeticError('math_error', `${what} is not a real number`, position);
  if (!Number.isFinite(value)) throw new ArithmeticError('overflow', `${what} is too large`, position);
  return value;
};
