import { ArithmeticError } from './arithmetic-lexer.js';

/** A function the calculator knows: its arity and how it computes (throwing on a domain error). */
export interface MathFunction {
  minArgs: number;
  maxArgs: number;
  apply: (args: number[], position: number) => number;
}

const unary = (fn: (x: number, position: number) => number): MathFunction => ({
  minArgs: 1,
  maxArgs: 1,
  apply: ([x = NaN], position) => fn(x, position),
});

const requirePositive = (name: string, fn: (x: number) => number) =>
  unary((x, position) => {
    if (x <= 0)
      throw new ArithmeticError('math_error', `${name} is only defined for positive numbers`, position);
    return fn(x);
  });

/** The functions, by lower-case name. Maps, not object literals: `constructor`, `__proto__` and friends are never found. */
export const FUNCTIONS: ReadonlyMap<string, MathFunction> = new Map<string, MathFunction>([
  [
    'sqrt',
    unary((x, position) => {
      if (x < 0)
        throw new ArithmeticError('math_error', 'sqrt of a negative number is not a real number', position);
      return Math.sqrt(x);
    }),
  ],
  ['abs', unary(Math.abs)],
  [
    'round',
    {
      minArgs: 1,
      maxArgs: 2,
      apply: ([x = NaN, digits = 0], position) => {
        if (!Number.isInteger(digits) || digits < 0 || digits > 15) {
          throw new ArithmeticError('math_error', 'round(x, digits) takes digits from 0 to 15', position);
        }
        // Past 2^53 every double is an integer already.
        if (Math.abs(x) >= 2 ** 53) return x;
        // Shifting the decimal exponent, not multiplying: 1.005 * 100 is 100.49999…
        return shiftDecimal(Math.round(shiftDecimal(x, digits)), -digits);
      },
    },
  ],
  ['floor', unary(Math.floor)],
  ['ceil', unary(Math.ceil)],
  ['min', { minArgs: 1, maxArgs: Infinity, apply: (args) => Math.min(...args) }],
  ['max', { minArgs: 1, maxArgs: Infinity, apply: (args) => Math.max(...args) }],
  ['ln', requirePositive('ln', Math.log)],
  ['log10', requirePositive('log10', Math.log10)],
  ['exp', unary(Math.exp)],
  ['sin', unary(Math.sin)],
  ['cos', unary(Math.cos)],
  ['tan', unary(Math.tan)],
]);

/** The named constants. */
export const CONSTANTS: ReadonlyMap<string, number> = new Map([
  ['pi', Math.PI],
  ['e', Math.E],
]);

/** `value · 10^places`, computed on the decimal text so no binary rounding creeps in. */
const shiftDecimal = (value: number, places: number): number => {
  const [mantissa, exponent = '0'] = value.toExponential().split('e');
  return Number(`${mantissa}e${Number(exponent) + places}`);
};
