import { ConfigError } from '../config-error.js';
import type { EnvValue } from './env-kinds.js';
import { EnvValueProblem, parseEnvValue } from './env-kinds.js';
import type { EnvVar } from './env-vars.js';
import { ENV_VARS, TEST_ONLY_PREFIX } from './env-vars.js';

type Env = Readonly<Record<string, string | undefined>>;

const byName = new Map(ENV_VARS.map((variable) => [variable.name, variable]));

/** The registered variable called `name`, or undefined. */
export const envVar = (name: string): EnvVar | undefined => byName.get(name);

/** Edit distance, for "did you mean" on a misspelt `KEEL_*` name. */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
};

const closest = (name: string): string | undefined => {
  let best: { name: string; score: number } | undefined;
  for (const known of byName.keys()) {
    const score = distance(name, known);
    if (score <= 3 && (best === undefined || score < best.score)) best = { name: known, score };
  }
  return best?.name;
};

/**
 * Checks the whole environment against `ENV_VARS`: every registered variable that is set must be
 * well formed, and a `KEEL_*` name that is not registered (a typo) is refused. Throws a
 * `ConfigError` naming the variable; secrets and URLs are never echoed in the message.
 */
export const checkEnv = (env: Env): void => {
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const variable = byName.get(name);
    if (variable === undefined) {
      if (name.startsWith('KEEL_') && !name.startsWith(TEST_ONLY_PREFIX)) {
        const guess = closest(name);
        throw new ConfigError(
          name,
          `is not a Keel setting${guess ? ` (did you mean ${guess}?)` : ''}; the known ones are in .env.example`,
        );
      }
      continue;
    }
    const raw = value.trim();
    if (raw === '') continue;
    parse(variable, raw);
  }
};

/** A registered variable's value, parsed: the environment's, else its default, else undefined. */
export const readEnv = (name: string, env: Env = process.env): EnvValue | undefined => {
  const variable = byName.get(name);
  if (variable === undefined) throw new ConfigError(name, 'is not registered in ENV_VARS');
  const raw = env[name]?.trim() || variable.default;
  if (raw === undefined) return undefined;
  return parse(variable, raw);
};

/** Parses one value; a problem becomes a ConfigError naming the variable (a secret's value unshown). */
const parse = (variable: EnvVar, raw: string): EnvValue => {
  try {
    return parseEnvValue(variable.kind, raw);
  } catch (error) {
    if (!(error instanceof EnvValueProblem)) throw error;
    const message = variable.secret ? error.message.replace(/, got ".*"$/s, '') : error.message;
    throw new ConfigError(variable.name, message);
  }
};
