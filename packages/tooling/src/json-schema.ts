/** A JSON Schema document, as tools declare their inputs. */
export type JsonSchema = Readonly<Record<string, unknown>>;
