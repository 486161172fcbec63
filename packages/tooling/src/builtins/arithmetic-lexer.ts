import { BuiltinToolError } from './builtin-tool.js';

/** The operators and punctuation of calculator expressions (`**` is read as `^`). */
export type Operator = '+' | '-' | '*' | '/' | '%' | '^' | '(' | ')' | ',';

/** One token; `position` is 1-based, as error messages show it. */
export type Token =
  | { kind: 'number'; value: number; text: string; position: number }
  | { kind: 'name'; name: string; position: number }
  | { kind: 'operator'; operator: Operator; position: number }
  | { kind: 'end'; position: number };

/** A calculator error with the 1-based position of the character it points at. */
export class ArithmeticError extends BuiltinToolError {
  constructor(
    reason: string,
    message: string,
    readonly position: number,
  ) {
    super(reason, `${message} (at position ${position})`, { field: 'expression', details: { position } });
  }
}

const NUMBER = /(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const WHITESPACE = /\s+/y;
const OPERATORS = new Set<string>(['+', '-', '*', '/', '%', '^', '(', ')', ',']);

/** Reads tokens on demand, so an error names the first problem from the left. */
export class Lexer {
  readonly #source: string;
  #index = 0;
  #peeked: Token | undefined;

  constructor(source: string) {
    this.#source = source;
  }

  peek(): Token {
    this.#peeked ??= this.#read();
    return this.#peeked;
  }

  next(): Token {
    const token = this.peek();
    this.#peeked = undefined;
    return token;
  }

  #read(): Token {
    WHITESPACE.lastIndex = this.#index;
    if (WHITESPACE.test(this.#source)) this.#index = WHITESPACE.lastIndex;
    const start = this.#index;
    const position = start + 1;
    if (start >= this.#source.length) return { kind: 'end', position };
    const char = this.#source[start] ?? '';

    NUMBER.lastIndex = start;
    const number = NUMBER.exec(this.#source);
    if (number) {
      const text = number[0];
      this.#index = start + text.length;
      const value = Number(text);
      if (!Number.isFinite(value)) {
        throw new ArithmeticError('overflow', `the number ${text} is too large`, position);
      }
      return { kind: 'number', value, text, position };
    }

    NAME.lastIndex = start;
    const name = NAME.exec(this.#source);
    if (name) {
      this.#index = start + name[0].length;
      return { kind: 'name', name: name[0], position };
    }

    if (this.#source.startsWith('**', start)) {
      this.#index = start + 2;
      return { kind: 'operator', operator: '^', position };
    }
    if (OPERATORS.has(char)) {
      this.#index = start + 1;
      return { kind: 'operator', operator: char as Operator, position };
    }
    const shown = String.fromCodePoint(this.#source.codePointAt(start) ?? 0);
    throw new ArithmeticError('syntax_error', `unexpected character ${JSON.stringify(shown)}`, position);
  }
}

/** How a token reads in an error message. */
export const describeToken = (token: Token): string => {
  switch (token.kind) {
    case 'number':
      return `number ${token.text}`;
    case 'name':
      return `'${token.name}'`;
    case 'operator':
      return `'${token.operator}'`;
    case 'end':
      return 'the end of the expression';
  }
};
