// An agent body's model options (API.md "Models, defaults and agent options"), checked for shape
// and types here; the agent checks their meaning (which provider takes which option, fallbacks).
import {
  fail,
  objectWith,
  optionalIntegerIn,
  optionalJsonObject,
  optionalNumberIn,
  optionalObject,
  optionalString,
  requiredString,
  optionalStrings,
  optionalWord,
} from '../config/request-fields.js';

/** The agent body's fields this module reads. */
export const AGENT_OPTION_FIELDS = [
  'providerOptions',
  'fallbackModels',
  'promptCache',
  'autoTitle',
  'context',
  'intents',
  'contextSchema',
  'timeZone',
  'agents',
  'maxDepth',
] as const;

/** An optional boolean field; another type is refused naming it. */
const optionalBoolean = (value: unknown, field: string): boolean | undefined => {
  if (value !== undefined && typeof value !== 'boolean') fail(field, `${field} must be a boolean`);
  return value as boolean | undefined;
};

/** Drops the undefined fields of an object, so absent stays absent in JSON. */
const defined = (object: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));

const providerOptionsOf = (value: unknown): Record<string, unknown> | undefined => {
  const object = optionalObject(value, 'providerOptions');
  if (object === undefined) return undefined;
  const fields = ['maxOutputTokens', 'reasoningEffort', 'thinkingBudgetTokens', 'topP'];
  objectWith(object, fields, 'providerOptions');
  return defined({
    maxOutputTokens: optionalIntegerIn(
      object.maxOutputTokens,
      'providerOptions.maxOutputTokens',
      1,
      1_000_000,
    ),
    reasoningEffort: optionalWord(object.reasoningEffort, 'providerOptions.reasoningEffort', [
      'low',
      'medium',
      'high',
    ]),
    thinkingBudgetTokens: optionalIntegerIn(
      object.thinkingBudgetTokens,
      'providerOptions.thinkingBudgetTokens',
      1024,
      1_000_000,
    ),
    topP: optionalNumberIn(object.topP, 'providerOptions.topP', 0, 1),
  });
};

const contextOf = (value: unknown): Record<string, unknown> | undefined => {
  const object = optionalObject(value, 'context');
  if (object === undefined) return undefined;
  objectWith(object, ['maxContextTokens', 'keepToolResults', 'heavyResultChars'], 'context');
  return defined({
    maxContextTokens: optionalIntegerIn(
      object.maxContextTokens,
      'context.maxContextTokens',
      1_000,
      10_000_000,
    ),
    keepToolResults: optionalIntegerIn(object.keepToolResults, 'context.keepToolResults', 0, 10_000),
    heavyResultChars: optionalIntegerIn(object.heavyResultChars, 'context.heavyResultChars', 100, 10_000_000),
  });
};

const intentsOf = (value: unknown): unknown[] | undefined => {
  if (value === undefined) return undefined;
  if (!Array.isArray(value))
    return fail('intents', 'intents must be a list of { name, keywords, tools?, guidance? }');
  if (value.length > 20) return fail('intents', 'intents lists at most 20 intents');
  return value.map((item: unknown, i) => {
    const field = `intents[${i}]`;
    const object = objectWith(item, ['name', 'keywords', 'tools', 'guidance'], field);
    const keywords = optionalStrings(object.keywords, `${field}.keywords`, 50, 64);
    if (!keywords || keywords.length === 0)
      fail(`${field}.keywords`, `${field}.keywords must list at least one word`);
    return defined({
      name: requiredString(object.name, `${field}.name`, 64),
      keywords,
      tools: optionalStrings(object.tools, `${field}.tools`, 128, 64),
      guidance: optionalString(object.guidance, `${field}.guidance`, 2000),
    });
  });
};

/** The options of an agent body as PutAgent's `optionsJson`; empty when it sets none. */
export const agentOptionsJson = (body: Record<string, unknown>): string => {
  const { promptCache } = body;
  if (promptCache !== undefined && typeof promptCache !== 'boolean')
    fail('promptCache', 'promptCache must be a boolean');
  const options = defined({
    providerOptions: providerOptionsOf(body.providerOptions),
    fallbackModels: optionalStrings(body.fallbackModels, 'fallbackModels', 5, 200),
    promptCache,
    autoTitle: optionalBoolean(body.autoTitle, 'autoTitle'),
    context: contextOf(body.context),
    intents: intentsOf(body.intents),
    // The per-message context's schema (the agent compiles it) and `{{now}}`'s zone (the agent checks it).
    contextSchema: optionalJsonObject(body.contextSchema, 'contextSchema', 64 * 1024),
    timeZone: optionalString(body.timeZone, 'timeZone', 64),
    // Sub-agents (API.md "Tool sources and policies"): the agent checks they exist and close no cycle.
    agents: optionalStrings(body.agents, 'agents', 20, 64),
    maxDepth: optionalIntegerIn(body.maxDepth, 'maxDepth', 1, 5),
  });
  return Object.keys(options).length === 0 ? '' : JSON.stringify(options);
};
