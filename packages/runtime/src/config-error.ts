/** A missing or malformed environment variable; the message names it. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable} ${message}`);
    this.name = 'ConfigError';
    // A user's mistake, not a bug: the process dies showing this one line, not a stack trace.
    this.stack = `${this.name}: ${this.message}`;
  }
}
