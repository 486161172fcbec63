import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import {
  ArithmeticError,
  MAX_EXPRESSION_LENGTH,
  MAX_NESTING_DEPTH,
  evaluateExpression,
} from './arithmetic.js';
import { calculatorTool } from './calculator.js';

const ctx = { tenantId: 't', conversationId: 'c', toolCallId: 'k', now: () => new Date(0) };

/** The ArithmeticError `source` raises (fails the test when it evaluates). */
const failure = (source: string): ArithmeticError => {
  try {
    const value = evaluateExpression(source);
    throw new Error(`expected ${JSON.stringify(source)} to fail, got ${value}`);
  } catch (error) {
    if (error instanceof ArithmeticError) return error;
    throw error;
  }
};

describe('calculator: arithmetic', () => {
  it.each([
    ['1 + 2', 3],
    ['2 + 3 * 4', 14],
    ['(2 + 3) * 4', 20],
    ['10 - 4 - 3', 3],
    ['100 / 10 / 5', 2],
    ['7 % 3', 1],
    ['-7 % 3', -1],
    ['2 ^ 10', 1024],
    ['2 ** 10', 1024],
    ['2 ^ 3 ^ 2', 512],
    ['-2 ^ 2', -4],
    ['(-2) ^ 2', 4],
    ['2 ^ -1', 0.5],
    ['-3 * -3', 9],
    ['+5 - +2', 3],
    ['--4', 4],
    ['1.5e3 + .5 + 5.', 1505.5],
    ['2E-3', 0.002],
    ['0.1 + 0.2', 0.3],
    ['-0 * 5', 0],
    ['sqrt(16) + abs(-3)', 7],
    ['round(2.5) + floor(1.9) + ceil(1.1)', 6],
    ['round(1.005, 2)', 1.01],
    ['round(-2.5)', -2],
    ['round(0.0000001234, 9)', 1.23e-7],
    ['round(2.675, 2)', 2.68],
    ['round(1e20 + 0.5, 3)', 1e20],
    ['round(123.456, 0)', 123],
    ['min(4, 2, 8) + max(1, 9, 3)', 11],
    ['max(7)', 7],
    ['ln(e) + log10(1000)', 4],
    ['exp(0)', 1],
    ['sin(0) + cos(0) + tan(0)', 1],
    ['sin(pi / 2)', 1],
    ['2 * pi', 6.28318530717959],
    ['PI - Pi', 0],
    ['SQRT(9)', 3],
    ['  ( ( 1 ) )  ', 1],
    ['1e308 * 1', 1e308],
    ['0 ^ 0', 1],
    ['9 ^ 9', 387420489],
  ])('%s = %s', (source, expected) => {
    expect(evaluateExpression(source)).toBe(expected);
  });

  it('never returns -0', () => {
    expect(Object.is(evaluateExpression('-0'), 0)).toBe(true);
  });
});

describe('calculator: errors name the problem and where it is', () => {
  it.each([
    ['', 'syntax_error', 1, /empty/],
    ['   ', 'syntax_error', 1, /empty/],
    ['1 +', 'syntax_error', 4, /ends where a number was expected/],
    ['* 2', 'syntax_error', 1, /unexpected '\*'/],
    ['1 2', 'syntax_error', 3, /unexpected number 2; an operator is missing/],
    ['2pi', 'syntax_error', 2, /unexpected 'pi'/],
    ['1.2.3', 'syntax_error', 4, /unexpected number \.3/],
    ['2 # 3', 'syntax_error', 3, /unexpected character "#"/],
    ['x + 1', 'unknown_identifier', 1, /unknown name 'x'; known names are pi, e, sqrt/],
    ['log(10)', 'unknown_identifier', 1, /unknown name 'log'.*log10/],
    ['1 / 0', 'division_by_zero', 3, /division by zero/],
    ['5 % (2 - 2)', 'division_by_zero', 3, /modulo by zero/],
    ['1 / (1 - 1) + 2', 'division_by_zero', 3, /division by zero/],
    ['(1 + 2', 'unbalanced_parentheses', 1, /'\(' is never closed/],
    ['1 + 2)', 'unbalanced_parentheses', 6, /'\)' has no matching '\('/],
    ['()', 'syntax_error', 2, /unexpected '\)' where a number was expected/],
    ['(((1 +', 'unbalanced_parentheses', 3, /ends where a number was expected; this '\(' is never closed/],
    ['2 * (3 + (4 - 1)', 'unbalanced_parentheses', 5, /'\(' is never closed/],
    ['sqrt(4', 'unbalanced_parentheses', 5, /never closed/],
    ['sqrt(4 5)', 'syntax_error', 8, /expected '\)' but found number 5/],
    ['sqrt 4', 'syntax_error', 1, /sqrt is a function: write sqrt\(…\)/],
    ['pi(2)', 'syntax_error', 1, /pi is a constant/],
    ['sqrt(1, 2)', 'syntax_error', 1, /sqrt takes 1 argument, got 2/],
    ['round(1, 2, 3)', 'syntax_error', 1, /round takes 1 to 2 arguments, got 3/],
    ['min()', 'syntax_error', 5, /unexpected '\)' where a number was expected/],
    ['max(1,)', 'syntax_error', 7, /unexpected '\)'/],
    ['round(1.5, 0.5)', 'math_error', 1, /digits from 0 to 15/],
    ['sqrt(-1)', 'math_error', 1, /not a real number/],
    ['ln(0)', 'math_error', 1, /only defined for positive numbers/],
    ['log10(-5)', 'math_error', 1, /positive/],
    ['(-8) ^ (1/3)', 'math_error', 6, /the power is not a real number/],
    ['1e999', 'overflow', 1, /the number 1e999 is too large/],
    ['1e308 * 10', 'overflow', 7, /the product is too large/],
    ['exp(1000)', 'overflow', 1, /too large/],
  ])('%j → %s at %i', (source, reason, position, message) => {
    const error = failure(source);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.reason).toBe(reason);
    expect(error.position).toBe(position);
    expect(error.message).toMatch(message);
    expect(error.message).toContain(`(at position ${position})`);
  });
});

