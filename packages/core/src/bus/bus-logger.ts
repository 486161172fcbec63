/** The logging a bus needs; a pino logger satisfies it. */
export interface BusLogger {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** Default logger: one JSON line per entry on stderr, so problems are never silent. */
export const stderrBusLogger: BusLogger = {
  warn: (fields, message) => writeLine('warn', fields, message),
  error: (fields, message) => writeLine('error', fields, message),
};

const writeLine = (level: string, fields: object, message: string): void => {
  const line = JSON.stringify(
    { level, time: new Date().toISOString(), ...fields, msg: message },
    (_key, value: unknown) =>
      value instanceof Error ? { type: value.name, message: value.message, stack: value.stack } : value,
  );
  process.stderr.write(`${line}\n`);
};
