/** Nest token of the operator key (`KEEL_OPERATOR_KEY`), or undefined when none is configured. */
export const OPERATOR_KEY = Symbol.for('keel.gateway.operator-key');

/** Reads the operator key from the environment; blank means none (operator routes then answer 401). */
export const operatorKeyFromEnv = (env: NodeJS.ProcessEnv = process.env): string | undefined => {
  const key = env.KEEL_OPERATOR_KEY?.trim();
  return key ? key : undefined;
};