describe('calculator: adversarial input', () => {
  it.each([
    ['constructor', 'unknown_identifier'],
    ['__proto__', 'unknown_identifier'],
    ['toString()', 'unknown_identifier'],
    ['hasOwnProperty(1)', 'unknown_identifier'],
    ['valueOf', 'unknown_identifier'],
    ['process.exit()', 'unknown_identifier'],
    ['require("fs")', 'unknown_identifier'],
    ['globalThis', 'unknown_identifier'],
    ['this', 'unknown_identifier'],
    ['eval("1")', 'unknown_identifier'],
    ['Function("return 1")()', 'unknown_identifier'],
    ['sqrt.constructor', 'syntax_error'],
    ['1; 2', 'syntax_error'],
    ['`1`', 'syntax_error'],
    ['[1]', 'syntax_error'],
    ['{}', 'syntax_error'],
    ['1 == 1', 'syntax_error'],
    ['Infinity', 'unknown_identifier'],
    ['NaN', 'unknown_identifier'],
    ['0x10', 'syntax_error'],
    ['1/0', 'division_by_zero'],
    ['((((', 'unbalanced_parentheses'],
    ['))))', 'unbalanced_parentheses'],
    ['9^9^9', 'overflow'],
    ['2^1024', 'overflow'],
    ['10^309', 'overflow'],
    ['1٢', 'syntax_error'],
    ['１+1', 'syntax_error'],
    ['1 \u0000 1', 'syntax_error'],
  ])('%j is refused (%s)', (source, reason) => {
    expect(failure(source).reason).toBe(reason);
  });

  it('nothing leaks from objects: a name that is an Object.prototype member is unknown', () => {
    for (const name of Object.getOwnPropertyNames(Object.prototype)) {
      expect(failure(`${name}(1)`).reason).toBe('unknown_identifier');
    }
  });

  it(`refuses expressions longer than ${MAX_EXPRESSION_LENGTH} characters`, () => {
    const long = Array.from({ length: 200 }, () => '1').join('+'); // 399 chars: fine
    expect(evaluateExpression(long)).toBe(200);
    const tooLong = '1'.padEnd(MAX_EXPRESSION_LENGTH + 1, ' ');
    const error = failure(tooLong);
    expect(error.reason).toBe('expression_too_long');
    expect(error.message).toMatch(/501 characters long; the limit is 500/);
  });

  it(`refuses nesting deeper than ${MAX_NESTING_DEPTH} levels, and accepts it up to there`, () => {
    const nested = (n: number) => `${'('.repeat(n)}1${')'.repeat(n)}`;
    expect(evaluateExpression(nested(MAX_NESTING_DEPTH - 1))).toBe(1);
    expect(failure(nested(MAX_NESTING_DEPTH)).reason).toBe('expression_too_deep');
    expect(failure(nested(240)).reason).toBe('expression_too_deep');
    expect(failure('-'.repeat(150) + '1').reason).toBe('expression_too_deep');
    expect(failure(Array.from({ length: 150 }, () => '1').join('^')).reason).toBe('expression_too_deep');
    expect(failure('ln('.repeat(101) + '2' + ')'.repeat(101)).reason).toBe('expression_too_deep');
  });

  it('a long flat chain is not nesting', () => {
    expect(evaluateExpression(Array.from({ length: 240 }, () => '1').join('*'))).toBe(1);
  });
});

describe('calculator tool', () => {
  it('answers { expression, result }', () => {
    expect(calculatorTool.execute({ expression: '(3 + 4) * 2^3 / sqrt(16)' }, ctx)).toEqual({
      expression: '(3 + 4) * 2^3 / sqrt(16)',
      result: 14,
    });
  });

  it('refuses a non-string expression as invalid arguments', () => {
    expect(() => calculatorTool.execute({ expression: 42 }, ctx)).toThrow(/expression must be a string/);
  });

  it('is described with an object schema', () => {
    expect(calculatorTool.inputSchema).toMatchObject({ type: 'object', required: ['expression'] });
  });
});
