/**
 * The one logging port of the code base: what core, services' domain-facing classes and the gRPC
 * edges log through, so they stay free of a logging library (a pino logger satisfies it). A part
 * that needs less takes a `Pick` of it.
 */
export interface LogPort {
  info(fields: object, message?: string): void;
  warn(fields: object, message?: string): void;
  error(fields: object, message?: string): void;
}

/** The default where none is given: one JSON line per entry on stderr, so problems are never silent. */
export const stderrLog: LogPort = {
  info: (fields, message) => writeLine('info', fields, message),
  warn: (fields, message) => writeLine('warn', fields, message),
  error: (fields, message) => writeLine('error', fields, message),
};

const writeLine = (level: string, fields: object, message: string | undefined): void => {
  const line = JSON.stringify(
    { level, time: new Date().toISOString(), ...fields, ...(message ? { msg: message } : {}) },
    (_key, value: unknown) =>
      value instanceof Error ? { type: value.name, message: value.message, stack: value.stack } : value,
  );
  process.stderr.write(`${line}\n`);
};
